"""The peak since the previous read is the true peak of the window, and the user's
own peak counters read exactly as without the agent (issue 23, item 4).

torch.cuda's real Python API runs over CUDA allocator semantics on CPU tensors
(tests/agent/fake_cuda.py); the agent reads it through ``TorchCudaProvider``
as on a GPU, resetting the counters at each of its full reads.
"""

from __future__ import annotations

import pytest
import warnings

import torch

from vramscope.agent.protocol import PEAK_BOUND
from vramscope.agent.allocator.stats_cuda import TorchCudaProvider

from tests.agent.fake_cuda import CountingLive, fake_cuda, user_view
from tests.agent.tensors.test_instant_buckets import mlp_bn
from tests.agent.allocator.test_peak_windows import watched_reads

DEVICE = "cuda:0"


def train(live, agent=None, steps=60, reset_at=30, views=None):
    """A deterministic loop; the user reads the peaks after each step and resets them once."""
    views = [] if views is None else views
    with live:
        model = mlp_bn(256)
        opt = torch.optim.AdamW(model.parameters())
        if agent is not None:
            agent.watch(model=model, optimizer=opt)
            agent.start()
            assert agent.wait_started(5)
        for i in range(steps):
            opt.zero_grad()
            loss = model(torch.randn(64, 64)).square().mean()
            if agent is not None and i % 3 == 0:
                agent.sample_once()  # mid-step: activations held
            loss.backward()
            opt.step()
            del loss
            if agent is not None and i % 5 == 4:
                agent.sample_once()
            views.append(user_view())
            if i == reset_at:
                torch.cuda.reset_peak_memory_stats()  # the user's own per-phase measurement
                views.append(user_view())
            if i == reset_at + 10:
                with warnings.catch_warnings():  # (its FutureWarning: it resets all peaks)
                    warnings.simplefilter("ignore", FutureWarning)
                    torch.cuda.reset_max_memory_allocated()  # the older name of the same reset
                views.append(user_view())
        if agent is not None:
            agent.stop()
    views.append(user_view())  # after the agent stopped
    return views


@pytest.mark.slow
def test_every_window_peak_is_the_true_peak(monkeypatch, make_agent):
    live = CountingLive()
    fake_cuda(monkeypatch, live)
    agent = make_agent(TorchCudaProvider(), interval=3600.0)  # the test takes the samples
    reads = watched_reads(agent, live, DEVICE)  # (each reset, the agent's or the user's, closes a stretch)
    agent.reader.min_gap = 0.0  # a full read at every full step as well
    train(live, agent)
    samples = [(truth, f) for c, truth, f in reads if c == "sample" and f is not None]
    steps = [(truth, f) for c, truth, f in reads if c == "step" and f is not None]
    # (quiet steps take no full read; how many steps are full depends on the load)
    assert len(samples) >= 15 and len(steps) >= 5
    for truth, fields in samples + steps:
        assert fields[PEAK_BOUND] is None  # exact, said so
        assert fields["peak_allocated"] == truth
    # windows whose true peak is below the all-time high: the all-time counter would be wrong there
    assert sum(truth < live.high for truth, _f in samples) >= 3


@pytest.mark.slow
def test_the_user_reads_the_same_peaks_with_and_without_the_agent(monkeypatch, make_agent):
    live = CountingLive()
    fake_cuda(monkeypatch, live)
    without = train(live)
    live = CountingLive()
    fake_cuda(monkeypatch, live)
    agent = make_agent(TorchCudaProvider(), interval=3600.0)
    agent.reader.min_gap = 0.0
    with_agent = train(live, agent)
    assert agent.reader.exact and agent.reader.reads >= 30  # it did reset the counters, often
    assert with_agent == without
    # the user's resets did lower what they read (the test can fail)
    assert min(v[0] for v in without[31:]) < max(v[0] for v in without[:31])


def test_a_users_reset_mid_window_keeps_the_agents_window(monkeypatch, make_agent):
    """The user resets between two agent reads: the agent's window still holds the
    peak from before the reset; the user's view restarts."""
    live = CountingLive()
    fake_cuda(monkeypatch, live)
    agent = make_agent(TorchCudaProvider(), interval=3600.0)
    with live:
        agent.reader.read("sample")
        big = torch.zeros(1 << 20)  # 4 MiB, then freed: the window's peak
        del big
        torch.cuda.reset_peak_memory_stats()
        small = torch.zeros(1 << 10)
        user = torch.cuda.max_memory_allocated()
        fields = agent.reader.read("sample")[DEVICE]
        del small
    assert fields["peak_allocated"] >= 4 << 20 and fields[PEAK_BOUND] is None
    assert user < 4 << 20  # the user's counter restarted at their reset
    assert torch.cuda.max_memory_allocated() == user  # and the agent's read did not change it

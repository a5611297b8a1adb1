"""The peak since the previous sample against the true peak of its window.

Under CUDA allocator semantics on CPU tensors (tests/agent/live_bytes.py) the
provider below also keeps the true highest "allocated" of every stretch between
two allocator reads. Each read the agent makes for a consumer (sample, step)
is compared with the true peak since that consumer's previous read: where the
agent calls its figure exact it equals the truth; otherwise the truth lies
between its figure and its upper bound. The user's own peak counter is never
reset by the agent.
"""

from __future__ import annotations

import pytest
import torch

from vramscope.agent.protocol import PEAK_BOUND
from vramscope.sources.demo.allocator_replay import memory_stats_dict

from tests.agent.live_bytes import LiveBytes, LiveBytesProvider
from tests.agent.tensors.test_instant_buckets import mlp_bn


class WindowedLive(LiveBytes):
    """LiveBytes that also knows the highest allocated since the last ``cut``."""

    def __init__(self):
        super().__init__()
        self.since = 0

    def track(self, t) -> None:
        super().track(t)
        self.since = max(self.since, self.allocated)

    def cut(self) -> int:
        top, self.since = self.since, self.allocated
        return top


class TruthProvider(LiveBytesProvider):
    def __init__(self):
        super().__init__(WindowedLive())
        self.stretches: list[int] = []  # the true peak of each stretch between two reads

    def memory_stats(self, index: int) -> dict:
        self.stretches.append(self.live.cut())
        allocated = self.live.allocated
        return memory_stats_dict(allocated, max(allocated, self.live.peak), peak=self.live.peak)


def watched_reads(agent, source, device: str = "cpu") -> list[tuple[str, int, dict]]:
    """Wrap the reader: [(consumer, true peak since its previous read, its fields on
    ``device``)]; ``source.stretches``: the true peak of each stretch the reads closed."""
    reader = agent.reader
    inner = reader._read_locked
    since: dict[str, int] = {}
    out = []

    def read(consumer):
        n = len(source.stretches)
        devices = inner(consumer)
        new = source.stretches[n:]
        for c in reader._consumers:  # every read cuts a stretch of every consumer's window
            since[c] = max([since.get(c, 0)] + new)
        out.append((consumer, since.pop(consumer), devices.get(device)))
        return devices

    reader._read_locked = read
    return out


@pytest.mark.slow
def test_peak_per_window_is_the_true_peak_or_says_it_is_a_bound(make_agent):
    provider = TruthProvider()
    live = provider.live
    with live:
        model = mlp_bn(256)
        opt = torch.optim.AdamW(model.parameters())
        agent = make_agent(provider, interval=3600.0)  # no agent-thread samples: the test takes them
        agent.watch(model=model, optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        reads = watched_reads(agent, provider)
        agent.reader.min_gap = 0.0  # a full read at every full step as well
        agent.phases.budget = 1.0  # every step a full one (the CPU budget's thinning is not
        # what this checks: under load it left 7 of 60)
        peak_before = None
        for i in range(60):
            opt.zero_grad()
            loss = model(torch.randn(64, 64)).square().mean()
            if i % 3 == 0:
                agent.sample_once()  # mid-step: activations held
            loss.backward()
            opt.step()
            del loss
            if i % 5 == 4:
                agent.sample_once()
            if i == 30:
                peak_before = live.peak
                live.peak = live.allocated  # the user resets the peak counter (as reset_peak_memory_stats)
        agent.stop()
    assert live.peak <= peak_before  # the agent never reset the counter itself: only the user did
    samples = [(truth, f) for c, truth, f in reads if c == "sample" and f is not None]
    steps = [(truth, f) for c, truth, f in reads if c == "step" and f is not None]
    assert len(samples) >= 15 and len(steps) >= 10
    exact = 0
    for truth, fields in samples + steps:
        peak, bound = fields["peak_allocated"], fields[PEAK_BOUND]
        if bound is None:
            assert peak == truth, (peak, truth)
            exact += 1
        else:
            assert peak <= truth <= bound, (peak, truth, bound)
    assert exact >= 1  # the first windows and the one after the user's reset are exact


def test_the_hooks_readings_raise_the_lower_bound_toward_the_true_peak(make_agent):
    """The forward / backward / optimizer readings at the hooks land in the peak windows:
    in steady training (the counter no longer rises) the sample's figure is at least
    the highest of them, never above the truth."""
    provider = TruthProvider()
    with provider.live:
        model = mlp_bn(256)
        opt = torch.optim.AdamW(model.parameters())
        agent = make_agent(provider, interval=3600.0)
        agent.watch(model=model, optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        reads = watched_reads(agent, provider)
        for _ in range(5):  # warm-up: the counter reaches its steady high
            opt.zero_grad()
            model(torch.randn(64, 64)).square().mean().backward()
            opt.step()
        agent.sample_once()
        point = 0
        for _ in range(3):
            opt.zero_grad()
            out = model(torch.randn(64, 64))
            point = max(point, provider.live.allocated)  # what the forward hook read
            out.square().mean().backward()
            del out
            opt.step()
        agent.sample_once()
        agent.stop()
    truth, fields = [(t, f) for c, t, f in reads if c == "sample"][-1]
    assert fields[PEAK_BOUND] is not None  # steady training: a lower bound, said so
    assert point <= fields["peak_allocated"] <= truth <= fields[PEAK_BOUND]

"""The peak per window on the real CUDA allocator, and the user's own peak counters
untouched (run where a GPU is lent; skipped without CUDA).

The agent resets the allocator's peak counters at each full read and keeps the
user's view (agent/allocator/user_peaks.py). On a GPU: a transient allocation inside a
window is that window's peak, exactly, and not the next window's; and
``torch.cuda.max_memory_allocated`` (and ``memory_stats``' peaks) read the same
sequence in a deterministic loop with and without the agent, across the user's
own ``reset_peak_memory_stats``.

    PYTHONPATH=app python3 -m pytest -q -p no:cacheprovider tests/gpu/test_agent_peaks.py
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA torch and a GPU"),
    pytest.mark.timeout(300),
]

MiB = 1 << 20


def _cuda0(item) -> dict:
    return {d["device"]: d for d in item["devices"]}["cuda:0"]


def test_a_transient_is_its_windows_peak_exactly_and_not_the_next_ones(agent):
    keep = torch.zeros(64 * MiB, dtype=torch.uint8, device="cuda")
    agent.start()
    assert agent.wait_started(10)
    agent.sample_once()  # the window before: closed
    base = torch.cuda.memory_allocated(0)
    t = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
    del t
    torch.cuda.synchronize()
    first = _cuda0(agent.sample_once())
    second = _cuda0(agent.sample_once())
    assert first["peak_allocated_bound"] is None and second["peak_allocated_bound"] is None  # exact
    assert first["peak_allocated"] >= base + 256 * MiB
    assert second["peak_allocated"] < base + 256 * MiB  # the transient was the previous window's
    assert second["peak_allocated"] >= second["allocated"]
    # the user's all-time counter still has the transient (the agent's resets are not theirs)
    assert torch.cuda.max_memory_allocated(0) >= base + 256 * MiB
    assert torch.cuda.memory_stats(0)["allocated_bytes.all.peak"] == torch.cuda.max_memory_allocated(0)
    del keep


def _loop(agent=None) -> list:
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(
        dev
    )
    opt = torch.optim.AdamW(model.parameters())
    if agent is not None:
        agent.reader.min_gap = 0.0  # a full read (a reset) at every step
        agent.watch(model=model, optimizer=opt)
    torch.cuda.reset_peak_memory_stats(0)
    views = []
    for i in range(12):
        opt.zero_grad()
        model(torch.randn(512, 1024, device=dev)).square().mean().backward()
        if agent is not None and i % 2:
            agent.sample_once()
        opt.step()
        torch.cuda.synchronize()
        views.append(
            (
                torch.cuda.max_memory_allocated(0),
                torch.cuda.memory_stats(0)["allocated_bytes.all.peak"],
                torch.cuda.memory_stats_as_nested_dict(0)["allocated_bytes"]["all"]["peak"],
            )
        )
        if i == 6:
            torch.cuda.reset_peak_memory_stats(0)
            views.append(torch.cuda.max_memory_allocated(0))
    del model, opt
    torch.cuda.synchronize()
    return views


def test_the_users_peak_counters_read_the_same_with_and_without_the_agent(agent):
    without = _loop()
    agent.start()
    assert agent.wait_started(10)
    with_agent = _loop(agent)
    assert agent.reader.exact and agent.reader.reads >= 12  # the agent did reset, every step
    assert with_agent == without

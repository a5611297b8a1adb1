"""The allocator's picture on REAL CUDA (skipped without a CUDA torch and a GPU):
the summary of torch.cuda.memory_snapshot() against torch.cuda.memory_stats(),
fragmentation provoked on purpose, a CUDA graph's private pool, the cost of one
snapshot. Run on the device machine: PYTHONPATH=app python3 -m pytest -q tests/gpu"""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

from vramscope.agent.allocator.segments import by_device, summarize  # noqa: E402
from vramscope.agent.allocator.stats_cuda import TorchCudaProvider  # noqa: E402

MiB = 1 << 20


def _summary():
    torch.cuda.synchronize()
    segs = by_device(TorchCudaProvider(torch).segments()).get(0, [])
    return summarize(segs, "cuda:0", expandable=False)


def test_summary_equals_the_allocators_own_counters():
    keep = [torch.empty(int(s * MiB), dtype=torch.uint8, device="cuda") for s in (3, 50, 7, 120)]
    s = _summary()
    stats = torch.cuda.memory_stats(0)
    assert s["reserved"] == stats["reserved_bytes.all.current"]
    assert s["allocated"] == stats["allocated_bytes.all.current"]
    assert s["free_split"] + s["free_segments"] + s["awaiting_free"] == s["reserved"] - s["allocated"]
    del keep


def test_freeing_every_other_block_shows_as_fragmentation_and_empty_cache_keeps_it():
    torch.cuda.empty_cache()
    blocks = [torch.empty(24 * MiB, dtype=torch.uint8, device="cuda") for _ in range(40)]
    big = torch.empty(1, device="cuda")
    del blocks[::2]
    torch.cuda.empty_cache()
    s = _summary()
    assert s["free_split"] >= 10 * 24 * MiB  # the holes stay: empty_cache() cannot return them
    assert s["largest_free_block"] < 200 * MiB
    assert s["expandable_recovers"] is not None and s["expandable_recovers"] <= s["free_split"]
    del blocks, big


def test_a_cuda_graph_private_pool_is_its_own_bucket():
    x = torch.ones(1 << 20, device="cuda")
    g = torch.cuda.CUDAGraph()
    s_ = torch.cuda.Stream()
    s_.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s_):
        y = x * 2
    torch.cuda.current_stream().wait_stream(s_)
    with torch.cuda.graph(g):
        y = x * 2
    s = _summary()
    assert s["private_pools"] is not None and s["private_pools"]["reserved"] > 0
    del g, y


def test_one_snapshot_and_its_summary_are_cheap():
    keep = [torch.empty(2 * MiB, dtype=torch.uint8, device="cuda") for _ in range(500)]
    provider = TorchCudaProvider(torch)
    t0 = time.perf_counter()
    segs = provider.segments()
    took = time.perf_counter() - t0
    t1 = time.perf_counter()
    summarize(segs)
    print(
        f"memory_snapshot(include_traces=False) {took * 1000:.2f} ms, summary "
        f"{(time.perf_counter() - t1) * 1000:.2f} ms, {len(segs)} segments"
    )
    assert took < 0.05
    del keep


def _agent(tmp_path):
    from vramscope.agent.core import Agent

    return Agent(interval=0.05, runtime_dir=str(tmp_path), discover=False, final_dump=False)


def test_sites_recorded_for_n_steps_name_this_file_then_history_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv("VRAMSCOPE_SNAPSHOT_DIR", str(tmp_path))
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
    ).cuda()
    opt = torch.optim.Adam(model.parameters())
    agent = _agent(tmp_path)
    agent.watch(model=model, optimizer=opt)
    agent.start()
    try:
        x = torch.randn(256, 1024, device="cuda")
        for _ in range(3):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
        time.sleep(0.3)
        assert agent.sites.request(2)["ok"]
        for _ in range(6):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
            time.sleep(0.1)
        deadline = time.time() + 10
        while agent.sites.state == "recording" and time.time() < deadline:
            time.sleep(0.1)
        assert agent.sites.state == "done", agent.sites.why
        result = agent.sites.result
        top = result["devices"]["cuda:0"]["sites"]
        assert any("test_allocator_cuda.py" in (s["site"] or "") for s in top), top
        assert not torch._C._cuda_isHistoryEnabled()
        print("sites overhead", result.get("overhead"), result.get("us_per_alloc"))
    finally:
        agent.stop()


def test_a_real_oom_gets_a_post_mortem_with_the_allocators_picture(tmp_path):
    agent = _agent(tmp_path)
    agent.start()
    keep = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda")
    try:
        with pytest.raises(torch.cuda.OutOfMemoryError):
            torch.empty(1 << 50, dtype=torch.uint8, device="cuda")
        assert agent.oom_observer_attached
        [report] = agent.oom_reports
        assert report["requested"] >= 1 << 50 and report["device_free"] is not None
        assert report["largest_free_block"] is not None and report["split"] is not None
        assert sum(v for v in report["split"].values() if v is not None) == report["shortfall"]
    finally:
        agent.stop()
        del keep

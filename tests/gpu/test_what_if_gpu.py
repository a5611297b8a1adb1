"""The what-if on real CUDA, without per-module figures (for a session lent a GPU):
the agent's step peaks at one micro-batch, scaled to 2x and 4x, against
torch.cuda.max_memory_allocated() of real steps at those sizes (within 10 %: the
temporaries are scaled with the batch too). Skipped without CUDA. The CPU comparison, with
per-module activations, is tests/core/planner/test_what_if.py (bench/README.md)."""

from __future__ import annotations

import json
import time

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _step(model, opt, batch):
    x = torch.randn(batch, 1024, device="cuda")
    opt.zero_grad(set_to_none=True)
    model(x).square().mean().backward()
    opt.step()


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        *[
            torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))
            for _ in range(4)
        ]
    ).cuda()


def _real_peak(batch: int) -> int:
    model = _model()
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(2):
        _step(model, opt, batch)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    _step(model, opt, batch)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del model, opt
    torch.cuda.empty_cache()
    return peak


def test_the_step_peak_scaled_to_2x_and_4x_the_micro_batch():
    from vramscope.agent.core import Agent
    from vramscope.core.planner.measured_run import measure
    from vramscope.core.planner.what_if import Change, predict

    batch = 64
    model = _model()
    opt = torch.optim.AdamW(model.parameters())
    a = Agent(interval=0.05, discover=False, final_dump=False)
    a.watch(model=model, optimizer=opt)
    a.start()
    try:
        for _ in range(20):
            _step(model, opt, batch)
            time.sleep(0.02)
        torch.cuda.synchronize()
        time.sleep(0.3)
        a.serving.drain()
        items = [json.loads(b) for b in a.ring.all_items()]
    finally:
        a.stop()
    samples = [i for i in items if i.get("kind") == "sample"]
    steps = [i for i in items if i.get("kind") == "step"][-8:]
    dev = next(d for d in samples[-1]["devices"] if d["device"] == "cuda:0")
    m = measure(
        "cuda:0", dev["buckets"], steps=steps, input_shape=samples[-1]["input"], models=samples[-1]["models"]
    )
    assert m.batch == batch and m.peak is not None
    del model, opt
    torch.cuda.empty_cache()
    for factor in (2, 4):
        w = predict(m, Change(batch=batch * factor))
        real = _real_peak(batch * factor)
        print(f"x{factor}: predicted {w.peak:,} real {real:,} error {(w.peak - real) / real:+.2%}")
        assert abs(w.peak - real) / real <= 0.10, (factor, w.peak, real)

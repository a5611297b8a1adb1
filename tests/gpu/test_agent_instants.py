"""The agent's buckets at each instant of a real CUDA training loop (run where a GPU is lent).

The same check as tests/agent/tensors/test_instant_buckets.py, with the real
allocator instead of the replayed one: at the end of forward, in the middle
of backward (from an autograd hook on an intermediate layer, which the
engine runs on its CUDA device thread: half of the gradients are there),
after backward and after the optimizer step, a sample taken at that instant
gives weights, gradients and optimizer state within 1 % of the tensors alive
on cuda:0, and activations + temporaries equal to
torch.cuda.memory_allocated() minus them. The agent thread, sampling on its
own at its fastest interval meanwhile, never reads ``.grad``. Skipped
without CUDA.

    PYTHONPATH=app python3 -m pytest -q -p no:cacheprovider tests/gpu
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA torch and a GPU"),
    pytest.mark.timeout(300),
]


def _unique_bytes(tensors) -> int:
    from agent.live_bytes import unique_bytes  # tests/ is on sys.path (its conftest.py)

    return unique_bytes(tensors, "cuda")


def _check(agent, model, opt, instant, seen):
    params = list(model.parameters())
    want = {
        "weights": _unique_bytes(params + list(model.buffers())),
        "gradients": _unique_bytes([p.grad for p in params]),
        "optimizer_state": _unique_bytes(
            [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
        ),
    }
    item = agent.sample_once()
    allocated = torch.cuda.memory_allocated(0)
    want["other_allocated"] = allocated - sum(want.values())
    got = {d["device"]: d for d in item["devices"]}["cuda:0"]["buckets"]
    for bucket in ("weights", "gradients", "optimizer_state"):
        assert abs(got[bucket] - want[bucket]) <= 0.01 * want[bucket], (instant, bucket, got, want)
    assert got["other_allocated"] is not None, (instant, got)
    assert abs(got["other_allocated"] - want["other_allocated"]) <= max(0.01 * allocated, 1 << 20), (
        instant,
        got,
        want,
    )
    seen.append((instant, want))


@pytest.fixture
def grad_reads(monkeypatch):
    """Counts ``.grad`` reads per thread name (autograd's own writes are C++ and not counted)."""
    import collections
    import threading

    base = torch._C.TensorBase.grad
    reads = collections.Counter()

    def get(self):
        reads[threading.current_thread().name] += 1
        return base.__get__(self)

    monkeypatch.setattr(torch.Tensor, "grad", property(get, base.__set__, base.__delete__), raising=False)
    return reads


@pytest.mark.parametrize(
    "set_to_none,micro,amp", [(True, 1, False), (False, 1, False), (True, 3, False), (True, 1, True)]
)
def test_buckets_at_forward_mid_backward_backward_and_step_on_cuda(
    agent, grad_reads, set_to_none, micro, amp
):
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.BatchNorm1d(4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
    ).to(dev)
    opt = torch.optim.AdamW(model.parameters())
    agent.interval = 0.05  # the agent thread samples on its own meanwhile (it must never read .grad)
    agent.watch(model=model, optimizer=opt)
    agent.start()
    assert agent.wait_started(10)
    seen = []

    def mid(module, args, out):  # the gradient of the ReLU's output: the last Linear's are there
        out.register_hook(lambda grad: None if _check(agent, model, opt, "mid-backward", seen) else None)

    model[2].register_forward_hook(mid)
    for _ in range(3):
        opt.zero_grad(set_to_none=set_to_none)
        for _ in range(micro):
            x = torch.randn(512, 1024, device=dev)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                loss = model(x).float().square().mean()
            _check(agent, model, opt, "forward", seen)
            loss.backward()
            del loss, x
            _check(agent, model, opt, "backward", seen)
        opt.step()
        _check(agent, model, opt, "step", seen)
    forwards = [w for i, w in seen if i == "forward"]
    assert forwards[-1]["other_allocated"] > 512 * 4096 * 4  # activations held at the end of forward
    mids = [w for i, w in seen if i == "mid-backward"]
    last = sum(p.numel() * 4 for p in model[3].parameters())
    assert len(mids) == 3 * micro and mids[0]["gradients"] == last  # half-way: the last layer's only
    assert grad_reads["vramscope-agent"] == 0
    agent.serving.drain()
    steps = [i for i in agent.ring.all_items() if b'"kind":"step"' in i]
    # (the after-step reading is on the steps the agent's CPU-time budget reads: the first is)
    assert len(steps) == 3 and b'"allocated_after":null' not in steps[0]

"""A small training run's snapshot in PyTorch's format, made up: what the viewer's
screenshot and its tests open (no GPU needed to make one).

A 12-layer model whose weights were allocated before history was recorded,
then ``steps`` steps: the forward pass's activations, the backward pass
freeing them as it makes the gradients, Adam's two moments made by the first
optimizer step, the gradients freed by ``zero_grad(set_to_none=True)``; the
last step asks for a larger batch and ends in an OOM. Stacks are innermost
first, PyTorch's frames inside the user's, as ``_record_memory_history``
writes them (frame dicts shared, as the C++ snapshot shares them).
"""

from __future__ import annotations

MiB = 1 << 20
LAYERS = 12
SEGMENT = 2048 * MiB
TORCH = "/usr/lib/python3/site-packages/torch"


def _frame(filename: str, line: int, name: str) -> dict:
    return {"filename": filename, "line": line, "name": name}


def training_snapshot(steps: int = 5, oom: bool = True) -> dict:
    f = {
        "linear": _frame(f"{TORCH}/nn/modules/linear.py", 125, "forward"),
        "call": _frame(f"{TORCH}/nn/modules/module.py", 1747, "_call_impl"),
        "init": _frame("/home/ada/model.py", 31, "__init__"),
        "fwd": _frame("/home/ada/model.py", 58, "forward"),
        "attn": _frame("/home/ada/model.py", 72, "attention"),
        "step": _frame("/home/ada/train.py", 88, "train_step"),
        "backward": _frame(f"{TORCH}/autograd/graph.py", 825, "_engine_run_backward"),
        "loss": _frame("/home/ada/train.py", 91, "train_step"),
        "adam": _frame(f"{TORCH}/optim/adam.py", 410, "_single_tensor_adam"),
        "opt": _frame("/home/ada/train.py", 94, "train_step"),
        "main": _frame("/home/ada/train.py", 140, "main"),
    }
    stacks = {
        "weights": [f["init"], f["main"]],
        "act": [f["linear"], f["call"], f["fwd"], f["step"], f["main"]],
        "attn": [f["call"], f["attn"], f["fwd"], f["step"], f["main"]],
        "grad": [f["backward"], f["loss"], f["main"]],
        "adam": [f["adam"], f["opt"], f["main"]],
    }
    trace: list[dict] = []
    t = [1_700_000_000_000_000]
    next_addr = [0x7F0000000000 + SEGMENT]

    cached: dict[int, list[int]] = {}  # size -> freed addresses, reused as the caching allocator does

    def alloc(size: int, stack: str, dt: int = 400) -> int:
        t[0] += dt
        if cached.get(size):
            addr = cached[size].pop()
        else:
            addr = next_addr[0]
            next_addr[0] += size
        trace.append(
            {
                "action": "alloc",
                "addr": addr,
                "size": size,
                "stream": 0,
                "time_us": t[0],
                "frames": list(stacks[stack]),
            }
        )
        return addr

    def free(addr: int, size: int, dt: int = 150) -> None:
        t[0] += dt
        for action in ("free_requested", "free_completed"):
            trace.append(
                {
                    "action": action,
                    "addr": addr,
                    "size": size,
                    "stream": 0,
                    "time_us": t[0],
                    "frames": list(stacks["grad"]),
                }
            )
        cached.setdefault(size, []).append(addr)

    weight = 320 * MiB
    weights = [(0x7F0000000000 + i * weight // 4, weight // 4) for i in range(4 * LAYERS // 4)]
    adam: list = []
    for step in range(steps):
        last = oom and step == steps - 1
        acts = []
        for _layer in range(LAYERS):
            acts.append((alloc(180 * MiB, "act"), 180 * MiB))
            acts.append((alloc(96 * MiB, "attn"), 96 * MiB))
            for _ in range(6):  # small temporaries, freed at once
                a = alloc(2 * MiB, "act", 60)
                free(a, 2 * MiB, 40)
        if last:
            t[0] += 500
            trace.append(
                {
                    "action": "oom",
                    "size": 6144 * MiB,
                    "device_free": 412 * MiB,
                    "stream": 0,
                    "time_us": t[0],
                    "frames": list(stacks["act"]),
                }
            )
            break
        grads = []
        for a, s in reversed(acts):
            if len(grads) < len(weights) and s == 180 * MiB:
                grads.append((alloc(weight // 4, "grad"), weight // 4))
            free(a, s)
        while len(grads) < len(weights):
            grads.append((alloc(weight // 4, "grad"), weight // 4))
        if not adam:
            adam = [(alloc(weight // 4, "adam"), weight // 4) for _ in range(2 * len(weights))]
        for a, s in grads:
            free(a, s, 30)
        t[0] += 20_000
    live = {a: (s, list(stacks["weights"])) for a, s in weights}
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], e["frames"])
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    # one segment (an expandable one, say) holding everything, the gaps free
    base = 0x7F0000000000
    end = -(-next_addr[0] // SEGMENT) * SEGMENT
    allocated = [(addr, size, frames) for addr, (size, frames) in sorted(live.items())]
    return {"segments": [laid_out_segment(allocated, base, end)], "device_traces": [trace]}


def laid_out_segment(
    allocated: list[tuple[int, int, list]], base: int | None = None, end: int | None = None
) -> dict:
    """A Segment of device 0 holding ``allocated`` ((address, size, frames), in address
    order) as active blocks, the gaps between them (and up to ``end``) inactive; from
    ``base`` (the first block's address where not given)."""
    base = allocated[0][0] if base is None else base
    blocks, offset = [], base
    for addr, size, frames in allocated:
        if addr > offset:
            blocks.append(
                {
                    "address": offset,
                    "size": addr - offset,
                    "requested_size": 0,
                    "state": "inactive",
                    "frames": [],
                }
            )
        blocks.append(
            {
                "address": addr,
                "size": size,
                "requested_size": size,
                "state": "active_allocated",
                "frames": frames,
            }
        )
        offset = addr + size
    end = offset if end is None else end
    if end > offset:
        blocks.append(
            {"address": offset, "size": end - offset, "requested_size": 0, "state": "inactive", "frames": []}
        )
    used = sum(size for _a, size, _f in allocated)
    return {"device": 0, "address": base, "total_size": end - base, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "allocated_size": used, "active_size": used, "blocks": blocks}  # fmt: skip

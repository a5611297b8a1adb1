"""Memory snapshots in PyTorch's documented format (torch.cuda.memory._snapshot's
docstring; pytorch.org/docs/stable/torch_cuda_memory.html): segments with their
blocks in address order, frames on blocks and trace entries, device_traces per
device. Built here by hand so the tests know every byte."""

from __future__ import annotations

MiB = 1024 * 1024
GiB = 1024 * MiB
A, W, F = "active_allocated", "active_awaiting_free", "inactive"


def frame(filename: str, line: int, name: str) -> dict:
    return {"filename": filename, "line": line, "name": name}


def segment(
    address: int,
    blocks,
    pool=(0, 0),
    seg_type: str = "large",
    stream: int = 0,
    device: int = 0,
    expandable: bool = False,
) -> dict:
    """``blocks``: (state, size) or (state, size, requested_size, frames)."""
    out, addr = [], address
    for b in blocks:
        state, size = b[0], b[1]
        requested = b[2] if len(b) > 2 else (size if state != F else 0)
        frames = b[3] if len(b) > 3 else []
        out.append(
            {"address": addr, "size": size, "requested_size": requested, "state": state, "frames": frames}
        )
        addr += size
    total = addr - address
    return {
        "device": device,
        "address": address,
        "total_size": total,
        "stream": stream,
        "segment_type": seg_type,
        "segment_pool_id": pool,
        "is_expandable": expandable,
        "allocated_size": sum(b["size"] for b in out if b["state"] == A),
        "active_size": sum(b["size"] for b in out if b["state"] != F),
        "blocks": out,
    }


def snapshot(segments, traces=None, devices: int = 1) -> dict:
    return {
        "segments": segments,
        "device_traces": traces if traces is not None else [[] for _ in range(devices)],
    }


def healthy() -> dict:
    """Three full segments of weights and one cached free segment."""
    base = 1 << 40
    return snapshot(
        [
            segment(base, [(A, 1 * GiB)]),
            segment(base + 2 * GiB, [(A, 512 * MiB), (A, 512 * MiB)]),
            segment(base + 4 * GiB, [(F, 256 * MiB)]),
            segment(base + 5 * GiB, [(A, 2 * MiB)], seg_type="small"),
        ]
    )


def fragmented() -> dict:
    """Variable-length batches: 4 segments of 100 MiB, each with live 10 MiB tensors and
    40 MiB + 40 MiB free pieces between them -- 320 MiB free, no free piece > 40 MiB,
    and one whole free 64 MiB segment."""
    base = 1 << 40
    segs = []
    for i in range(4):
        segs.append(
            segment(
                base + i * 200 * MiB,
                [(A, 10 * MiB, 10 * MiB - 512), (F, 40 * MiB), (A, 10 * MiB), (F, 40 * MiB)],
            )
        )
    segs.append(segment(base + 1000 * MiB, [(F, 64 * MiB)]))
    return snapshot(segs)


def private_pool() -> dict:
    """A CUDA graph's private pool (segment_pool_id (1, 0)) beside the default pool."""
    base = 1 << 40
    return snapshot(
        [
            segment(base, [(A, 600 * MiB), (F, 400 * MiB)]),
            segment(base + 2 * GiB, [(A, 100 * MiB), (F, 412 * MiB)], pool=(1, 0)),
            segment(base + 3 * GiB, [(F, 256 * MiB)], pool=(1, 0)),
        ]
    )


def many_segments(n: int = 1000, blocks_per: int = 8) -> dict:
    """n segments of blocks_per blocks, alternating allocated and free."""
    base = 1 << 40
    segs = []
    for i in range(n):
        blocks = [(A if j % 2 == 0 else F, (j + 1) * 2 * MiB) for j in range(blocks_per)]
        segs.append(segment(base + i * GiB, blocks))
    return snapshot(segs)

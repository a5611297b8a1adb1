"""A PyTorch memory snapshot of any size written straight to disk, never held in memory.

    .venv/bin/python bench/snapshot_stream.py FILE --events 36000000 [--frames 10 30]

``bench/snapshot_load.py`` builds its snapshot as Python objects and
``pickle.dump``\\s it: a 5 GB file that way needs ~25 GB. Here the same
snapshot (PyTorch's documented format -- ``Snapshot``, ``Segment``, ``Block``,
``TraceEntry``, ``Frame`` in ``torch.cuda.memory._snapshot`` -- one dict per
distinct frame, shared, a new frames list per entry, 10 to 30 frames a stack,
allocations and their frees interleaved, memory alive from before the trace)
is written opcode by opcode as ``pickle.dump`` protocol 4 would write it
(every dict, list and string memoized, the shared ones referred to by memo
index; the opcodes are those of CPython's Lib/pickletools.py), a batch of
1,000 entries at a time, so a file of any size takes a few MB to write.
"""

from __future__ import annotations

import argparse
import random
import struct
import time

MARK, STOP, MEMOIZE, EMPTY_DICT, EMPTY_LIST = b"(", b".", b"\x94", b"}", b"]"
APPEND, APPENDS, SETITEMS, TUPLE2, NEWFALSE = b"a", b"e", b"u", b"\x86", b"\x89"


class Writer:
    def __init__(self, f):
        self.f, self.memo, self.strings = f, 0, {}
        f.write(b"\x80\x04")

    def put(self) -> bytes:
        self.memo += 1
        return MEMOIZE

    @staticmethod
    def get(index: int) -> bytes:
        return b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)

    def string(self, text: str) -> bytes:
        index = self.strings.get(text)
        if index is not None:
            return self.get(index)
        raw = text.encode()
        self.strings[text] = self.memo
        head = b"\x8c" + bytes([len(raw)]) if len(raw) < 256 else b"X" + struct.pack("<I", len(raw))
        return head + raw + self.put()

    @staticmethod
    def int(x: int) -> bytes:
        if 0 <= x < 256:
            return b"K" + bytes([x])
        if 0 <= x < 65536:
            return b"M" + struct.pack("<H", x)
        if -(2**31) <= x < 2**31:
            return b"J" + struct.pack("<i", x)
        n = (x.bit_length() + 8) // 8
        return b"\x8a" + bytes([n]) + x.to_bytes(n, "little", signed=True)

    def dict_(self, items) -> bytes:
        """A dict of (key, value) where value() encodes it: called in stream order, so
        memo indices are given in the order the unpickler meets them."""
        out = [EMPTY_DICT, self.put(), MARK]
        for key, value in items:
            out.append(self.string(key))
            out.append(value())
        out.append(SETITEMS)
        return b"".join(out)


def write(path: str, events: int, frames: tuple[int, int], seed: int = 1) -> int:
    """Write the snapshot; returns the number of trace entries written."""
    rng = random.Random(seed)
    with open(path, "wb", buffering=1 << 22) as f:
        w = Writer(f)
        f.write(EMPTY_DICT + w.put() + MARK)
        # segments: one segment whose blocks meet every frame once (so each frame dict is
        # memoized there, as where PyTorch's snapshot first meets it), allocated before the trace
        f.write(w.string("segments") + EMPTY_LIST + w.put() + MARK)
        pool: list[int] = []  # memo index of each frame dict
        base = 0x7F0000000000

        def frames_of_block(i: int) -> bytes:
            name = (
                f"/home/ada/project/model_{i % 40}.py" if i % 2 else f"/usr/lib/python3/torch/nn/m{i % 60}.py"
            )
            head = EMPTY_LIST + w.put()
            pool.append(w.memo)  # the frame dict's index: the next put
            frame = w.dict_(
                [
                    ("filename", lambda: w.string(name)),
                    ("line", lambda: w.int(i)),
                    ("name", lambda: w.string(f"fn_{i}")),
                ]
            )
            return head + frame + APPEND

        def block(i: int) -> bytes:
            return w.dict_(
                [
                    ("address", lambda: w.int(base + i * 4096)),
                    ("size", lambda: w.int(4096)),
                    ("requested_size", lambda: w.int(4096)),
                    ("state", lambda: w.string("active_allocated")),
                    ("frames", lambda: frames_of_block(i)),
                ]
            )

        total = w.int(5000 * 4096)
        segment = w.dict_(
            [
                ("device", lambda: w.int(0)),
                ("address", lambda: w.int(base)),
                ("total_size", lambda: total),
                ("allocated_size", lambda: total),
                ("active_size", lambda: total),
                ("requested_size", lambda: total),
                ("stream", lambda: w.int(0)),
                ("segment_type", lambda: w.string("large")),
                ("segment_pool_id", lambda: w.int(0) + w.int(0) + TUPLE2 + w.put()),
                ("is_expandable", lambda: NEWFALSE),
                (
                    "blocks",
                    lambda: EMPTY_LIST + w.put() + MARK + b"".join(block(i) for i in range(5000)) + APPENDS,
                ),
            ]
        )
        f.write(segment + APPENDS)
        stacks = [
            b"".join(w.get(pool[rng.randrange(len(pool))]) for _ in range(rng.randint(*frames)))
            for _ in range(3000)
        ]
        f.write(w.string("device_traces") + EMPTY_LIST + w.put() + EMPTY_LIST + w.put())
        stream = w.int(0)
        alive: list[tuple[int, int, int]] = []
        t, next_addr, written = 1_700_000_000_000_000, base + (1 << 40), 0

        def entry(action: str, addr: int, size: int, stack: int) -> bytes:
            # (in stream order: each string memoized where first met, referred to after)
            return b"".join(
                [
                    EMPTY_DICT + w.put() + MARK,
                    w.string("action"), w.string(action),
                    w.string("addr"), w.int(addr),
                    w.string("size"), w.int(size),
                    w.string("stream"), stream,
                    w.string("time_us"), w.int(t),
                    w.string("frames"), EMPTY_LIST + w.put() + MARK, stacks[stack], APPENDS,
                    SETITEMS,
                ]
            )  # fmt: skip

        while written < events:
            batch = []
            while len(batch) < 1000 and written + len(batch) < events:
                t += rng.randint(1, 40)
                if alive and (rng.random() < 0.48 or len(alive) > 20000):
                    addr, size, stack = alive.pop(rng.randrange(len(alive)))
                    batch.append(entry("free_requested", addr, size, stack))
                    if len(batch) < 1000 and written + len(batch) < events:
                        batch.append(entry("free_completed", addr, size, stack))
                else:
                    size = rng.choice((512, 1024, 4096, 65536, 1 << 20, 4 << 20))
                    next_addr += 4096 * (1 + size // 4096)
                    stack = rng.randrange(len(stacks))
                    alive.append((next_addr, size, stack))
                    batch.append(entry("alloc", next_addr, size, stack))
            f.write(MARK + b"".join(batch) + APPENDS)
            written += len(batch)
        f.write(APPEND)  # the trace into device_traces
        f.write(w.string("allocator_settings") + EMPTY_DICT + w.put())
        f.write(SETITEMS + STOP)
    return written


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--frames", type=int, nargs=2, default=(10, 30))
    args = ap.parse_args()
    t0 = time.perf_counter()
    n = write(args.file, args.events, tuple(args.frames))
    print(f"{args.file}: {n:,} trace entries written in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

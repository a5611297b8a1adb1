"""The agent's bounded history: samples, steps and events, each with a sequence number.

Items are encoded to JSON once, when pushed, so a pull only joins bytes.
Each kind has its own cap (a burst of fast steps never pushes the samples
out). A reader pulls with a cursor (the last sequence number it has):
everything newer that the ring still holds comes back, and ``dropped``
says whether something newer than the cursor was already evicted.
"""

from __future__ import annotations

import collections
import heapq
import threading

from vramscope.agent.protocol import ItemKind, encode_payload

# 30 min of samples at 0.5 s
DEFAULT_CAPS = {
    ItemKind.SAMPLE: 3600,
    ItemKind.STEP: 8192,
    ItemKind.EVENT: 512,
    ItemKind.MODULES: 64,
    ItemKind.ALLOCATOR: 32,
}
MAX_ITEM_BYTES = 256 * 1024


class ItemRing:
    def __init__(self, caps: dict[str, int] | None = None):
        self.caps = {**DEFAULT_CAPS, **(caps or {})}  # (a kind left out keeps its default cap)
        self._rings = {kind: collections.deque() for kind in self.caps}
        self._lock = threading.Lock()
        self.seq = 0
        self.max_evicted = 0  # highest sequence number no longer held
        self.nbytes = 0

    def push(self, kind: str, item: dict) -> int:
        with self._lock:
            self.seq += 1
            seq = self.seq
            item["seq"] = seq
            item["kind"] = kind
            data = encode_payload(item)
            if len(data) > MAX_ITEM_BYTES:
                data = encode_payload({"seq": seq, "kind": kind, "t": item.get("t"), "truncated": len(data)})
            ring = self._rings[kind]
            ring.append((seq, data))
            self.nbytes += len(data)
            while len(ring) > self.caps[kind]:
                old_seq, old = ring.popleft()
                self.nbytes -= len(old)
                if old_seq > self.max_evicted:
                    self.max_evicted = old_seq
            return seq

    def __len__(self) -> int:
        return sum(len(r) for r in self._rings.values())

    def oldest(self) -> int | None:
        with self._lock:
            heads = [r[0][0] for r in self._rings.values() if r]
        return min(heads) if heads else None

    def pull(self, cursor: int, max_bytes: int) -> tuple[list[bytes], int, bool, bool]:
        """(encoded items after cursor, new cursor, dropped, more)."""
        with self._lock:
            per_kind = []
            for ring in self._rings.values():
                newer = []
                for seq, data in reversed(ring):  # newest first: a live reader stops early
                    if seq <= cursor:
                        break
                    newer.append((seq, data))
                newer.reverse()
                per_kind.append(newer)
            dropped = self.max_evicted > cursor
            last_seq = self.seq
        out: list[bytes] = []
        size = 0
        new_cursor = cursor
        more = False
        for seq, data in heapq.merge(*per_kind):
            if out and size + len(data) + 1 > max_bytes:
                more = True
                break
            out.append(data)
            size += len(data) + 1
            new_cursor = seq
        if not more and new_cursor < last_seq:
            new_cursor = max(new_cursor, cursor)
        return out, new_cursor, dropped, more

    def all_items(self) -> list[bytes]:
        with self._lock:
            merged = heapq.merge(*[list(r) for r in self._rings.values()])
            return [data for _, data in merged]

"""The columns of an unpickled snapshot (core/snapshot/columns.py), made at C speed.

Each column of a device's trace is one ``map(itemgetter)`` over the entries
(a ``dict.get`` comprehension where some entry lacks the field), turned into
a numpy array; stacks are interned only where something shows them
(allocations, frees of memory allocated before the trace, OOMs). A value of a
kind PyTorch never writes is refused with one line (``SnapshotError``);
fields this version does not know are kept.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from vramscope.core.snapshot.columns import (
    ACTIONS,
    ALLOC,
    COLUMN_FIELDS,
    DEFAULT_POOL,
    FREE_COMPLETED,
    KNOWN_TOP,
    OOM,
    DeviceTrace,
    Snapshot,
)
from vramscope.core.snapshot.pairing import pair
from vramscope.core.snapshot.safe_load import SnapshotError
from vramscope.core.snapshot.stacks import Stacks, text
from vramscope.core.snapshot.stacks import not_a_snapshot as _bad


def _int(v, what: str) -> int:
    if type(v) is int or type(v) is bool:
        return int(v)
    if v is None:
        return 0
    raise _bad(f"{what} is a {type(v).__name__}, not a number")


def _keep(key: str, value) -> bool:
    """An entry's non-column field worth keeping (a default value is not kept per row)."""
    if key == "pool_id":
        return tuple(value) != DEFAULT_POOL if isinstance(value, (list, tuple)) else value is not None
    return value not in (None, "", [], {}, ())


CHUNK = 1 << 16  # entries converted, then dropped, at a time


class _Builder:
    def __init__(self):
        self.stacks = Stacks()
        self.actions = list(ACTIONS)
        self.codes = {a: i for i, a in enumerate(ACTIONS)}
        self.unknown: set[str] = set()

    def trace(self, entries) -> DeviceTrace:
        """One device's entries as columns: one comprehension per column (C-speed loops
        over the list), the stacks looked up by frame identities, the misses interned."""
        if type(entries) is not list:
            raise _bad(f"a device trace is a {type(entries).__name__}, not a list")
        bad = next((i for i, e in enumerate(entries) if type(e) is not dict), None)
        if bad is not None:
            raise _bad(f"trace entry {bad} is a {type(entries[bad]).__name__}, not a dict")
        codes = self.codes
        missing: set[int] = set()  # entries lacking one of the column fields
        names = self._column(entries, "action", missing, None)
        try:
            acts = [codes.get(a, -1) for a in names]
        except TypeError:  # an action that is not a string (a list): unknown, by its repr
            acts = [codes.get(a, -1) if type(a) is str else -1 for a in names]
        del names
        for i in [i for i, c in enumerate(acts) if c < 0]:
            acts[i] = self._new_action(entries[i].get("action"))
        act = np.array(acts, dtype=np.int16)
        del acts
        addr = self._ints(self._column(entries, "addr", missing, 0), "addr")
        # which entries' stacks are shown (pairing needs the whole trace's actions and addresses)
        _opens, _closes, orphans, _open = pair(act, addr, codes[ALLOC], codes[FREE_COMPLETED])
        shown = (act == codes[ALLOC]) | (act == codes[OOM])
        shown[orphans] = True
        # the rest chunk by chunk, each chunk's entries dropped once read: the columns grow
        # in the memory the unpickled entries leave, not on top of them
        lacking = np.array(sorted(missing), dtype=np.int64)  # (from the action and address columns)
        parts: dict[str, list] = {"time_us": [], "size": [], "stream": [], "stack": []}
        other: dict[int, dict] = {}
        timestamps = True
        for a in range(0, len(entries), CHUNK):
            part = entries[a : a + CHUNK]
            gaps: set[int] = set()
            times = self._column(part, "time_us", gaps, None)
            if None in times:  # an older PyTorch: the entry's number stands for its time
                timestamps = False
                times = [a + i if t is None else t for i, t in enumerate(times)]
            parts["time_us"].append(self._ints(times, "time_us"))
            del times
            for key in ("size", "stream"):
                parts[key].append(self._ints(self._column(part, key, gaps, 0), key))
            parts["stack"].append(self._stacks(part, shown[a : a + CHUNK]))
            # an entry of exactly the six column fields has nothing else to keep: look only
            # at the others (a count of fields is cheap; a field missing was noted above)
            odd = np.flatnonzero(np.fromiter(map(len, part), dtype=np.int64, count=len(part)) != 6).tolist()
            lo, hi = np.searchsorted(lacking, (a, a + len(part)))
            here = set((lacking[lo:hi] - a).tolist())
            for i in sorted(here.union(gaps, odd)):
                kept = {k: v for k, v in part[i].items() if k not in COLUMN_FIELDS and _keep(k, v)}
                if kept:
                    other[a + i] = kept
                    self.unknown.update(k for k in kept if k not in KNOWN_ENTRY_FIELDS)
            entries[a : a + len(part)] = [None] * len(part)
            del part
        t, size, stream, stack = (
            np.concatenate(parts[k]) if parts[k] else np.zeros(0, np.int64) for k in parts
        )
        return DeviceTrace(t, act, addr, size, stream, stack.astype(np.int32), other, timestamps)

    @staticmethod
    def _column(entries: list, key: str, missing: set, default) -> list:
        """Every entry's ``key`` (C-speed ``map(itemgetter)``); where some entry lacks it,
        ``default`` for those, and their numbers added to ``missing``."""
        try:
            return list(map(itemgetter(key), entries))
        except KeyError:
            missing.update(i for i, e in enumerate(entries) if key not in e)
            return [e.get(key, default) for e in entries]

    @staticmethod
    def _ints(values: list, key: str) -> np.ndarray:
        try:
            return np.array(values, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            raise _bad(f"a trace entry's {key} is not a 64-bit whole number") from None

    def _stacks(self, entries: list, shown: np.ndarray) -> np.ndarray:
        """Stack ids of the entries whose stack is shown (``shown``): allocations, frees of
        memory allocated before the trace, OOMs; 0 for the others (a free's own stack,
        where it was asked, is not kept: nothing here shows it, and frees are two thirds
        of a trace)."""
        rows = np.flatnonzero(shown).tolist()
        reps = self.stacks._by_identity  # (id first, id last, length) -> (frames list, stack id)
        stack_of = self.stacks.stack  # called only for a stack not seen yet
        frames = [entries[i].get("frames") for i in rows]
        found = [
            r[1]
            if type(f) is list
            and f
            and (r := reps.get((id(f[0]), id(f[-1]), len(f)))) is not None
            and r[0] == f
            else stack_of(f)
            for f in frames
        ]
        del frames
        out = np.zeros(len(entries), dtype=np.int32)
        out[rows] = found
        return out

    def _new_action(self, action) -> int:
        name = action if isinstance(action, str) else repr(action)
        code = self.codes.get(name)
        if code is None:
            code = self.codes[name] = len(self.actions)
            self.actions.append(name)
            self.unknown.add(f"action {name!r}")
        if len(self.actions) > 1000:
            raise _bad("more than a thousand different trace actions")
        return code

    def segment(self, seg, index: int) -> dict:
        if type(seg) is not dict:
            raise _bad(f"segment {index} is a {type(seg).__name__}, not a dict")
        out = dict(seg)
        for key in ("total_size", "stream", "allocated_size", "active_size"):
            if key in seg:
                out[key] = _int(seg[key], f"segment {index}'s {key}")
        if "device" in seg and type(seg["device"]) is not int:
            raise _bad(f"segment {index}'s device is not a number")
        if type(seg.get("segment_type", "")) is not str:
            raise _bad(f"segment {index}'s segment_type is not a string")
        pool = seg.get("segment_pool_id", DEFAULT_POOL)
        if type(pool) not in (list, tuple) or len(pool) != 2 or any(type(x) is not int for x in pool):
            raise _bad(f"segment {index}'s segment_pool_id is not two numbers")
        blocks = seg.get("blocks") or []
        if type(blocks) is not list:
            raise _bad(f"segment {index}'s blocks are not a list")
        out["blocks"] = []
        offset = _int(seg.get("address"), "a segment's address")
        for b in blocks:
            if type(b) is not dict:
                raise _bad(f"a block of segment {index} is not a dict")
            nb = b  # (the unpickled block itself: from_object consumes what it is given)
            frames = nb.pop("frames", None)
            if type(nb.get("state", "")) is not str:
                raise _bad(f"a block of segment {index} has a state that is not a string")
            # blocks lie one after another from the segment's address; a snapshot made by
            # torch.cuda._memory_viz._profile_to_snapshot gives no block address
            nb.setdefault("address", offset)
            offset = _int(nb["address"], "a block's address") + _int(nb.get("size"), "a block's size")
            nb["stack"] = self.stacks.stack(frames) if frames else 0
            out["blocks"].append(nb)
        return out


KNOWN_ENTRY_FIELDS = frozenset(("device_free", "pool_id", "compile_context", "user_metadata"))


# What a value of a kind no PyTorch writes raises while it is converted (``unexpected``).
UNEXPECTED = (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError, RecursionError)


def from_object(obj) -> Snapshot:
    """The columns of an unpickled snapshot; ``SnapshotError`` for anything that is not
    one, whatever its values. ``obj`` is consumed: its trace entries are dropped as they
    are converted (so the columns take the memory they leave) and its blocks reused."""
    try:
        return _from_object(obj)
    except UNEXPECTED as exc:
        if isinstance(exc, SnapshotError):
            raise
        raise unexpected(exc) from None


def unexpected(exc: BaseException) -> SnapshotError:
    """A value of a kind no PyTorch writes, where the checks did not foresee it."""
    if isinstance(exc, RecursionError):
        return _bad("a field is nested too deeply")
    return _bad(f"a value of an unexpected kind ({type(exc).__name__}: {text(exc, 120)})")


def from_native(root, traces: list[DeviceTrace], b: _Builder) -> Snapshot:
    """The Snapshot of what the native reader gives: the unpickled object with each device's
    trace list emptied, and the traces as columns (made with ``b``'s stacks and actions)."""
    try:
        if type(root) is not dict:
            raise _bad(f"the pickle holds a {type(root).__name__}, not a dict")
        if "segments" not in root and "device_traces" not in root:
            raise _bad("no 'segments' and no 'device_traces' in it")
        segments = root.get("segments") or []
        listed = root.get("device_traces") or []
        if type(segments) is not list or type(listed) is not list:
            raise _bad("'segments' or 'device_traces' is not a list")
        out_segments = [b.segment(s, i) for i, s in enumerate(segments)]
    except UNEXPECTED as exc:
        if isinstance(exc, SnapshotError):
            raise
        raise unexpected(exc) from None
    b.stacks.done_loading()
    extra = {k: v for k, v in root.items() if k not in ("segments", "device_traces")}
    unknown = sorted(b.unknown | {f"top-level {k!r}" for k in extra if k not in KNOWN_TOP})
    return Snapshot(out_segments, traces, b.stacks, b.actions, extra, unknown)


def _from_object(obj) -> Snapshot:
    if type(obj) is not dict:
        raise _bad(f"the pickle holds a {type(obj).__name__}, not a dict")
    if "segments" not in obj and "device_traces" not in obj:
        raise _bad("no 'segments' and no 'device_traces' in it")
    b = _Builder()
    segments = obj.get("segments") or []
    traces = obj.get("device_traces") or []
    if type(segments) is not list or type(traces) is not list:
        raise _bad("'segments' or 'device_traces' is not a list")
    out_traces = [b.trace(t) for t in traces]
    out_segments = [b.segment(s, i) for i, s in enumerate(segments)]
    b.stacks.done_loading()
    extra = {k: v for k, v in obj.items() if k not in ("segments", "device_traces")}
    unknown = sorted(b.unknown | {f"top-level {k!r}" for k in extra if k not in KNOWN_TOP})
    return Snapshot(out_segments, out_traces, b.stacks, b.actions, extra, unknown)

"""The native reader (core/snapshot/native.py, a C extension) against the pure-Python one
and an independent replay: the same columns, stacks, peak, time and top stacks on any
snapshot in PyTorch's documented format (Hypothesis), the same refusals, nothing run,
bounded memory; and the pure-Python reader chosen, with its reason, where the extension
is absent."""

from __future__ import annotations

import pickle
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.core.snapshot.snapshot_format import FRAMES, as_groups, replay, snapshots
from vramscope.core.snapshot import native, reading, safe_load, summary
from vramscope.core.snapshot.safe_load import SnapshotError

pytestmark = pytest.mark.skipif(native.WHY_NOT is not None, reason=str(native.WHY_NOT))

ALL = 10**6


@pytest.fixture
def pure_python(monkeypatch):
    """reading.read as an install without the extension does it."""
    monkeypatch.setattr(native, "_columns", None)
    monkeypatch.setattr(native, "WHY_NOT", "the native reader is not built (taken away by the test)")


def _both(path, monkeypatch):
    fast = reading.read(path)
    with monkeypatch.context() as m:
        m.setattr(native, "_columns", None)
        m.setattr(native, "WHY_NOT", "taken away by the test")
        slow = reading.read(path)
    return fast, slow


def _frames_of(snap, trace, rows):
    return [snap.stacks.frames_of(int(trace.stack[i])) for i in rows]


def _same(fast, slow):
    assert fast.reader == "native" and slow.reader.startswith("pure-Python reader")
    assert fast.actions == slow.actions and fast.extra == slow.extra
    assert fast.unknown_fields == slow.unknown_fields
    assert len(fast.traces) == len(slow.traces)
    for a, b in zip(fast.traces, slow.traces):
        for col in ("time_us", "action", "addr", "size", "stream"):
            assert np.array_equal(getattr(a, col), getattr(b, col)), col
        assert a.timestamps == b.timestamps and a.other == b.other
        shown = np.flatnonzero(b.stack)  # the rows whose stack the pure-Python reader keeps
        assert _frames_of(fast, a, shown) == _frames_of(slow, b, shown)
    blocks = [[(x["address"], x["size"], x["state"]) for x in s["blocks"]] for s in fast.segments]
    assert blocks == [[(x["address"], x["size"], x["state"]) for x in s["blocks"]] for s in slow.segments]
    for sa, sb in zip(fast.segments, slow.segments):
        for xa, xb in zip(sa["blocks"], sb["blocks"]):
            assert fast.stacks.frames_of(xa["stack"]) == slow.stacks.frames_of(xb["stack"])


def _without_counts(s: dict) -> dict:
    # the native reader interns every entry's stack, the pure-Python one only those shown
    return {k: v for k, v in s.items() if k not in ("stacks", "reader")}


def _equal_groups() -> dict:
    """Three 512-byte blocks alive from the start, and a trace that only frees one of them
    (requested, not completed): the native reader numbers the freed block's stack first, as
    it interns every entry's, the pure-Python one last (Hypothesis found it in CI)."""
    one, two = [FRAMES[0]], [FRAMES[0], FRAMES[0]]
    base = 1 << 40
    blocks = [
        {"address": base + a, "size": z, "requested_size": r, "state": st_, "frames": f}
        for a, z, r, st_, f in (
            (0, 512, 512, "active_allocated", []),
            (512, 1_048_064, 0, "inactive", []),
            (1_048_576, 512, 512, "active_allocated", one),
            (1_049_088, 22_019_584, 0, "inactive", []),
            (23_068_672, 512, 512, "active_allocated", two),
            (23_069_184, 1_050_672_640, 0, "inactive", []),
        )
    ]
    segment = {
        "device": 0,
        "address": base,
        "total_size": 1 << 30,
        "stream": 0,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "allocated_size": 1536,
        "active_size": 1536,
        "blocks": blocks,
    }
    free = {"action": "free_requested", "addr": base + 23_068_672, "size": 512, "stream": 0, "time_us": 0}
    return {"segments": [segment], "device_traces": [[{**free, "frames": two}]]}


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(snapshots(), st.integers(0, 2 * 10**6), st.sampled_from([2, 3, 4, 5]))
@example(snap=_equal_groups(), at_time=0, protocol=2)  # equal bytes: listed in one order by both
def test_native_and_pure_python_readers_and_an_independent_replay_agree(
    tmp_path_factory, monkeypatch, snap, at_time, protocol
):
    path = tmp_path_factory.mktemp("s") / "s.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=protocol))
    fast, slow = _both(path, monkeypatch)
    _same(fast, slow)
    a = summary.summary(fast, 0, at_time, ALL)
    assert _without_counts(a) == _without_counts(summary.summary(slow, 0, at_time, ALL))
    d = a["devices"][0]
    peak, peak_time, at_peak, at = replay(snap, 0, at_time)
    assert (d["peak_allocated"], d["peak_time_us"]) == (peak, peak_time)
    assert as_groups(d["top_at_peak"]) == at_peak and as_groups(d["at"]["top"]) == at


def test_tracebacks_shared_as_pytorch_shares_them_read_the_same(tmp_path, monkeypatch):
    """The C++ snapshot gives one frames list per distinct traceback, shared by every entry
    and block that has it (the pickle refers back to it): the native reader replaces such a
    list by its stack's canonical frames once its entries are rows, and finds it again."""
    shared = [FRAMES[2], FRAMES[0]]
    other = [FRAMES[3], FRAMES[0], FRAMES[1]]
    trace = []
    for i in range(3000):  # more than a pickle batch (1000), so lists are met again later
        frames = shared if i % 3 else other
        trace.append(
            {"action": "alloc", "addr": i * 512, "size": 512, "stream": 0, "time_us": i, "frames": frames}
        )
        if i % 2:
            trace.append(
                {
                    "action": "free_completed",
                    "addr": i * 512,
                    "size": 512,
                    "stream": 0,
                    "time_us": i,
                    "frames": frames,
                }
            )
    block = {"address": 0, "size": 512, "requested_size": 512, "state": "active_allocated", "frames": shared}
    snap = {
        "segments": [{"device": 0, "address": 0, "total_size": 4096, "stream": 0, "blocks": [block]}],
        "device_traces": [trace, [dict(e) for e in trace[:10]]],
        "allocator_settings": {},
    }
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    fast, slow = _both(path, monkeypatch)
    _same(fast, slow)
    assert len(fast.trace(1)) == 10
    assert _without_counts(summary.summary(fast, None, 5, ALL)) == _without_counts(
        summary.summary(slow, None, 5, ALL)
    )


def test_fields_a_newer_pytorch_adds_are_kept_by_the_native_reader(tmp_path, monkeypatch):
    trace = [
        {
            "action": "alloc",
            "addr": 1,
            "size": 2,
            "stream": 0,
            "time_us": 3,
            "frames": [FRAMES[0]],
            "compile_context": "",
            "user_metadata": "",
            "pool_id": (0, 0),
            "tensor_name": "w",
        },
        {"action": "segment_teleport", "addr": 1, "size": 2, "stream": 0, "frames": []},
        {"action": "oom", "size": 1 << 40, "device_free": 5, "stream": 0, "time_us": 4, "pool_id": [1, 2]},
        {"action": 7, "addr": 1, "size": 2, "stream": 0, "time_us": 5},
    ]
    snap = {"segments": [], "device_traces": [trace], "v9": {"x": 1}}
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    fast, slow = _both(path, monkeypatch)
    _same(fast, slow)
    assert fast.trace(0).other == {0: {"tensor_name": "w"}, 2: {"device_free": 5, "pool_id": [1, 2]}}
    assert "segment_teleport" in fast.actions and "7" in fast.actions


def test_a_pickle_that_would_run_code_runs_nothing_through_the_native_reader(tmp_path, monkeypatch):
    """The marker-file test of test_snapshot_files, on the native reader itself: the
    pure-Python reader is made to fail if it is reached at all."""

    class RunsCode:
        def __reduce__(self):
            return (open, (str(tmp_path / "ran"), "w"))

    def never(*_a, **_k):
        raise AssertionError("the pure-Python reader was used")

    monkeypatch.setattr(safe_load, "load", never)
    for protocol in (2, 3, 4, 5):
        snap = {"segments": [], "device_traces": [[{"action": "alloc", "frames": [RunsCode()]}]]}
        path = tmp_path / f"evil{protocol}.pickle"
        path.write_bytes(pickle.dumps(snap, protocol=protocol))
        with pytest.raises(
            SnapshotError, match=r"names a Python global \(_?io\.open\).*nothing in it was run"
        ):
            reading.read(path)
        assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("opcodes", "said"),
    [
        (b"]N\x85R.", "REDUCE"),  # a call with no global named: refused all the same
        (b"}}b.", "BUILD"),
        (b"(N\x81.", "NEWOBJ"),
        (b"\x82\x01.", "EXT1"),
        (b"N\x94Q.", "BINPERSID"),
        (b"Pid\n.", "PERSID"),
        (b"cos\nsystem\n.", "os.system"),
    ],
)
def test_every_opcode_that_could_run_code_is_refused_in_one_line(tmp_path, monkeypatch, opcodes, said):
    monkeypatch.setattr(safe_load, "load", lambda *_a, **_k: pytest.fail("the pure-Python reader was used"))
    path = tmp_path / "x.pickle"
    path.write_bytes(b"\x80\x04" + opcodes)
    with pytest.raises(SnapshotError, match="nothing in it was run") as got:
        reading.read(path)
    assert said in str(got.value) and "\n" not in str(got.value)


def test_a_memo_index_bomb_is_refused_at_once_without_growing_the_memo(tmp_path):
    """LONG_BINPUT 2**32-1: CPython's unpickler would zero a memo of 32 GiB; the native
    reader takes a memo index only in the order pickle.dump gives them."""
    path = tmp_path / "bomb.pickle"
    for index in (2**30, 2**32 - 1, 5):
        path.write_bytes(b"\x80\x04]r" + struct.pack("<I", index) + b".")
        t0 = time.perf_counter()
        with pytest.raises(SnapshotError, match="memory"):
            reading.read(path)
        assert time.perf_counter() - t0 < 1
    path.write_bytes(b"\x80\x04\x8e" + struct.pack("<Q", 1 << 62) + b"x.")  # BINBYTES8 of 4 EiB
    with pytest.raises(SnapshotError, match="truncated"):
        reading.read(path)


def test_a_pickle_the_native_reader_leaves_to_python_is_still_read(tmp_path):
    """Sets (not in a snapshot, but harmless) go to the pure-Python reader, which says why."""
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[]], "tags": {1, 2}}, protocol=4))
    snap = reading.read(path)
    assert snap.extra["tags"] == {1, 2}
    assert snap.reader.startswith("pure-Python reader (the native reader leaves this pickle to Python")


def test_without_the_extension_the_pure_python_reader_is_chosen_and_says_why(tmp_path, pure_python, capsys):
    from vramscope.commands import snapshot as command

    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[]]}, protocol=4))
    assert (
        reading.read(path).reader
        == "pure-Python reader (the native reader is not built (taken away by the test))"
    )
    parser = __import__("argparse").ArgumentParser()
    command.add_arguments(parser)
    assert command.run(parser.parse_args([str(path)])) == 0
    out = capsys.readouterr().out
    assert "read by the pure-Python reader (the native reader is not built" in out


def test_cancelling_stops_the_native_read(tmp_path):
    trace = [
        {"action": "alloc", "addr": i, "size": 1, "stream": 0, "time_us": i, "frames": []}
        for i in range(200_000)
    ]
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace]}, protocol=4))
    seen = []
    with pytest.raises(safe_load.Cancelled):
        reading.read(path, lambda done, size: seen.append(done), lambda: bool(seen))
    assert seen


def test_an_entry_referred_to_twice_is_left_to_python_and_read_the_same(tmp_path, monkeypatch):
    """pickle.dump writes an entry dict met twice (the same object in two traces) as a
    reference back to it: the native reader has made it a row and dropped it, so it
    leaves the file to the pure-Python reader, which says why."""
    trace = [
        {"action": "alloc", "addr": i, "size": 512, "stream": 0, "time_us": i, "frames": [FRAMES[i % 3]]}
        for i in range(30)
    ]
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace, trace[:10]]}, protocol=4))
    snap = reading.read(path)
    assert (
        snap.reader
        == "pure-Python reader (the native reader leaves this pickle to Python (a trace entry is referred to twice))"
    )
    assert len(snap.trace(0)) == 30 and len(snap.trace(1)) == 10


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=300),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        | st.tuples(inner, inner, inner)
        | st.tuples(inner)
    ),
    max_leaves=25,
)


def _has_bytes(value) -> bool:
    if isinstance(value, bytes):
        return True
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (list, tuple)) and any(_has_bytes(v) for v in value)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plain, st.sampled_from([2, 3, 4, 5]), st.booleans())
def test_the_native_reader_builds_any_plain_pickle_as_pickle_loads_does(tmp_path, value, protocol, shared):
    """The opcode walker against CPython's unpickler on any pickle of plain values (shared
    references included: the memo), outside a trace."""
    import os

    from vramscope.core.snapshot import building

    obj = {"extra": [value, value] if shared else value}
    path = tmp_path / "v.pickle"
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    b = building._Builder()
    fd = os.open(path, os.O_RDONLY)
    try:
        if protocol == 2 and _has_bytes(value):  # (protocol 2 writes bytes as a call of a global)
            with pytest.raises(native._columns.Refused):
                native._columns.read(
                    fd, path.stat().st_size, b.codes, b.stacks.intern, b._new_action, None, None
                )
            return
        root, traces = native._columns.read(
            fd, path.stat().st_size, b.codes, b.stacks.intern, b._new_action, None, None
        )
    finally:
        os.close(fd)
    assert traces == [] and root == pickle.loads(path.read_bytes()) == obj
    if shared and isinstance(value, (list, dict)):
        assert root["extra"][0] is root["extra"][1]

"""Any bytes at all: a snapshot file cut, flipped or padded anywhere, or a pickle of
plain values in the wrong places, is read or refused in one line -- never another
exception, never code run (Hypothesis over the pickle stream)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.snapshot.snapshot_format import FRAMES
from vramscope.core.snapshot import reading, summary
from vramscope.core.snapshot.safe_load import SnapshotError

SNAP = {
    "segments": [
        {
            "device": 0,
            "address": 1 << 30,
            "total_size": 1 << 21,
            "stream": 0,
            "segment_type": "large",
            "segment_pool_id": (0, 0),
            "blocks": [
                {
                    "address": 1 << 30,
                    "size": 1 << 20,
                    "requested_size": 5,
                    "state": "active_allocated",
                    "frames": FRAMES[:3],
                },
                {
                    "address": (1 << 30) + (1 << 20),
                    "size": 1 << 20,
                    "requested_size": 0,
                    "state": "inactive",
                    "frames": [],
                },
            ],
        }
    ],
    "device_traces": [
        [
            {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1, "frames": FRAMES[1:4]},
            {
                "action": "oom",
                "size": 1 << 40,
                "device_free": 0,
                "stream": 0,
                "time_us": 2,
                "frames": FRAMES[:1],
            },
            {"action": "free_completed", "addr": 4096, "size": 512, "stream": 0, "time_us": 3, "frames": []},
        ]
    ],
}


def _outcome(tmp_path, data: bytes) -> None:
    path = tmp_path / "x.pickle"
    path.write_bytes(data)
    try:
        snap = reading.read(path)
    except SnapshotError as exc:
        assert "\n" not in str(exc)
        return
    summary.summary(snap, None, 2, 5)  # what was read summarises without error


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([2, 4, 5]), st.data())
def test_a_damaged_file_is_read_or_refused_in_one_line(tmp_path, protocol, data):
    raw = bytearray(pickle.dumps(SNAP, protocol=protocol))
    kind = data.draw(st.sampled_from(["cut", "flip", "insert"]))
    at = data.draw(st.integers(0, len(raw) - 1))
    if kind == "cut":
        raw = raw[:at]
    elif kind == "flip":
        raw[at] = data.draw(st.integers(0, 255))
    else:
        raw[at:at] = data.draw(st.binary(min_size=1, max_size=9))
    _outcome(tmp_path, bytes(raw))


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=5)
    | st.binary(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        | st.tuples(inner, inner)
    ),
    max_leaves=12,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(["segments", "device_traces", "entry", "frame", "block"]),
    st.sampled_from(
        [
            "action",
            "addr",
            "size",
            "time_us",
            "frames",
            "filename",
            "line",
            "state",
            "total_size",
            "address",
            "blocks",
            "device",
            "segment_pool_id",
            "extra",
        ]
    ),
    values,
)
def test_any_value_in_any_field_is_read_or_refused_in_one_line(tmp_path, where, key, value):
    import copy

    snap = copy.deepcopy(SNAP)
    if where in ("segments", "device_traces"):
        snap[where] = value
    else:
        target = {
            "entry": snap["device_traces"][0][0],
            "frame": snap["device_traces"][0][0]["frames"][0],
            "block": snap["segments"][0]["blocks"][0],
        }[where]
        target[key] = value
    _outcome(tmp_path, pickle.dumps(snap, protocol=4))


def test_a_deeply_nested_field_is_refused_not_a_crash(tmp_path):
    frame = {"filename": "a.py", "line": 1, "name": "f", "fx_node_info": "DEEP"}
    snap = {
        "segments": [],
        "device_traces": [
            [{"action": "alloc", "addr": 1, "size": 2, "stream": 0, "time_us": 0, "frames": [frame]}]
        ],
    }
    data = pickle.dumps(snap, protocol=2)  # (no frames: the placeholder can be swapped in place)
    placeholder = b"X\x04\x00\x00\x00DEEP"
    depth = 200_000  # lists in lists: EMPTY_LIST pushed, then APPEND folds each into the one below
    path = tmp_path / "deep.pickle"
    path.write_bytes(data.replace(placeholder, b"]" * depth + b"a" * (depth - 1)))
    with pytest.raises(SnapshotError, match="nested too deeply"):
        reading.read(path)


def test_a_pickle_that_asks_for_the_machines_memory_is_refused_in_one_line(tmp_path):
    """A crafted file's memo index (LONG_BINPUT 2**30) would make CPython's unpickler
    grow and zero a memo table of gigabytes: the load's address-space cap refuses it
    at once, as installed, in one line."""
    import struct
    import subprocess
    import sys

    bomb = tmp_path / "bomb.pickle"
    bomb.write_bytes(b"\x80\x04]r" + struct.pack("<I", 2**30) + b".")
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", "snapshot", str(bomb)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and done.returncode > 0  # refused, not killed
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and "memory" in said[0], done.stderr

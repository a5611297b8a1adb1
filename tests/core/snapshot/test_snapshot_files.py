"""Snapshot files as they come: from a colleague (a pickle that would run code), cut
short, not a snapshot at all, from a newer PyTorch; and the command as installed."""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import struct
import subprocess
import sys

import pytest

from tests.core.snapshot.snapshot_format import FRAMES
from vramscope.agent.oom import oom
from vramscope.core.snapshot import reading, safe_load, summary
from vramscope.core.snapshot.safe_load import Cancelled, SnapshotError


def _snapshot(n: int = 50) -> dict:
    trace = []
    for i in range(n):
        trace.append(
            {
                "action": "alloc",
                "addr": 4096 * (i + 1),
                "size": 512 * (i + 1),
                "stream": 0,
                "time_us": 10 * i,
                "frames": FRAMES[:3],
            }
        )
    for i in range(0, n, 2):
        trace.append(
            {
                "action": "free_completed",
                "addr": 4096 * (i + 1),
                "size": 512 * (i + 1),
                "stream": 0,
                "time_us": 10 * n + i,
                "frames": [],
            }
        )
    trace.append(
        {
            "action": "oom",
            "size": 1 << 34,
            "device_free": 1 << 20,
            "stream": 0,
            "time_us": 99_999,
            "frames": FRAMES[2:3],
        }
    )
    segment = {
        "device": 0,
        "address": 0,
        "total_size": 1 << 30,
        "stream": 0,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "allocated_size": 0,
        "active_size": 0,
        "blocks": [{"address": 0, "size": 1 << 30, "requested_size": 0, "state": "inactive", "frames": []}],
    }
    return {
        "segments": [segment],
        "device_traces": [trace],
        "allocator_settings": {"expandable_segments": False},
    }


class _RunsCode:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))  # pickle.load would create the marker file


def _vramscope() -> list[str]:
    """The command as installed beside this Python (the module where it is not)."""
    script = pathlib.Path(sys.executable).with_name("vramscope")
    return [str(script)] if script.exists() else [sys.executable, "-m", "vramscope"]


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_vramscope(), "snapshot", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_a_pickle_that_would_run_code_runs_nothing_and_is_refused_in_one_line(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pickle"
    snap = _snapshot()
    snap["device_traces"][0][0]["frames"] = [_RunsCode(str(marker))]
    path.write_bytes(pickle.dumps(snap, protocol=4))
    with pytest.raises(SnapshotError, match="names a Python global"):
        reading.read(path)
    result = _run(path)
    assert not marker.exists()
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert (
        "(io.open)" in result.stderr
        and str(path) in result.stderr
        and "nothing in it was run" in result.stderr
    )
    # the same pickle does run code where pickle.load is used: the test's marker is real
    pickle.loads(path.read_bytes())
    assert marker.exists()


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_pickle_protocol_loads(tmp_path, protocol):
    path = tmp_path / "s.pickle"
    snap = _snapshot()
    path.write_bytes(pickle.dumps(snap, protocol=protocol))
    assert safe_load.load(path) == snap


def test_a_truncated_file_is_said_in_one_line(tmp_path):
    data = pickle.dumps(_snapshot(2000), protocol=4)
    path = tmp_path / "cut.pickle"
    path.write_bytes(data[: len(data) // 2])
    result = _run(path)
    assert result.returncode == 2 and "truncated" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_corrupt_length_is_said_in_one_line(tmp_path):
    path = tmp_path / "long.pickle"
    # protocol 4, then BINUNICODE8 claiming 2**60 bytes
    path.write_bytes(b"\x80\x04\x8d" + struct.pack("<Q", 1 << 60) + b"abc")
    with pytest.raises(SnapshotError, match="corrupt"):
        reading.read(path)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"not a pickle at all\n", "is not a pickle"),
        (pickle.dumps([1, 2, 3], protocol=4), "holds a list, not a dict"),
        (pickle.dumps({"model": "weights"}, protocol=4), "no 'segments' and no 'device_traces'"),
        (
            pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "addr": "x"}]]}, protocol=4),
            "not a 64-bit whole number",
        ),
        (pickle.dumps({"segments": "nope"}, protocol=4), "is not a list"),
    ],
)
def test_a_file_that_is_not_a_snapshot_is_said_in_one_line(tmp_path, content, said):
    path = tmp_path / "other.pickle"
    path.write_bytes(content)
    result = _run(path)
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_fields_from_a_newer_pytorch_are_kept_not_fatal(tmp_path):
    snap = _snapshot()
    snap["memory_pools_v9"] = [{"id": 7}]
    snap["device_traces"][0][0]["tensor_name"] = "layer.0.weight"
    snap["device_traces"][0].insert(
        1, {"action": "segment_teleport", "addr": 1, "size": 2, "stream": 0, "time_us": 0, "frames": []}
    )
    snap["device_traces"][0][2]["frames"] = [dict(FRAMES[0], fx_node_op="call_function")]
    path = tmp_path / "new.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    s = reading.read(path)
    assert s.extra["memory_pools_v9"] == [{"id": 7}]
    assert s.trace(0).other[0] == {"tensor_name": "layer.0.weight"}
    assert {"FX call_function"} <= {f"FX {e['fx_node_op']}" for e in s.stacks.frame_extra.values()}
    assert {"tensor_name", "action 'segment_teleport'", "top-level 'memory_pools_v9'"} <= set(
        s.unknown_fields
    )
    d = summary.summary(s)["devices"][0]
    assert d["peak_allocated"] == sum(512 * (i + 1) for i in range(50))
    result = _run(path)
    assert result.returncode == 0 and "does not know (kept)" in result.stdout


def test_the_command_as_installed_gives_strict_json(tmp_path):
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(_snapshot(), protocol=4))
    result = _run(path, "--json", "--at", "250")
    assert result.returncode == 0 and result.stderr == ""

    def no_constant(name):
        raise AssertionError(f"not JSON: {name}")

    out = json.loads(result.stdout, parse_constant=no_constant)
    d = out["devices"][0]
    for key in (
        "peak_allocated",
        "peak_time_us",
        "top_at_peak",
        "reserved",
        "allocated",
        "largest_free",
        "events",
        "ooms",
    ):
        assert key in d
    assert d["peak_allocated"] == sum(512 * (i + 1) for i in range(50))
    assert d["peak_time_us"] == 490
    assert d["ooms"] == [
        {
            "entry": 75,
            "time_us": 99_999,
            "requested": 1 << 34,
            "device_free": 1 << 20,
            "allocated": d["peak_allocated"] - sum(512 * (i + 1) for i in range(0, 50, 2)),
        }
    ]
    top = d["top_at_peak"][0]
    assert top["count"] == 50 and top["site"] == "/home/ada/train.py:88 in step"
    assert [f["name"] for f in top["frames"]] == ["forward", "backward", "step"]
    assert d["at"]["allocated"] == sum(512 * (i + 1) for i in range(26))  # entries 0..25: t <= 250


def test_two_files_give_their_difference(tmp_path):
    a, b = tmp_path / "a.pickle", tmp_path / "b.pickle"
    a.write_bytes(pickle.dumps(_snapshot(10), protocol=4))
    b.write_bytes(pickle.dumps(_snapshot(20), protocol=4))
    out = json.loads(_run(a, b, "--json").stdout)
    dev = out["difference"]["devices"][0]
    assert dev["peak_allocated"]["delta"] == sum(512 * (i + 1) for i in range(20)) - sum(
        512 * (i + 1) for i in range(10)
    )
    assert dev["top_changes_at_peak"][0]["delta"] == dev["peak_allocated"]["delta"]
    text = _run(a, b).stdout
    assert "difference (second - first):" in text and "peak +" in text


def test_a_device_the_file_does_not_have_is_said(tmp_path):
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(_snapshot(), protocol=4))
    result = _run(path, "--device", "3")
    assert result.returncode == 2 and "no device 3" in result.stderr


def test_a_stack_frame_cannot_drive_the_terminal(tmp_path):
    snap = _snapshot()
    snap["device_traces"][0][0]["frames"] = [
        {"filename": "/home/x/\x1b[2Jevil.py", "line": 1, "name": "f\rforged"}
    ]
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    out = _run(path).stdout
    assert "\x1b" not in out and "\r" not in out and "\\x1b[2Jevil.py" in out


def test_loading_reports_progress_and_can_be_cancelled(tmp_path):
    path = tmp_path / "big.pickle"
    path.write_bytes(pickle.dumps(_snapshot(40_000), protocol=4))
    seen = []
    reading.read(path, on_progress=lambda done, size: seen.append((done, size)))
    assert seen and seen[-1][1] == os.path.getsize(path) and seen == sorted(seen)
    with pytest.raises(Cancelled):
        reading.read(path, cancelled=lambda: True)


def test_vramscopes_own_memory_viz_pickle_opens_back_exactly(tmp_path):
    """The agent's OOM / allocation-sites capture (agent/oom.dump_snapshot), which
    `vramscope export` copies byte for byte, reads back as the same snapshot."""
    snap = _snapshot()
    path = oom.dump_snapshot(snap, pid=4242, directory=str(tmp_path))
    assert safe_load.load(path) == snap
    d = summary.summary(reading.read(path))["devices"][0]
    assert d["events"] == len(snap["device_traces"][0]) and len(d["ooms"]) == 1


def test_each_device_on_its_own(tmp_path):
    snap = _snapshot(10)
    second = [
        dict(e, addr=e.get("addr", 0) + (1 << 40), size=e["size"] * 3) for e in snap["device_traces"][0]
    ]
    snap["device_traces"].append(second)
    snap["segments"].append(dict(snap["segments"][0], device=1, address=1 << 41))
    path = tmp_path / "two.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    both = json.loads(_run(path, "--json").stdout)["devices"]
    assert [d["device"] for d in both] == [0, 1]
    assert (
        both[1]["peak_allocated"] == 3 * both[0]["peak_allocated"]
        and both[1]["reserved"] == both[0]["reserved"]
    )
    one = json.loads(_run(path, "--json", "--device", "1").stdout)["devices"]
    assert one == [both[1]]


def test_a_file_too_big_for_this_machines_memory_is_refused_before_reading():
    from vramscope.core.snapshot.reading import memory_refusal

    said = memory_refusal("huge.pickle", 5 << 30, available=20 << 30)
    assert said.startswith(
        "huge.pickle is 5.0 GiB: reading it needs about 25.0 GiB of memory and 20.0 GiB is free"
    )
    assert memory_refusal("small.pickle", 1 << 30, available=20 << 30) is None
    assert memory_refusal("unknown.pickle", 5 << 30, available=None) is None  # no figure: it is tried

"""`vramscope export --format oom-report` of a session that is damaged or holds another
process's hostile text: what could not be read is said (never "no out-of-memory
event" alone), the terminal controls of a process name and of the OOM data are
escaped, and wrong types or NaN in the OOM data give "n/a", not a traceback."""

from __future__ import annotations

import dataclasses
import os
import shutil

import pytest

from tests.core.session.helpers import T0, frame, record
from vramscope.cli import main
from vramscope.core.samples import AgentEvent, Frame
from vramscope.core.session import SessionWriter
from vramscope.core.store.store import Store

GiB = 1 << 30
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")  # ESC, BEL, 8-bit CSI, a bidi override
HOSTILE = "ev\x1b]0;pwned\x07il\x9b31m\u202egnp.exe"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A recorded session of 600 passes with an OOM event half way."""
    path = tmp_path_factory.mktemp("intact") / "run.vramscope"
    record(path, n=600, oom_at=300)
    return path


def export(path, tmp_path, capsys) -> tuple[int, str, str, str | None]:
    out = tmp_path / "report.md"
    rc = main(["export", str(path), "--format", "oom-report", "--out", str(out)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err, out.read_text() if out.exists() else None


def test_the_intact_session_reports_its_oom(recorded, tmp_path, capsys):
    rc, out, err, md = export(recorded, tmp_path, capsys)
    assert rc == 0 and "wrote 1 OOM reports" in out and err == ""
    assert "CUDA out of memory on cuda:0" in md and "could not be read" not in md


@pytest.mark.parametrize("cut", ["4KiB", "10%", "25%"])
def test_a_truncated_session_says_what_could_not_be_read(recorded, tmp_path, capsys, cut):
    path = tmp_path / "cut.vramscope"
    shutil.copy(recorded, path)
    size = os.path.getsize(path)
    keep = {"4KiB": 4096, "10%": size // 10, "25%": size // 4}[cut]
    with open(path, "r+b") as f:
        f.truncate(keep)
    rc, out, err, md = export(path, tmp_path, capsys)
    assert "Traceback" not in err
    assert rc == 0 and "wrote 0 OOM reports" in out
    assert "the session file is damaged" in err and "truncated" in err  # on the terminal
    # and in the report itself: never "no out-of-memory event" alone
    assert "No out-of-memory event in this session" not in md
    assert "No out-of-memory event could be read" in md
    assert "## What could not be read" in md and "truncated" in md


def hostile_session(path):
    """One pass whose trainer is named with terminal controls, with an OOM event whose
    data holds controls, NaN and values of the wrong types."""
    store = Store()
    writer = SessionWriter(path)
    store.listeners.subscribe(writer)
    base = frame(0)
    trainer = base.gpus[0].processes[0]
    evil = dataclasses.replace(trainer, info=dataclasses.replace(trainer.info, name=HOSTILE))
    gpu = dataclasses.replace(base.gpus[0], processes=(evil,))
    data = {
        "device": "cuda:0\x1b[2J",
        "requested": 2 * GiB,
        "device_free": float("nan"),
        "device_total": "24 GiB",
        "allocated": {"a": 1},
        "step": 7,
        "buckets": {"weights": float("inf"), "gradients": "x", "other_allocated": 3 * GiB},
        "allocator": "not an object",
        "modules": ["a string", {"name": "blk\x07.0", "activations": GiB, "weights": float("nan")}],
        "tensors": [
            "x",
            {"bytes": GiB, "shape": "abc", "dtype": "f\x9b32", "site": "\x1b[31mtrain.py:9"},
            {"bytes": 2, "shape": [1], "site": 5},
        ],
        "gpu_processes": [{"pid": 5151, "name": "\u202eneighbour", "used": GiB}, "junk"],
    }
    agent = dataclasses.replace(base.agents[0], events=(AgentEvent("oom", T0 + 1, data),))
    store.append(Frame(time=T0 + 1, gpus=(gpu,), agents=(agent,)))
    writer.close()


def test_terminal_controls_from_other_processes_are_escaped_and_bad_values_are_na(tmp_path, capsys):
    path = tmp_path / "hostile.vramscope"
    hostile_session(path)
    rc, out, err, md = export(path, tmp_path, capsys)
    assert rc == 0 and "wrote 1 OOM reports" in out and "Traceback" not in err
    assert not any(c in md for c in CONTROLS), [c for c in CONTROLS if c in md]
    assert "PID 4242 (ev\\x1b]0;pwned\\x07il\\x9b31m\\u202egnp.exe)" in md
    assert "CUDA out of memory on cuda:0\\x1b[2J at step 7" in md
    assert "\\x1b[31mtrain.py:9" in md and "| 5151 | \\u202eneighbour | 1.0 GiB |" in md
    assert "- free on the device: n/a of n/a" in md  # NaN and a string: not available
    assert "| blk\\x07.0 | n/a |" in md  # the module kept, its NaN weights n/a


def test_a_redacted_report_of_hostile_data_is_written_too(tmp_path, capsys):
    path = tmp_path / "hostile.vramscope"
    hostile_session(path)
    out = tmp_path / "redacted.md"
    assert main(["export", str(path), "--format", "oom-report", "--redact", "--out", str(out)]) == 0
    md = out.read_text()
    assert "Traceback" not in capsys.readouterr().err and not any(c in md for c in CONTROLS)
    assert "\\x1b[31mtrain.py:9" in md and "at 5" not in md  # a site that is no text: none


def test_the_csv_export_writes_the_oom_data_as_strict_json(tmp_path, capsys):
    import csv
    import json

    path = tmp_path / "hostile.vramscope"
    hostile_session(path)
    assert main(["export", str(path), "--out", str(tmp_path / "run.csv")]) == 0
    with open(tmp_path / "run.csv", newline="") as f:
        [cell] = [row[-1] for row in csv.reader(f) if "event.oom" in row]

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    data = json.loads(cell, parse_constant=refuse)  # RFC 8259: no NaN, no Infinity
    assert data["device_free"] is None and data["buckets"]["weights"] is None
    assert data["requested"] == 2 * GiB

"""Files damaged inside their rows (flipped bits, text where numbers belong,
bad blobs, dropped tables): what can be read opens, the rest is said in one
line per kind of damage -- never a traceback, never the whole file refused."""

from __future__ import annotations

import random
import shutil
import sqlite3

import pytest

from vramscope.core.export import FORMATS
from vramscope.core.session import SessionError, load_into_store, open_session

from .helpers import T0, record

N = 60


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = tmp_path_factory.mktemp("healthy") / "healthy.vramscope"
    record(path, n=N)
    return path


def _copy(healthy, tmp_path, name="damaged.vramscope"):
    out = tmp_path / name
    shutil.copy(healthy, out)
    return out


def _edit(path, *statements):
    db = sqlite3.connect(path)
    for sql in statements:
        db.execute(sql)
    db.commit()
    db.close()


def _read_everything(path, tmp_path):
    """What the window and `export` do with a file; returns the reader's problems."""
    with open_session(path) as reader:
        store = load_into_store(reader)
        assert store.latest is not None
        for fmt, export in FORMATS.items():
            summary = export(reader, tmp_path / f"out.{fmt}")
            assert summary.rows > 0 or fmt == "oom-report"  # (this session has no OOM to report)
        assert all("\n" not in p for p in reader.problems)
        return list(reader.problems), len(reader)


@pytest.mark.parametrize(
    "what, statements, lost_frames",
    [
        (
            "text in a number",
            [
                "UPDATE gpu_samples SET used = 'lots' WHERE t = %(t)s",
                "UPDATE gpu_samples SET temperature = 'NaN' WHERE gpu = 0",
            ],
            0,
        ),
        ("a bad blob", ["UPDATE proc_samples SET ids = x'0102' WHERE t = %(t)s AND gpu = 0"], 0),
        (
            "wrong types",
            [
                "UPDATE processes SET pid = 'abc' WHERE pid = 900",
                "UPDATE frames SET t = 'yesterday' WHERE t = %(t)s",
                "UPDATE agent_samples SET allocated = x'00' WHERE t = %(t)s",
            ],
            1,
        ),
        ("a time far in the future", ["UPDATE frames SET t = 1e300 WHERE t = %(t)s"], 1),
        ("dropped tables", ["DROP TABLE gpus", "DROP TABLE alerts", "DROP TABLE agent_info"], 0),
    ],
)
def test_damaged_rows_lose_only_themselves(healthy, tmp_path, what, statements, lost_frames):
    path = _copy(healthy, tmp_path)
    _edit(path, *(s % {"t": T0 + 5} for s in statements))
    problems, frames = _read_everything(path, tmp_path)
    assert frames == N - lost_frames  # the rest of the file is all there
    if what != "dropped tables":
        assert problems, what


def test_a_dropped_process_table_keeps_the_gpu_history(healthy, tmp_path):
    path = _copy(healthy, tmp_path)
    _edit(path, "DROP TABLE processes")
    with open_session(path) as reader:
        store = load_into_store(reader)
        assert len(reader) == N and store.latest.gpus
        assert any("process list" in p for p in reader.problems)


@pytest.mark.parametrize("seed", range(25))
def test_bit_flips_never_end_in_a_traceback(healthy, tmp_path, seed):
    data = bytearray(healthy.read_bytes())
    rnd = random.Random(seed)
    for _ in range(20):
        i = rnd.randrange(100, len(data))
        data[i] ^= 1 << rnd.randrange(8)
    path = tmp_path / "flipped.vramscope"
    path.write_bytes(bytes(data))
    try:
        with open_session(path) as reader:
            load_into_store(reader)
            for fmt, export in FORMATS.items():
                export(reader, tmp_path / f"out.{fmt}")
    except SessionError as exc:  # refused: in one line
        assert "\n" not in str(exc)


def test_a_healthy_file_with_a_255_byte_name_is_not_called_damaged(healthy, tmp_path):
    """SQLite cannot add '-shm' to such a name; the file itself is fine."""
    path = _copy(healthy, tmp_path, "r" * (255 - len(".vramscope")) + ".vramscope")
    with open_session(path) as reader:
        assert len(reader) == N and not reader.damaged
        assert load_into_store(reader).latest is not None

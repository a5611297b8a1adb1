"""Bad option values: one line on stderr, exit status 2, nothing run, nothing lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from fakenvml import FakeGpu, FakeState, subprocess_env
from vramscope.cli import main
from vramscope.core.session.library import default_directory
from vramscope.core.units import GiB


def _refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    return exc.value.code, err


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--watch", "nan"],
        ["status", "--watch", "inf"],
        ["status", "--watch", "-1"],
        ["status", "--interval", "nan"],
        ["status", "--interval", "0"],
        ["status", "--idle-minutes", "nan"],
        ["status", "--leak-steps", "-3"],
        ["record", "--duration", "nan"],
        ["record", "--duration", "inf"],
        ["record", "--duration", "-5"],
        ["record", "--interval", "nan"],
        ["record", "--interval", "1e9"],
        ["record", "--keep-gb", "-1"],
        ["record", "--keep-days", "-1"],
        ["record", "--keep-gb", "nan"],
        ["record", "--keep-gb", "0"],
        ["record", "--prometheus", "localhost:http"],
        ["--interval", "nan"],
        ["--interval", "inf"],
        ["--prometheus", "99999"],
        ["--prometheus", "[::1"],
        ["--demo", "--interval", "nan", "session.vramscope"],
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(argv, capsys):
    code, err = _refused(argv, capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("vramscope") and "Traceback" not in err
    flag = next(a for a in argv if a.startswith("--") and a != "--demo")
    assert flag in err  # names the option at fault


def test_negative_retention_deletes_nothing(capsys):
    """`record --keep-gb -1` once removed every older session."""
    directory = default_directory()
    directory.mkdir(parents=True)
    old = directory / "2020-01-01_00-00-00_box.vramscope"
    old.write_bytes(b"SQLite format 3\x00" + bytes(100))
    for flag in ("--keep-gb", "--keep-days"):
        code, _ = _refused(["record", "--demo", "--duration", "0.2", flag, "-1"], capsys)
        assert code == 2
    assert old.exists()


def test_keep_gb_is_gib_like_the_settings(capsys):
    """Two older sessions of 0.52 GB each: over a 1 GB cap, under a 1 GiB one."""
    directory = default_directory()
    directory.mkdir(parents=True)
    olds = []
    for k in range(2):
        p = directory / f"2020-01-0{k + 1}_00-00-00_box.vramscope"
        with open(p, "wb") as f:  # sparse: costs no disk
            f.truncate(520_000_000)
        os.utime(p, (time.time() - 3600 + k, time.time() - 3600 + k))
        olds.append(p)
    assert main(["record", "--demo", "--duration", "0.3", "--keep-gb", "1"]) == 0
    assert all(p.exists() for p in olds)  # 1.04e9 bytes < 1 GiB
    assert 1.04e9 < GiB


def test_vramscope_run_refuses_a_nan_interval(capsys):
    assert main(["run", "--interval", "nan", "--", sys.executable, "-c", "pass"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vramscope run: --interval:") and "finite" in err


def test_record_without_a_driver_says_so_and_writes_nothing(tmp_path, fake_nvml_files):
    fake_nvml_files.write(FakeState(driver_loaded=False, gpus=[FakeGpu()]))
    out = tmp_path / "never.vramscope"
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "record", "--out", str(out), "--duration", "1"],
        env=fake_nvml_files.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1 and "nothing recorded" in r.stderr
    assert "driver" in r.stderr.lower()
    assert not out.exists()


def test_record_without_the_library_says_so(tmp_path):
    empty = tmp_path / "nolib"
    empty.mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "record", "--duration", "1"],
        env=subprocess_env(empty, None),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if r.returncode == 0:
        pytest.skip("a real libnvidia-ml is installed on this machine")
    assert r.returncode == 2 and "nothing recorded" in r.stderr
    assert not default_directory().exists() or not list(default_directory().iterdir())


def test_a_300_character_name_is_one_line_and_leaves_nothing(tmp_path, capsys):
    long = tmp_path / ("x" * 300 + ".vramscope")
    assert main(["record", "--demo", "--duration", "0.2", "--out", str(long)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "choose a shorter" in err
    assert list(tmp_path.iterdir()) == []

"""`vramscope plan` as installed reads in the model's scale (MiB for a small one) and
names buckets as the agents tab does (never `optimizer_state`)."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

APP = pathlib.Path(__file__).resolve().parents[3] / "app"


def _plan(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "vramscope", "plan", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(APP)),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_small_model_reads_in_mib_with_readable_bucket_names():
    out = _plan("--params", "10M", "--gpu-memory", "24GiB")
    assert "MiB (2^20)" in out and "GiB (2^30)" not in out
    assert re.search(r"^optimizer state\s+80,000,000\s+80.00 MB\s+76.29 MiB$", out, re.M)
    assert "Fits: 152.59 MiB per GPU" in out and "0.15 GiB" not in out
    assert "_" not in out.split("Why each bucket:")[0]  # no snake_case names in the table
    assert "\n  master weights: " in out  # ... nor in why each bucket holds what it does


def test_offloaded_state_is_named_in_words_and_a_big_model_stays_in_gib():
    out = _plan("--params", "125M", "--gpu-memory", "24GiB", "--offload-optimizer")
    assert re.search(r"^host RAM: optimizer state\s+1,500,000,000", out, re.M)
    assert "optimizer_state" not in out
    big = _plan("--params", "7B", "--gpu-memory", "24GiB")
    assert "GiB (2^30)" in big and "needs 104.31 GiB per GPU" in big

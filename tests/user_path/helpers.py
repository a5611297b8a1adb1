"""What the user-path tests share: a training process under `vramscope run`
and the check that no process printed a traceback."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

CPU_TRAIN = Path(__file__).resolve().parents[1] / "agent" / "cpu_train.py"
TRACEBACK = "Traceback (most recent call last)"


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert TRACEBACK not in (text or ""), text


class Training:
    """`vramscope run -- python cpu_train.py` holding on after its steps (until released)."""

    def __init__(self, tmp_path: Path, steps: int = 30, runtime: str | None = None):
        self.runtime = runtime or tempfile.mkdtemp(prefix="vs-")  # AF_UNIX paths are short
        self.out, self.release = tmp_path / "run.json", tmp_path / "release"
        self.stderr = tmp_path / "training.err"
        env = dict(os.environ, CPU_TRAIN_WAIT=str(self.release), VRAMSCOPE_RUNTIME_DIR=self.runtime)
        with open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "vramscope",
                    "run",
                    "--",
                    sys.executable,
                    str(CPU_TRAIN),
                    str(self.out),
                ]
                + [str(steps), "0.02"],
                env=env,
                stderr=err,
            )
        deadline = time.monotonic() + 60
        while not (self.out.exists() and json.loads(self.out.read_text())["steps_done"] == steps):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.proc.kill()
                pytest.fail(
                    "the training script did not finish its steps: " + self.stderr.read_text()[-2000:]
                )
            time.sleep(0.05)
        self.run = json.loads(self.out.read_text())

    @property
    def pid(self) -> int:
        return self.run["pid"]

    def close(self) -> None:
        self.release.touch()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        no_traceback(self.stderr.read_text())


def window_args(**over) -> argparse.Namespace:
    """The window's options as `vramscope --demo --busy` gives them (``over`` on top)."""
    values = dict(
        demo=True,
        busy=True,
        seed=1,
        interval=0.3,
        window="1m",
        record=False,
        read_only=False,
        prometheus=None,
        file=None,
        host=None,
        from_prometheus=None,
    )
    values.update(over)
    return argparse.Namespace(**values)

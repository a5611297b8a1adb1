"""Real processes in real cgroups, laid out as slurmd and the kubelet lay them out.

``staged(layout_path, version, env=None)`` starts a `sleep`, creates the cgroup
``layout_path`` in the v1 ``pids`` hierarchy or the v2 (unified) one, moves the
process there (cgroup.procs: cgroups(7), the kernel's cgroup-v2 docs), and
after the test ends the process and removes exactly the directories it made.
Where the machine does not allow it (not root, no writable hierarchy) the
test is skipped with the reason.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import time

import pytest

CGROUP = pathlib.Path("/sys/fs/cgroup")


def hierarchy(version: int) -> pathlib.Path | None:
    """The mounted hierarchy to stage in: v1's pids controller, or v2 (pure or the hybrid's unified)."""
    if version == 1:
        root = CGROUP / "pids"
        return root if (root / "tasks").exists() else None
    if (CGROUP / "cgroup.controllers").exists():
        return CGROUP
    unified = CGROUP / "unified"
    return unified if (unified / "cgroup.controllers").exists() else None


def why_not(version: int) -> str | None:
    if os.geteuid() != 0:
        return "creating cgroups and moving processes into them needs root"
    root = hierarchy(version)
    if root is None:
        return f"no cgroup v{version} hierarchy is mounted here"
    probe = root / f"vramscope-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"cgroup v{version} at {root} is not writable here: {exc.strerror}"
    return None


def _wait_asleep(pid: int) -> None:
    for _ in range(200):
        try:
            if pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] == "S":
                return
        except (OSError, IndexError):
            return
        time.sleep(0.02)


class Staging:
    """Cgroups made for a test and the processes started or moved into them; ``close()``
    ends the started ones and removes exactly the directories made."""

    def __init__(self):
        self.made: list[pathlib.Path] = []
        self.procs: list[subprocess.Popen] = []

    def move(self, pid: int, path: str, version: int) -> None:
        where = hierarchy(version)
        for part in path.strip("/").split("/"):
            where = where / part
            if not where.exists():
                where.mkdir()
                self.made.append(where)
        (where / "cgroup.procs").write_text(str(pid))

    def start(self, path: str, version: int, env: dict | None = None) -> int:
        proc = subprocess.Popen(["sleep", "300"], env={**os.environ, **(env or {})})
        self.procs.append(proc)
        self.move(proc.pid, path, version)
        _wait_asleep(proc.pid)
        return proc.pid

    def close(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()
        for d in reversed(self.made):
            for _ in range(50):  # the kernel takes a moment to let go of an exited task
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


@pytest.fixture
def staged():
    """staged(path, version, env=None) -> the pid of a `sleep` in cgroup ``path``."""
    staging = Staging()

    def stage(path: str, version: int, env: dict | None = None) -> int:
        reason = why_not(version)
        if reason is not None:
            pytest.skip(reason)
        return staging.start(path, version, env)

    yield stage
    staging.close()

"""Containers and PID namespaces, read from /proc (the root is injectable for tests).

- ``read_container(pid)``: the container from /proc/<pid>/cgroup and the PID
  inside its namespace from the ``NSpid:`` line of /proc/<pid>/status; both
  files are readable by every user, so no root is needed;
- ``ContainerNames``: a container's name from its runtime's API (Docker's or
  Podman's Docker-compatible ``GET /containers/<id>/json`` on a Unix socket),
  only where this user can open the socket; absent or refused -> no name,
  the short id is shown;
- ``host_pid_view()``: whether this process sees the host's PIDs. The
  initial PID namespace has the fixed inode ``PROC_PID_INIT_INO``
  (0xEFFFFFFC, include/linux/proc_ns.h), so ``/proc/self/ns/pid`` tells a
  container without ``--pid=host`` apart. A /proc mounted with ``hidepid``
  hides other users' processes from a non-root user: then a missing PID
  proves nothing either.
"""

from __future__ import annotations

import logging
import os
import re
import time
import urllib.parse

from vramscope.core.bounded_http import HttpError, get_json
from vramscope.core.containers import inner_pid, parse_cgroup, parse_nspid, with_name
from vramscope.core.samples import Container

log = logging.getLogger(__name__)

PROC = "/proc"
MAX_NAME = 256  # characters of a container name kept (Docker's are far shorter)
PROC_PID_INIT_INO = 0xEFFFFFFC
_NS_INODE = re.compile(r"^pid:\[(\d+)\]$")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_container(pid: int, proc_root: str = PROC) -> tuple[Container | None, int | None]:
    """(container or None, PID inside its namespace or None)."""
    cgroup = _read(f"{proc_root}/{pid}/cgroup")
    status = _read(f"{proc_root}/{pid}/status")
    container = parse_cgroup(cgroup) if cgroup else None
    ns_pid = inner_pid(parse_nspid(status)) if status else None
    return container, ns_pid


def host_pid_view(proc_root: str = PROC) -> bool | None:
    """True: our PID namespace is the host's (initial) one; False: a container's
    own; None: cannot tell (no /proc, not Linux)."""
    try:
        link = os.readlink(f"{proc_root}/self/ns/pid")
    except OSError:
        return None
    m = _NS_INODE.match(link)
    if not m:
        return None
    return int(m.group(1)) == PROC_PID_INIT_INO


def proc_hides_pids(proc_root: str = PROC) -> bool:
    """True when /proc is mounted with hidepid (other users' PIDs hidden) and we are not root."""
    if os.geteuid() == 0:
        return False
    text = _read(f"{proc_root}/self/mountinfo") or ""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4] == PROC and " - proc " in line:
            options = line.split(" - ", 1)[1].split()[-1]
            for opt in options.split(","):
                if opt.startswith("hidepid=") and opt.split("=", 1)[1] not in ("0", "off"):
                    return True
    return False


# -- names from the runtime's API -------------------------------------------------------


def default_sockets() -> dict[str, list[str]]:
    """Runtime -> API sockets to try: the system one, then the user's (rootless)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    docker = ["/var/run/docker.sock"]
    podman = ["/run/podman/podman.sock"]
    if xdg:
        docker.append(os.path.join(xdg, "docker.sock"))
        podman.append(os.path.join(xdg, "podman", "podman.sock"))
    return {"docker": docker, "podman": podman}


class ContainerNames:
    """Names by container id, asked once per id; a socket that fails is left
    alone for ``retry_after`` seconds, so a dead daemon costs nothing per pass."""

    def __init__(
        self,
        sockets: dict[str, list[str]] | None = None,
        timeout: float = 0.3,
        retry_after: float = 60.0,
        clock=time.monotonic,
        budget: float = 1.0,
        budget_window: float = 10.0,
    ):
        self._sockets = sockets
        self.timeout = timeout
        self.retry_after = retry_after
        self._clock = clock
        self._names: dict[str, str | None] = {}
        self._down: dict[str, float] = {}
        self.asked = 0  # API requests made, for tests
        # at most ``budget`` seconds of API requests per ``budget_window``: a daemon that
        # answers every request slowly (within the timeout) cannot stall a pass of many
        # new containers; the names not asked yet are asked in a later window
        self.budget, self.budget_window = budget, budget_window
        self._window_start, self._spent = float("-inf"), 0.0

    def name(self, container: Container) -> Container:
        """The container with its name filled in where the runtime says it."""
        if container.id is None or container.name is not None:
            return container
        if container.id not in self._names:
            now = self._clock()
            if now - self._window_start > self.budget_window:
                self._window_start, self._spent = now, 0.0
            if self._spent >= self.budget:
                return container  # this window's time is spent: asked in a later one
            name = self._ask(container.runtime, container.id)
            self._spent += self._clock() - now
            if name is None and self._any_down():
                return container  # not known yet: asked again once the socket is back
            self._names[container.id] = name
        return with_name(container, self._names[container.id])

    def _any_down(self) -> bool:
        now = self._clock()
        return any(now < until for until in self._down.values())

    def _ask(self, runtime: str, cid: str) -> str | None:
        sockets = self._sockets if self._sockets is not None else default_sockets()
        # Docker's API also answers for containerd-run pods it created; podman's for its own
        order = [runtime] + [r for r in sockets if r != runtime]
        for rt in order:
            for path in sockets.get(rt, ()):
                if self._clock() < self._down.get(path, float("-inf")):
                    continue
                if not os.access(path, os.R_OK | os.W_OK):
                    continue
                try:
                    name = self._get(path, cid)
                except (OSError, HttpError, ValueError) as exc:
                    log.debug("container API %s: %s", path, exc)
                    self._down[path] = self._clock() + self.retry_after
                    continue
                self._down.pop(path, None)
                if name:
                    return name
        return None

    def _get(self, path: str, cid: str) -> str | None:
        """The runtime's name for ``cid``: one request of ``timeout`` seconds and
        1 MiB in all, nesting bounded (core/bounded_http.py); a socket that
        trickles or answers nonsense is left alone for ``retry_after``."""
        self.asked += 1
        status, data = get_json(
            f"http://localhost/containers/{urllib.parse.quote(cid)}/json",
            deadline=self.timeout,
            max_bytes=1 << 20,
            unix_socket=path,
        )
        if status != 200:
            return None
        name = data.get("Name") if isinstance(data, dict) else None
        return name.lstrip("/")[:MAX_NAME] if isinstance(name, str) and name else None

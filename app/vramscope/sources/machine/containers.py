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

from vramscope.core.safe_io.bounded_http import HttpError, get_json
from vramscope.core.processes.containers import (
    KUBERNETES_RUNTIMES,
    inner_pid,
    parse_cgroup,
    parse_nspid,
    with_naming,
)
from vramscope.core.samples import Container
from vramscope.core.flow.time_budget import TimeBudget
from vramscope.sources.machine.cri_names import (
    CONTAINERD_BUNDLES,
    MAX_NAME,
    Naming,
    containerd_naming,
    crio_naming,
    crio_sockets,
)

log = logging.getLogger(__name__)

PROC = "/proc"
PROC_PID_INIT_INO = 0xEFFFFFFC
_NS_INODE = re.compile(r"^pid:\[(\d+)\]$")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_cgroup(pid: int, proc_root: str = PROC) -> str | None:
    """The text of /proc/<pid>/cgroup (the kernel's, one line per hierarchy), or None."""
    return _read(f"{proc_root}/{pid}/cgroup")


def read_container(
    pid: int, proc_root: str = PROC, cgroup: str | None = None
) -> tuple[Container | None, int | None]:
    """(container or None, PID inside its namespace or None); ``cgroup``: the
    process's cgroup text where the caller has read it."""
    cgroup = read_cgroup(pid, proc_root) if cgroup is None else cgroup
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
    alone for ``retry_after`` seconds, so a dead daemon costs nothing per pass.

    A Kubernetes container (containerd, CRI-O) is named from its runtime first
    (sources/machine/cri_names.py: pod, namespace, container); Docker's and Podman's
    APIs are asked after that (Docker names dockershim's pods k8s_...)."""

    def __init__(
        self,
        sockets: dict[str, list[str]] | None = None,
        timeout: float = 0.3,
        retry_after: float = 60.0,
        clock=time.monotonic,
        budget: float = 1.0,
        budget_window: float = 10.0,
        crio_sockets: tuple[str, ...] | None = None,
        containerd_bundles: str = CONTAINERD_BUNDLES,
    ):
        self._sockets = sockets
        self.timeout = timeout
        self._clock = clock
        self._names: dict[str, Naming | None] = {}
        self.asked = 0  # API requests made, for tests
        # at most ``budget`` seconds of API requests per ``budget_window``: a daemon that
        # answers every request slowly (within the timeout) cannot stall a pass of many
        # new containers; the names not asked yet are asked in a later window
        self._budget = TimeBudget(budget, budget_window, retry_after, clock)
        self.crio_sockets, self.containerd_bundles = crio_sockets, containerd_bundles

    def name(self, container: Container) -> Container:
        """The container with its name filled in where the runtime says it."""
        if container.id is None or container.name is not None:
            return container
        if container.id not in self._names:
            if not self._budget.allows():
                return container  # this window's time is spent: asked in a later one
            now = self._clock()
            naming = self._ask(container.runtime, container.id)
            self._budget.spend(now)
            if naming is None and self._budget.any_down():
                return container  # not known yet: asked again once the socket is back
            self._names[container.id] = naming
        return with_naming(container, self._names[container.id])

    def _ask(self, runtime: str, cid: str) -> Naming | None:
        if runtime in KUBERNETES_RUNTIMES:
            naming = self._ask_cri(cid)
            if naming is not None:
                return naming
        sockets = self._sockets if self._sockets is not None else default_sockets()
        # Docker's API also answers for containerd-run pods it created; podman's for its own
        order = [runtime] + [r for r in sockets if r != runtime]
        for rt in order:
            for path in sockets.get(rt, ()):
                name = self._socket(path, lambda p: self._get(p, cid))
                if name:
                    return (name, None, None)
        return None

    def _ask_cri(self, cid: str) -> Naming | None:
        naming = containerd_naming(self.containerd_bundles, cid)
        sockets = self.crio_sockets if self.crio_sockets is not None else crio_sockets()
        for path in sockets if naming is None else ():
            naming = self._socket(path, lambda p: self._crio(p, cid))
            if naming is not None:
                break
        return naming

    def _socket(self, path: str, ask):
        """``ask(path)``'s answer where this user may open the socket and it answers;
        a socket that fails is left alone for ``retry_after``."""
        if self._budget.is_down(path) or not os.access(path, os.R_OK | os.W_OK):
            return None
        try:
            answer = ask(path)
        except (OSError, HttpError, ValueError) as exc:
            log.debug("container API %s: %s", path, exc)
            self._budget.down(path)
            return None
        self._budget.up(path)
        return answer

    def _crio(self, path: str, cid: str) -> Naming | None:
        self.asked += 1
        return crio_naming(path, cid, self.timeout)

    def _get(self, path: str, cid: str) -> str | None:
        """The runtime's name for ``cid``: one request of ``timeout`` seconds and
        1 MiB in all, nesting bounded (core/safe_io/bounded_http.py); a socket that
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

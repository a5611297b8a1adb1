"""Process details from psutil, cached per identity (pid + start time).

NVML gives PIDs; this adds user, command line, name, start time, parent and
status. What does not change for a process (user, command, name, start time)
is read once per identity; status and parent are re-read each pass from the
one /proc/<pid>/stat read that the identity check needs anyway -- the read
a pass makes of each process once, for this and for its host CPU and memory
(sources/machine/proc_stat.py).

A PID that psutil cannot see is never a crash or an empty cell:
- ``access-denied``: it exists, but its details are not readable from here;
- ``exited``: we saw it before and it is gone (or is a zombie);
- ``not-visible``: never visible here -- another PID namespace (a container)
  or hidden by /proc mount options;
- ``no-such-process``: no /proc entry while this monitor sees every host PID
  (its own PID namespace is the host's and /proc hides nothing): the driver
  lists a process that does not exist (a ghost).

Each identity also carries its container (cgroup path), its PID inside
its own namespace (NSpid) and its Slurm job, read once (sources/machine/containers.py,
sources/machine/slurm.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

import psutil

from vramscope.core.processes.process_text import capped_cmdline
from vramscope.core.samples import (
    ACCESS_DENIED,
    EXITED,
    GHOST,
    NOT_VISIBLE,
    VISIBLE,
    ProcessInfo,
)
from vramscope.sources.machine.proc_environ import read_environ
from vramscope.sources.machine.containers import (
    PROC,
    ContainerNames,
    host_pid_view,
    proc_hides_pids,
    read_cgroup,
    read_container,
)
from vramscope.sources.machine.proc_stat import ProcStat, read_stat
from vramscope.sources.machine.slurm import SlurmJobs

_STATIC_ATTRS = ("username", "cmdline", "name")
_UNREAD = object()  # lookup(): no /proc/<pid>/stat read was handed in


JUPYTER_SESSION = "JPY_SESSION_NAME"


class ProcessCache:
    """``host_pids``: whether this monitor sees the host's PIDs (None: read it
    from /proc/self/ns/pid); ``names``: container names from the runtimes' APIs;
    ``jobs``: Slurm jobs' names (sources/machine/slurm.py)."""

    def __init__(
        self,
        host_pids: bool | None = None,
        names: ContainerNames | None = None,
        proc_root: str = PROC,
        jobs: SlurmJobs | None = None,
    ):
        self._known: dict[int, ProcessInfo] = {}  # pid -> last info for its identity
        self._ticks: dict[int, int] = {}  # pid -> start ticks of the cached identity
        self.reads = 0  # full (static) reads done, for tests and benches
        self._fast = os.path.exists(f"/proc/{os.getpid()}/stat")
        self.proc_root = proc_root
        self.host_pids = host_pid_view(proc_root) if host_pids is None else host_pids
        # a missing PID means "no such process" only when every PID would be visible
        self.sees_all = bool(self.host_pids) and not proc_hides_pids(proc_root)
        self.names = names if names is not None else ContainerNames()
        self.jobs = jobs if jobs is not None else SlurmJobs()

    def lookup(self, pid: int, stat: ProcStat | None | object = _UNREAD) -> ProcessInfo:
        """``stat``: this pass's read of /proc/<pid>/stat where the caller has
        one (sources/machine/proc_stat.py); read here otherwise."""
        cached = self._known.get(pid)
        if self._fast and cached is not None and pid in self._ticks:
            if stat is _UNREAD:
                stat = read_stat(pid)
            if stat is not None and stat.start_ticks == self._ticks[pid]:
                return self._refresh(cached, stat.status, stat.ppid)
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                start = proc.create_time()
                status = _safe(proc.status)
                ppid = _safe(proc.ppid)
        except psutil.NoSuchProcess:
            if cached is not None and cached.visibility in (GHOST, NOT_VISIBLE):
                return cached
            if self.sees_all:
                info = (
                    dataclasses.replace(cached, visibility=GHOST, status="exited")
                    if cached is not None
                    else ProcessInfo(pid=pid, visibility=GHOST)
                )
            elif cached is not None:
                info = dataclasses.replace(cached, visibility=EXITED, status="exited")
            else:
                info = ProcessInfo(pid=pid, visibility=NOT_VISIBLE)
            self._known[pid] = info
            self._ticks.pop(pid, None)
            return info
        except psutil.AccessDenied:
            if cached is not None and cached.visibility == ACCESS_DENIED:
                return cached
            info = ProcessInfo(pid=pid, visibility=ACCESS_DENIED, **self._container(pid))
            self._known[pid] = info
            return info

        same = (
            cached is not None
            and cached.start_time == start
            and cached.visibility in (VISIBLE, ACCESS_DENIED)
        )
        # An orphan is re-parented by the kernel, so the parent check is redone
        # only when ppid changes.
        if same and cached.ppid == ppid:
            parent_alive = cached.parent_alive
        else:
            parent_alive = None if ppid is None else _parent_alive(ppid)
        if same:
            if cached.status == status and cached.ppid == ppid:
                return cached
            info = dataclasses.replace(cached, status=status, ppid=ppid, parent_alive=parent_alive)
        else:  # new identity (first sight, or the PID was reused): full read
            info = self._full_read(proc, pid, start, status, ppid, parent_alive)
        if status == psutil.STATUS_ZOMBIE:
            info = dataclasses.replace(info, visibility=EXITED)
        self._known[pid] = info
        if self._fast and info.visibility in (VISIBLE, ACCESS_DENIED):
            stat = read_stat(pid)
            if stat is not None:
                self._ticks[pid] = stat.start_ticks
        return info

    def _refresh(self, cached: ProcessInfo, status: str, ppid: int) -> ProcessInfo:
        """Same identity: only status and parent can have changed."""
        if cached.status == status and cached.ppid == ppid:
            return cached
        parent_alive = cached.parent_alive if cached.ppid == ppid else _parent_alive(ppid)
        info = dataclasses.replace(cached, status=status, ppid=ppid, parent_alive=parent_alive)
        if status == psutil.STATUS_ZOMBIE:
            info = dataclasses.replace(info, visibility=EXITED)
        self._known[cached.pid] = info
        return info

    def _full_read(self, proc, pid, start, status, ppid, parent_alive) -> ProcessInfo:
        self.reads += 1
        denied = False
        values = {}
        for attr in _STATIC_ATTRS:
            try:
                values[attr] = getattr(proc, attr)()
            except psutil.AccessDenied:
                denied = True
                values[attr] = None
            except (psutil.ZombieProcess, psutil.NoSuchProcess):
                values[attr] = None
        cmdline = capped_cmdline(values["cmdline"])
        return ProcessInfo(
            pid=pid,
            start_time=start,
            user=values["username"],
            name=values["name"],
            cmdline=cmdline,
            ppid=ppid,
            status=status,
            visibility=ACCESS_DENIED if denied else VISIBLE,
            parent_alive=parent_alive,
            notebook=self._notebook(pid, cmdline),
            **self._container(pid),
        )

    def _notebook(self, pid: int, cmdline: tuple | None) -> str | None:
        """A Jupyter kernel's notebook: Jupyter Server puts its path in the kernel's
        JPY_SESSION_NAME (jupyter_server PRs 679, 1100); readable for one's own kernels."""
        if not cmdline or not any("ipykernel" in part for part in cmdline):
            return None
        return read_environ(pid, self.proc_root).get(JUPYTER_SESSION) or None

    def _container(self, pid: int) -> dict:
        """container, ns_pid and Slurm job of a PID (once per identity: a process
        does not leave its container; a job's processes stay in its cgroup)."""
        cgroup = read_cgroup(pid, self.proc_root)
        container, ns_pid = read_container(pid, self.proc_root, cgroup or "")
        if container is not None:
            container = self.names.name(container)
        slurm = self.jobs.job(pid, cgroup, self.proc_root)
        return {"container": container, "ns_pid": ns_pid, "slurm": slurm}

    def lookup_many(self, pids: Iterable[int], stats: dict | None = None) -> dict[int, ProcessInfo]:
        """One lookup per distinct PID in a pass; ``stats``: {pid: ProcStat or
        None}, this pass's /proc/<pid>/stat reads where the caller made them."""
        if not stats:
            return {pid: self.lookup(pid) for pid in set(pids)}
        known, ticks, lookup = self._known, self._ticks, self.lookup
        out = {}
        for pid in set(pids):
            stat = stats.get(pid, _UNREAD)
            cached = known.get(pid)
            if (  # the common case of lookup(): the same identity, nothing changed
                self._fast
                and cached is not None
                and stat is not None
                and stat is not _UNREAD
                and ticks.get(pid) == stat.start_ticks
                and cached.status == stat.status
                and cached.ppid == stat.ppid
            ):
                out[pid] = cached
            else:
                out[pid] = lookup(pid, stat)
        return out

    def prune(self, live_pids: Iterable[int]) -> None:
        """Forget PIDs no longer listed by any GPU."""
        keep = set(live_pids)
        for pid in list(self._known):
            if pid not in keep:
                del self._known[pid]
                self._ticks.pop(pid, None)


def _safe(fn):
    try:
        return fn()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return None


# process managers that adopt orphans or start services: tini and docker's --init
# (docker-init, which is tini), podman's catatonit, dumb-init, systemd
INIT_NAMES = frozenset(("systemd", "tini", "docker-init", "catatonit", "dumb-init", "init"))


def _parent_alive(ppid: int) -> bool:
    """False when the process was re-parented to init (pid 1) or its parent is gone.

    A subreaper (systemd --user, tini) also takes orphans; a parent whose name
    says it is one counts as "parent gone" for the squatter rule.
    """
    if ppid <= 1:
        return False
    try:
        parent = psutil.Process(ppid)
        name = parent.name()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
    return name not in INIT_NAMES

"""Agents inside containers, found from the host through /proc/<pid>/root.

An agent in a container listens in the container's own runtime directory
(its /tmp or $XDG_RUNTIME_DIR), which the host cannot see at the usual path.
For each GPU process in another PID namespace, the host reaches that
directory as ``/proc/<pid>/root/<dir>`` (proc(5): the process's root, read
across its mount namespace) -- allowed to the process's own user and root,
the same rule the agent applies to who may connect. The directory must
belong to the process's user and be closed to others, as at home.

The agent names itself by its PID inside the container; NSpid and the PID
namespace in the handshake map it back to the host PID NVML reports.
"""

from __future__ import annotations

import os
import stat

from vramscope.core.samples import Frame
from vramscope.sources.machine.containers import PROC
from vramscope.sources.machine.proc_environ import read_environ


def contained_processes(frame: Frame | None) -> dict[int, int]:
    """{host pid: pid inside its namespace} of the frame's processes in other PID namespaces."""
    out = {}
    for _gpu, proc in frame.all_processes() if frame is not None else ():
        info = proc.info
        if info is not None and info.ns_pid is not None:
            out[proc.pid] = info.ns_pid
    return out


def agent_dirs(host_pid: int, proc_root: str = PROC) -> list[tuple[str, int]]:
    """[(directory seen from here, owner uid it must have)] where an agent of this
    process would listen; empty where this user may not look inside it."""
    try:
        uid = os.stat(f"{proc_root}/{host_pid}").st_uid
    except OSError:
        return []
    if os.geteuid() not in (0, uid):
        return []
    env = read_environ(host_pid, proc_root)
    inside = []
    if env.get("VRAMSCOPE_RUNTIME_DIR"):
        inside.append(env["VRAMSCOPE_RUNTIME_DIR"])
    if env.get("XDG_RUNTIME_DIR"):
        inside.append(os.path.join(env["XDG_RUNTIME_DIR"], "vramscope"))
    inside.append(f"/tmp/vramscope-{uid}")
    root = f"{proc_root}/{host_pid}/root"
    return [(root + d, uid) for d in dict.fromkeys(inside) if d.startswith("/")]


def pids_inside(host_pid: int, contained: dict[int, int]) -> frozenset[int]:
    """The PIDs (inside their namespace) of the GPU processes that share ``host_pid``'s
    PID namespace: the only agents a directory seen through its root may belong to.
    Its mount namespace may show the host's own directories (a shared /tmp), whose
    agents are found from the host and are not this container's."""
    ns = namespace_of(host_pid)
    return frozenset(
        ns_pid
        for hp, ns_pid in contained.items()
        if hp == host_pid or (ns is not None and namespace_of(hp) == ns)
    )


def dir_is_private(path: str, uid: int) -> bool:
    """A real directory (not a link) of ``uid``, closed to everyone else."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077


def namespace_of(host_pid: int, proc_root: str = PROC) -> str | None:
    try:
        return os.readlink(f"{proc_root}/{host_pid}/ns/pid")
    except OSError:
        return None

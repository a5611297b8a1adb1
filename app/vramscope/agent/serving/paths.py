"""Where agents listen, and who a process is (standard library only).

Sockets live in a per-user directory (0700):

- ``$VRAMSCOPE_RUNTIME_DIR`` when set (tests, unusual setups);
- else ``$XDG_RUNTIME_DIR/vramscope`` when the user has a runtime dir;
- else ``/tmp/vramscope-<uid>``;
- else, when that name is taken by someone else (another user's directory,
  a symlink, a file), a private fallback in the user's own cache directory,
  ``~/.cache/vramscope/run-<hostname>``, with a warning saying why.

The monitor scans every candidate (a training started from SSH may not see
the desktop's ``XDG_RUNTIME_DIR``). A directory that is not ours, is a
symlink, or is open to others is refused, never used.

Identity = pid + process start time (from /proc/<pid>/stat, the same
formula psutil uses for ``create_time``) + hostname + PID namespace.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import time

SOCKET_SUFFIX = ".sock"
FINAL_SUFFIX = ".final.json"
_NAME = re.compile(r"^agent-(\d+)-(\d+)(\.sock|\.final\.json)$")
FINAL_KEEP_SECONDS = 24 * 3600
FINAL_MAX_BYTES = 32 * 1024 * 1024  # a final dump is cut to its newest items to fit; the
# monitor reads no more than this from one (another user's file may be any size)


SHARED_TMP = "/tmp"  # where the per-uid name lives when there is no XDG runtime dir


class RuntimeDirError(OSError):
    pass


def private_fallback_dir() -> str:
    """In the user's own home (per host: a home may be shared by several machines)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "vramscope", f"run-{socket.gethostname()}")


def candidate_dirs() -> list[str]:
    env = os.environ.get("VRAMSCOPE_RUNTIME_DIR")
    if env:
        return [env]
    out = []
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        out.append(os.path.join(xdg, "vramscope"))
    out.append(os.path.join(SHARED_TMP, f"vramscope-{os.getuid()}"))
    out.append(private_fallback_dir())
    return out


def secure_dir(path: str, create: bool = True) -> str:
    """Make sure ``path`` is a 0700 directory owned by us; raise RuntimeDirError if not."""
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise RuntimeDirError(f"cannot create {path}: {exc}") from None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise RuntimeDirError(f"{path} does not exist") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RuntimeDirError(f"{path} is not a directory (or is a symlink); refusing it")
    if st.st_uid != os.getuid():
        raise RuntimeDirError(f"{path} belongs to uid {st.st_uid}, not to us; refusing it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def choose_agent_dir(create: bool = True) -> tuple[str, list[str]]:
    """(the first usable candidate, why each one before it was refused)."""
    errors = []
    for path in candidate_dirs():
        try:
            return secure_dir(path, create=create), errors
        except RuntimeDirError as exc:
            errors.append(str(exc))
    raise RuntimeDirError("; ".join(errors))


def agent_dir(create: bool = True) -> str:
    """The directory this process's agent listens in (the first usable candidate)."""
    return choose_agent_dir(create)[0]


def socket_name(pid: int, start_ticks: int) -> str:
    return f"agent-{pid}-{start_ticks}{SOCKET_SUFFIX}"


def final_name(pid: int, start_ticks: int) -> str:
    return f"agent-{pid}-{start_ticks}{FINAL_SUFFIX}"


def parse_name(name: str) -> tuple[int, int, str] | None:
    """``agent-<pid>-<ticks>.sock`` -> (pid, ticks, suffix); None for other files."""
    m = _NAME.match(name)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


# --- identity -----------------------------------------------------------------


def _clock_ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        return 100


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def start_ticks(pid: int | str = "self") -> int | None:
    """Field 22 of /proc/<pid>/stat: start time in clock ticks since boot."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        rest = data[data.rindex(b")") + 2 :].split()
        return int(rest[19])  # fields after "(comm)" start at field 3
    except (ValueError, IndexError):
        return None


def start_time_from_ticks(ticks: int | None) -> float | None:
    boot = _boot_time()
    if ticks is None or boot is None:
        return None
    return boot + ticks / _clock_ticks()


def pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def int_env(name: str) -> int | None:
    value = os.environ.get(name)
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


def identity() -> dict:
    """What the agent says about itself in the handshake."""
    ticks = start_ticks("self")
    return {
        "pid": os.getpid(),
        "start_ticks": ticks,
        "start_time": start_time_from_ticks(ticks),
        "hostname": socket.gethostname(),
        "pid_namespace": pid_namespace(),
        "rank": int_env("RANK"),
        "local_rank": int_env("LOCAL_RANK"),
        "world_size": int_env("WORLD_SIZE"),
        "rendezvous": _rendezvous(),
    }


def _rendezvous() -> str | None:
    """The job's rendezvous (torchrun/torch.distributed's env:// init): MASTER_ADDR:PORT,
    or TORCHELASTIC_RUN_ID; ranks of one job share it."""
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if addr and port:
        return f"{addr}:{port}"[:128]
    run_id = os.environ.get("TORCHELASTIC_RUN_ID")
    return f"run {run_id}"[:128] if run_id else None


# --- stale files ---------------------------------------------------------------


def pid_alive_with_ticks(pid: int, ticks: int) -> bool:
    current = start_ticks(pid)
    return current is not None and current == ticks


def socket_listening(path: str) -> bool:
    """Somebody accepts connections on ``path`` (never waits: a full backlog is somebody)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(path)
        return True
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:
        return True  # busy: somebody is there
    finally:
        s.close()


def remove_if_dead(path: str, pid: int, ticks: int) -> bool:
    """Remove the socket of agent ``pid`` (started at ``ticks``) if that process is gone
    and nobody listens on it (a process that left by ``os._exit`` ran no clean-up).
    True: removed."""
    if pid_alive_with_ticks(pid, ticks):
        return False
    if socket_listening(path):  # another PID namespace, still alive
        return False
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def remove_stale(directory: str, now: float | None = None) -> list[str]:
    """Remove sockets nobody listens on any more (dead pid), and old final dumps."""
    removed = []
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        parsed = parse_name(entry.name)
        if parsed is None:
            continue
        pid, ticks, suffix = parsed
        try:
            if suffix == SOCKET_SUFFIX:
                if remove_if_dead(entry.path, pid, ticks):
                    removed.append(entry.path)
            elif now - entry.stat(follow_symlinks=False).st_mtime > FINAL_KEEP_SECONDS:
                os.unlink(entry.path)
                removed.append(entry.path)
        except OSError:
            continue
    return removed

"""Recognising Jupyter/IPython kernels and finding the notebook behind one.

A kernel is started as ``python -m ipykernel_launcher -f <connection file>``
(or a kin: ipykernel.kernelapp, colab_kernel_launcher, xeus-python,
spyder_kernels). The connection file is named ``kernel-<id>.json``; a running
Jupyter server lists which notebook uses kernel <id> at ``/api/sessions``.
The lookup only talks to servers on this machine (localhost URLs from the
user's own Jupyter runtime directory) and gives up quickly.
"""

from __future__ import annotations

import datetime
import functools
import os
import pathlib
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from vramscope.core.safe_io import bounded_read
from vramscope.core.safe_io.bounded_http import HttpError, get_json

_KERNEL_MARKERS = (
    "ipykernel_launcher",
    "ipykernel.kernelapp",
    "colab_kernel_launcher",
    "spyder_kernels.console",
    "xpython",
    "jupyter-kernel",
    "IPython.kernel",
)
_KERNEL_ID = re.compile(r"kernel-([0-9A-Za-z_-]+)\.json$")


def is_jupyter_kernel(cmdline: Sequence[str] | None, name: str | None = None) -> bool:
    return _is_kernel(tuple(cmdline or ()), name)


@functools.lru_cache(maxsize=1 << 16)  # asked for every process on every pass (16 GPUs x 1,024 processes fit)
def _is_kernel(cmdline: tuple[str, ...], name: str | None) -> bool:
    args = list(cmdline)
    for i, arg in enumerate(args):
        base = os.path.basename(arg)
        if any(m in base for m in _KERNEL_MARKERS):
            return True
        if arg == "-m" and i + 1 < len(args) and args[i + 1] in ("ipykernel", "ipykernel_launcher"):
            return True
    return bool(name) and name in ("ipykernel", "xpython")


def connection_file(cmdline: Sequence[str] | None) -> str | None:
    """The ``-f`` argument: ``-f X``, ``-f=X``, ``--f=X`` or ``--KernelApp.connection_file=X``."""
    args = list(cmdline or ())
    for i, arg in enumerate(args):
        if arg in ("-f", "--f", "--existing") and i + 1 < len(args):
            return args[i + 1]
        for prefix in ("-f=", "--f=", "--KernelApp.connection_file=", "--IPKernelApp.connection_file="):
            if arg.startswith(prefix):
                return arg[len(prefix) :]
    return None


def kernel_id(conn_file: str | None) -> str | None:
    if not conn_file:
        return None
    m = _KERNEL_ID.search(os.path.basename(conn_file))
    return m.group(1) if m else None


@dataclass(frozen=True, slots=True)
class NotebookHint:
    notebook: str | None  # path of the notebook, when a server said so
    how: str  # how it was found, or how the user can find it


def runtime_dirs() -> list[pathlib.Path]:
    dirs = []
    try:
        from jupyter_core.paths import jupyter_runtime_dir

        dirs.append(pathlib.Path(jupyter_runtime_dir()))
    except Exception:
        pass
    env = os.environ.get("JUPYTER_RUNTIME_DIR")
    if env:
        dirs.append(pathlib.Path(env))
    dirs.append(pathlib.Path.home() / ".local" / "share" / "jupyter" / "runtime")
    seen, out = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def _local(url: str) -> bool:
    host = urllib.parse.urlparse(url).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1")


SERVER_FILE_LIMIT = 64 * 1024  # a jpserver-*.json is a few hundred bytes


def _local_servers(dirs: Sequence[pathlib.Path] | None = None):
    """(url, token) of each Jupyter server on this machine (jpserver-*.json / nbserver-*.json)."""
    for d in dirs if dirs is not None else runtime_dirs():
        try:
            files = sorted(d.glob("jpserver-*.json")) + sorted(d.glob("nbserver-*.json"))
        except OSError:
            continue
        for f in files:
            try:
                info = bounded_read.read_json(f, SERVER_FILE_LIMIT)  # a regular file, not a FIFO
                url = str(info["url"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if _local(url):
                yield url, str(info.get("token") or "")


@dataclass(frozen=True, slots=True)
class KernelActivity:
    """What a Jupyter server says of one kernel: when it last did anything
    (``last_activity``, epoch seconds) and whether it is executing now."""

    last_activity: float | None
    busy: bool


def kernel_activity(
    conn_file: str | None, dirs: Sequence[pathlib.Path] | None = None, timeout: float = 0.5
) -> KernelActivity | None:
    """The kernel's last execution from the local Jupyter server that runs it
    (``GET /api/kernels/<id>``: last_activity, execution_state), or None."""
    kid = kernel_id(conn_file)
    if not kid:
        return None
    for url, token in _local_servers(dirs):
        data = _get_json(url, f"/api/kernels/{urllib.parse.quote(kid)}", token, timeout)
        if isinstance(data, dict) and data.get("id") == kid:
            return KernelActivity(
                _iso_time(data.get("last_activity")), data.get("execution_state") in ("busy", "starting")
            )
    return None


def _iso_time(text) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def find_notebook(
    kid: str | None, dirs: Sequence[pathlib.Path] | None = None, timeout: float = 0.5
) -> NotebookHint:
    """Ask each running local Jupyter server (jpserver-*.json / nbserver-*.json)
    which session uses kernel ``kid``."""
    howto = (
        "open the Jupyter server's running-kernels list, or `jupyter server list` "
        f"and its /api/sessions, and look for kernel {kid or '?'}"
    )
    if not kid:
        return NotebookHint(None, "kernel id unknown (no kernel-<id>.json connection file); " + howto)
    asked = 0
    for url, token in _local_servers(dirs):
        asked += 1
        sessions = _get_json(url, "/api/sessions", token, timeout)
        if not isinstance(sessions, list):
            continue
        for s in sessions:
            try:
                if s["kernel"]["id"] == kid:
                    path = s.get("path") or (s.get("notebook") or {}).get("path")
                    return NotebookHint(path, f"from the Jupyter server at {url}")
            except (KeyError, TypeError, AttributeError):
                continue
    if asked:
        return NotebookHint(
            None,
            f"no running local Jupyter server lists kernel {kid} "
            "(started from a console, or its server is gone)",
        )
    return NotebookHint(None, "no running Jupyter server found here; " + howto)


def _get_json(url: str, path: str, token: str, timeout: float):
    """The server's JSON answer, or None; ``timeout`` seconds and 1 MiB in all
    (core/safe_io/bounded_http.py: a slow or huge answer cannot hold up a pass)."""
    try:
        status, data = get_json(
            url.rstrip("/") + path,
            deadline=timeout,
            max_bytes=1 << 20,
            headers={"Authorization": f"token {token}"} if token else None,
        )
    except HttpError:
        return None
    return data if status == 200 else None


def default_notebook_finder(pid: int, conn_file: str | None) -> NotebookHint:
    """find_notebook, plus the kernel's working directory when no server knows it
    (a kernel started by a server runs in its notebook's folder)."""
    hint = find_notebook(kernel_id(conn_file))
    if hint.notebook is None:
        try:
            import psutil

            cwd = psutil.Process(pid).cwd()
        except Exception:
            cwd = None
        if cwd:
            return NotebookHint(None, f"{hint.how}; the kernel runs in {cwd}")
    return hint

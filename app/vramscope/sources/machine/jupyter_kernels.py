"""Jupyter kernels on this machine: what their servers say, put on the frame.

An enricher (Frame -> Frame): each GPU process of this machine that is a
Jupyter/IPython kernel (core/detectors/jupyter.py recognises the command
line) is looked up at the local Jupyter servers -- its last execution and
whether it runs now (``GET /api/kernels/<id>``, every KERNEL_POLL_SECONDS),
and once the notebook that uses it (``/api/sessions``). The HTTP requests
go to localhost servers of this user's Jupyter runtime directory, with a
short timeout, on one worker thread: a frame carries what the last answers
said (``frame.kernels``) and never waits for them -- but the very first pass
that finds kernels waits up to FIRST_WAIT seconds, so a one-shot `vramscope
status` names the notebook and judges the kernel as the window does. The squatter rule
judges a kernel idle from its last execution (reading a notebook is not
using it less), and names the notebook, from there.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from concurrent.futures import Future

from vramscope.core.flow.background import DaemonWorker
from vramscope.core.detectors import jupyter
from vramscope.core.detectors.squatter import KERNEL_POLL_SECONDS
from vramscope.core.samples import REMOTE_SOURCES, Frame, JupyterKernel, ProcessIdentity

log = logging.getLogger(__name__)

FIRST_WAIT = 1.0  # seconds the first pass with kernels waits for its answers (once)


class JupyterEnricher:
    def __init__(
        self,
        activity=jupyter.kernel_activity,
        finder=jupyter.default_notebook_finder,
        period: float = KERNEL_POLL_SECONDS,
        clock=time.monotonic,
        first_wait: float = FIRST_WAIT,
    ):
        self._activity = activity  # connection file -> jupyter.KernelActivity | None
        self._finder = finder  # (pid, connection file) -> jupyter.NotebookHint
        self._period = period
        self._clock = clock
        self._known: dict[ProcessIdentity, JupyterKernel] = {}  # written by the worker
        self._asked: dict[ProcessIdentity, float] = {}
        self._pool: DaemonWorker | None = None
        self._pending: Future | None = None
        self._first_wait = first_wait

    # -- the sampler thread -----------------------------------------------------------
    def __call__(self, frame: Frame) -> Frame:
        if frame.simulated or frame.source in REMOTE_SOURCES or not frame.gpus:
            return frame
        kernels: dict[ProcessIdentity, str | None] = {}
        for gpu, proc in frame.all_processes():
            info = proc.info
            if gpu.host is None and info is not None and jupyter.is_jupyter_kernel(info.cmdline, info.name):
                kernels[proc.identity] = jupyter.connection_file(info.cmdline)
        for ident in [i for i in self._asked if i not in kernels]:  # gone: forgotten
            self._asked.pop(ident, None)
            self._known.pop(ident, None)
        now = self._clock()
        due = [
            (ident, conn)
            for ident, conn in kernels.items()
            if now - self._asked.get(ident, -float("inf")) >= self._period
        ]
        if due and (self._pending is None or self._pending.done()):
            for ident, _conn in due:
                self._asked[ident] = now
            self._pending = self._executor().submit(self._ask, due)
            if self._first_wait > 0:
                wait, self._first_wait = self._first_wait, 0.0
                try:
                    self._pending.result(wait)
                except Exception:  # slow (TimeoutError) or failed: the next pass shows it
                    pass
        known = tuple(k for k in (self._known.get(i) for i in kernels) if k is not None)
        return dataclasses.replace(frame, kernels=known) if known else frame

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    # -- the worker thread ------------------------------------------------------------
    def _executor(self) -> DaemonWorker:
        if self._pool is None:  # a daemon thread: a slow server never holds up exit
            self._pool = DaemonWorker("vramscope-jupyter")
        return self._pool

    def _ask(self, due: list[tuple[ProcessIdentity, str | None]]) -> None:
        for ident, conn in due:
            pid, start = ident
            try:
                activity = self._activity(conn)
            except Exception:  # a lookup never breaks a pass
                log.debug("kernel activity of pid %s failed", pid, exc_info=True)
                activity = None
            old = self._known.get(ident)
            if old is not None and (old.notebook or old.how):
                notebook, how = old.notebook, old.how  # asked once per kernel
            else:
                try:
                    hint = self._finder(pid, conn)
                    notebook, how = hint.notebook, hint.how
                except Exception as exc:
                    notebook, how = None, f"lookup failed: {exc}"
            self._known[ident] = JupyterKernel(
                pid=pid,
                start_time=start,
                connection_file=conn,
                last_activity=activity.last_activity if activity else None,
                busy=bool(activity and activity.busy),
                notebook=notebook,
                how=how,
            )

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Until the lookups asked for have answered (tests, benches)."""
        if self._pending is not None:
            self._pending.result(timeout)

"""Worker threads give way to the window's thread.

Python runs one thread at a time (the GIL). On a big box the sampler and the
table's worker run long Python loops (16 GPUs x 1,024 processes: ~200 ms a
pass), and the window's thread, which takes the GIL back after every call
into Qt (hundreds per repaint), waits a switch interval each time: a 30 ms
redraw became a 200 ms stall. So the window says when it starts a redraw
(``gui_busy``), and the heavy loops pass through ``give_way`` every few
hundred items: a worker there sleeps -- without the GIL -- until the redraw
should be over (BUSY_SPAN after it began), at most MAX_WAIT. A worker that
waited that long runs on for as long again before it waits again, so a
window kept busy slows sampling to half speed, never stops it.

Without a window (``record``, ``status``) nothing ever waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

BUSY_SPAN = 0.08  # seconds a redraw of a big box takes, its paint included
MAX_WAIT = 0.1  # seconds a worker waits at most, then runs as long before it waits again
EVERY = 256  # items of a loop between two chances to give way

T = TypeVar("T")

_busy_until = 0.0  # time.monotonic() until which the window's thread is redrawing
_gui: int | None = None  # the window's thread (never made to wait)
_local = threading.local()
_sleep = time.sleep


def gui_busy(span: float = BUSY_SPAN) -> None:
    """The window's thread starts a redraw: workers give way for ``span`` seconds."""
    global _busy_until, _gui
    _gui = threading.get_ident()
    _busy_until = time.monotonic() + span


def give_way() -> None:
    """Sleep (GIL released) while the window redraws; see the module text."""
    now = time.monotonic()
    wait = _busy_until - now
    if wait <= 0 or threading.get_ident() == _gui or now < getattr(_local, "free_until", 0.0):
        return
    if wait >= MAX_WAIT:
        wait = MAX_WAIT
        _local.free_until = now + 2 * MAX_WAIT  # after this wait, run as long as it lasted
    _sleep(wait)


def courteous(items: Iterable[T], every: int = EVERY) -> Iterator[T]:
    """``items``, giving way to the window every ``every`` of them."""
    for n, item in enumerate(items):
        if n % every == every - 1:
            give_way()
        yield item

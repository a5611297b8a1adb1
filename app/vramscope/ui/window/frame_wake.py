"""The window wakes once per stored frame, not on a fast poll.

The store calls its listeners on the sampler's thread; ``FrameWake`` posts one
``refresh`` to the GUI thread through the bridge (ui/qt/bridge.py), however
many frames come before it runs, and restarts the window's slow poll, which
stays only as a safety net (due after a poll interval without a frame).
"""

from __future__ import annotations

from collections.abc import Callable

from vramscope.core.samples import Frame
from vramscope.core.store.store import STAGE_OTHER


class FrameWake:
    def __init__(self, store, bridge, timer, refresh: Callable[[], None], owner):
        self.store, self.bridge, self.timer, self.refresh = store, bridge, timer, refresh
        self.posted = False
        store.listeners.subscribe(self.stored, stage=STAGE_OTHER)
        owner.destroyed.connect(lambda *_: store.listeners.unsubscribe(self.stored))
        if store.latest is not None:  # stored while the window was built (its sampler's first look)
            self.stored(store.latest)

    def stored(self, _frame: Frame) -> None:
        """Store listener (the sampler's thread): one refresh on the GUI thread."""
        if not self.posted:
            self.posted = True
            self.bridge.post(self._woken)

    def _woken(self) -> None:
        self.posted = False
        self.timer.start()  # the poll is a safety net: due only after a poll interval without a frame
        self.refresh()

"""A running command follows the settings file: thresholds changed in the window's
settings dialog reach a `record` or `stream` (the window's own sampler process
included) that is already running, from the next pass on -- so the same
machine keeps raising the same alerts everywhere (core/settings/user_settings.py).

A store listener at the labels stage, before the diagnostics see the frame. It
looks at the file's identity (inode, size, modification time: one ``stat``) at
most once per ``EVERY`` seconds and reads the file only when that changed.
"""

from __future__ import annotations

import os
import pathlib
import time

EVERY = 1.0  # seconds between looks at the file


def _identity(path: pathlib.Path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class FollowThresholds:
    def __init__(
        self,
        engine,
        path: str | os.PathLike | None = None,
        args=None,
        every: float = EVERY,
        monotonic=time.monotonic,
    ):
        from vramscope.core.settings import settings_file

        self.engine = engine
        self.path = pathlib.Path(path) if path is not None else settings_file.default_path()
        self.args = args  # a command line's threshold options stay on top
        self.every = every
        self._mono = monotonic
        self._seen = _identity(self.path)
        self._looked = monotonic()

    def __call__(self, _frame) -> None:
        now = self._mono()
        if now - self._looked < self.every:
            return
        self._looked = now
        seen = _identity(self.path)
        if seen != self._seen:
            from vramscope.core.settings.user_settings import diagnostics_for

            self.engine.settings = diagnostics_for(self.args, self.path)
            self._seen = _identity(self.path)  # a file put aside or cleaned is seen once

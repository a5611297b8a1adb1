"""The user-path tier: vramscope started as a user starts it (the installed
command, the window with its real sampler child, `status --host` and `record
--host` through a stand-in ssh that runs the real `vramscope stream`),
against a real training process running the agent. Any traceback any process
prints fails the test."""

from __future__ import annotations

from remote.conftest import hosts  # noqa: F401  (the stand-in ssh and its "remote" hosts)
from ui.conftest import themed_app  # noqa: F401  (the app, themed as the window starts it)

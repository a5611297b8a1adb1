"""Window fixtures: a themed QApplication, windows over hand-built frames and
the busy simulated machine."""

from __future__ import annotations

import argparse

import pytest

from vramscope.core.flow.pipeline import Pipeline
from vramscope.sources.demo.busy_demo import BusyWorkstation
from vramscope.ui.window.app import build_window
from vramscope.ui.window.main_window import MainWindow
from vramscope.core.settings.user_settings import Settings

from .frames import ScriptedSource, frame_at

SIZE = (1400, 900)
BUSY_T0 = 1_800_000_000.0
BUSY_SECONDS = 600


@pytest.fixture(scope="session")
def themed_app(qapp):
    from vramscope.ui.qt import theme

    theme.apply(qapp)
    return qapp


@pytest.fixture
def make_window(themed_app, qtbot):
    """make_window(frames, window="1m", source=None) -> a shown MainWindow.

    The frames go straight into the store; the sampler is not started unless
    the test starts it, so what the window shows is exactly those frames.
    """
    feeds = []

    def make(frames=(), window="1m", source=None, **kw):
        feed = Pipeline(source or ScriptedSource())
        feeds.append(feed)
        for f in frames:
            feed.store.append(f)
        w = MainWindow(feed, window=window, poll_ms=60_000, **kw)
        qtbot.addWidget(w)
        w.resize(*SIZE)
        w.show()
        w.refresh(force=True)
        qtbot.wait(10)
        return w

    yield make
    for feed in feeds:
        feed.close()


@pytest.fixture
def scripted_frames():
    return [frame_at(k) for k in range(120)]


@pytest.fixture
def busy(themed_app, qtbot, tmp_path):
    """busy(width, height, settings=None) -> the window after ten minutes of the busy
    machine (``vramscope --demo --busy``: 16 processes on two GPUs, an agent, alerts);
    ``seconds`` of it (from its start) in a time window of ``window``."""
    made = []

    def make(width=1400, height=900, settings=None, seconds=BUSY_SECONDS, window="10m"):
        args = argparse.Namespace(
            demo=True,
            interval=1.0,
            window=window,
            record=False,
            read_only=False,
            prometheus=None,
            file=None,
            theme=None,
        )
        if settings is None:
            settings = Settings(str(tmp_path / "s.toml"))
        settings.merge_args(args)
        source = BusyWorkstation(seed=1, start_time=BUSY_T0)
        feed, window = build_window(args, source=source, start=False, poll_ms=60_000, settings=settings)
        qtbot.addWidget(window)
        made.append(window)
        window.resize(width, height)
        window.show()
        for k in range(seconds):
            feed.sampler.sample_once(BUSY_T0 + k)
        window.refresh(force=True)
        qtbot.wait(20)
        window.refresh(force=True)
        qtbot.wait(20)  # layouts settle
        return window

    yield make
    for w in made:
        w.services.close()


from .helpers import settled_tables  # noqa: E402,F401  (autouse: tables read once shown)

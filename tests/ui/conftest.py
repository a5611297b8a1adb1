"""Window fixtures: a themed QApplication and windows over hand-built frames."""

from __future__ import annotations

import pytest

from vramscope.core.pipeline import Pipeline
from vramscope.ui.main_window import MainWindow

from .frames import ScriptedSource, frame_at

SIZE = (1400, 900)


@pytest.fixture(scope="session")
def themed_app(qapp):
    from vramscope.ui import theme
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

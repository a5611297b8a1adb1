"""The window wakes when a frame comes, not on a fast timer: at 1 s sampling a
window that polled its store four times a second (and a timer for signals,
another for the sampler banner) spent more waking up than drawing."""

from __future__ import annotations

import threading

from vramscope.core.flow.pipeline import Pipeline
from vramscope.ui.window.main_window import MainWindow

from .frames import ScriptedSource, frame_at


def test_a_frame_is_shown_as_soon_as_it_is_stored_and_the_poll_is_slow(themed_app, qtbot):
    feed = Pipeline(ScriptedSource())
    w = MainWindow(feed, window="1m")  # as the app builds it: no poll_ms
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    assert w.timer.interval() >= 1000  # a safety net, not what shows frames
    feed.store.append(frame_at(0))
    qtbot.waitUntil(lambda: 0 in w.gpu_panel.cards, timeout=1000)
    assert w.gpu_panel.cards[0].used.text() == "9.5 / 24.0 GiB"  # frame 0: 6 + 3 + 0.5 GiB
    shows = []
    w.new_frame.connect(shows.append)

    def sampler():  # frames stored by another thread, as the sampler does: many before the GUI runs
        for k in range(1, 41):
            feed.store.append(frame_at(k))

    t = threading.Thread(target=sampler)
    t.start()
    t.join()
    qtbot.waitUntil(lambda: bool(shows) and shows[-1].time == frame_at(40).time, timeout=1000)
    assert w.gpu_panel.cards[0].used.text() == "19.5 / 24.0 GiB"  # frame 40: 14 + 3 + 2 + 0.5 GiB
    assert len(shows) <= 2  # one refresh for the forty frames, not forty
    feed.close()


def test_the_safety_poll_does_not_fire_while_frames_come(themed_app, qtbot):
    feed = Pipeline(ScriptedSource())
    w = MainWindow(feed, window="1m")
    qtbot.addWidget(w)
    w.show()
    polls = []
    w.timer.timeout.connect(lambda: polls.append(1))
    for k in range(4):  # a frame every half poll interval
        qtbot.wait(w.timer.interval() // 2)
        feed.store.append(frame_at(k))
        qtbot.waitUntil(
            lambda k=k: w.store.latest.time == frame_at(k).time and not w.wake.posted, timeout=1000
        )
    assert polls == []
    qtbot.waitUntil(lambda: bool(polls), timeout=2 * w.timer.interval())  # frames stop: it polls again
    feed.close()

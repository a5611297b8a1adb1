"""A pipeline stage that fails is said in the window, not hidden behind a frozen frame."""

from __future__ import annotations

from vramscope.core.store.store import STAGE_RECORDER

from .frames import ScriptedSource


def test_a_failing_recorder_is_shown_in_the_status_bar_and_sampling_goes_on(make_window):
    w = make_window()
    feed = w.feed

    def full_disk(frame):
        raise OSError(28, "No space left on device")

    feed.subscribe(full_disk, STAGE_RECORDER)
    feed.sample_once()
    w.refresh(force=True)
    assert "No space left" not in w.status_text.text()  # said on the next frame
    second = feed.sample_once()
    w.refresh(force=True)
    assert "No space left on device" in w.status_text.text()
    assert "full_disk" in w.status_text.text()
    assert w.gpu_panel.cards  # the frames still arrive and are drawn
    assert feed.store.latest is second


def test_no_trouble_no_warning(make_window):
    w = make_window(source=ScriptedSource())
    w.feed.sample_once()
    w.refresh(force=True)
    assert "⚠" not in w.status_text.text()

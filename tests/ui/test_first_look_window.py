"""The window before its sampler's first pass has read the processes (the first
look, core/stream/first_look.py): the GPU cards and plots show the GPUs' real
figures at once, the cards and the table say the processes are being read --
never "0 processes" -- and the processes fill the table as soon as they come."""

from __future__ import annotations

import argparse

from vramscope.core.flow.pipeline import Pipeline
from vramscope.core.stream.first_look import pending
from vramscope.core.settings.user_settings import Settings
from vramscope.sources.demo.busy_demo import BusyWorkstation
from vramscope.ui.window.app import build_window
from vramscope.ui.monitor.cards import used_total_text
from vramscope.ui.window.main_window import WAKE_POLL_MS, MainWindow
from vramscope.ui.monitor.processes_pending import READING

from .frames import ScriptedSource, frame_at
from .helpers import open_every_group, save, table_column

T0 = 1_800_000_000.0


class FirstLookThenBusy:
    """The busy machine as the window's sampler process sends it: the first look
    (its GPUs, the processes not read yet), then its whole frames."""

    name, simulated = "demo", True

    def __init__(self):
        self.busy = BusyWorkstation(seed=1, start_time=T0 - 600)
        self.looked = False

    def sample(self, now):
        frame = self.busy.sample(now)
        if not self.looked:
            self.looked = True
            return pending(frame)
        return frame

    def close(self):
        self.busy.close()


def first_look_window(qtbot, tmp_path, size):
    args = argparse.Namespace(demo=True, interval=1.0, window="10m", record=False, read_only=False)
    settings = Settings(str(tmp_path / "s.toml"))
    settings.merge_args(args)
    feed, window = build_window(
        args, source=FirstLookThenBusy(), start=False, poll_ms=60_000, settings=settings
    )
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    feed.sampler.sample_once(T0)
    window.refresh(force=True)
    qtbot.wait(50)
    return feed, window


def card_texts(window) -> list[str]:
    return [
        " ".join([card.used.text(), card.summary.text(), card.values["processes"].text()])
        for card in window.gpu_panel.cards.values()
    ]


def test_the_gpus_show_at_once_and_the_processes_are_said_to_be_read(
    themed_app, qtbot, tmp_path, artifacts_dir
):
    feed, window = first_look_window(qtbot, tmp_path, (1400, 900))
    try:
        look = feed.store.latest
        assert window.pages.currentWidget() is window.splitter  # not "waiting for the first sample"
        cards = window.gpu_panel.cards
        assert [cards[g.index].used.text() for g in look.gpus] == [used_total_text(g) for g in look.gpus]
        for text in card_texts(window):
            assert READING in text and "0 processes" not in text
        note = window.table.pending
        assert note.isVisible() and "Reading the processes" in note.text()
        assert window.table.model.rowCount() == 0
        for size in ((1400, 900), (1024, 700)):
            window.resize(*size)
            qtbot.wait(50)
            save(window, artifacts_dir, f"first-look-{size[0]}x{size[1]}.png")

        feed.sampler.sample_once(T0 + 0.2)  # the first pass's frame, sooner than a table refresh
        window.refresh()
        qtbot.waitUntil(lambda: window.table.model.rowCount() > 0, timeout=5_000)
        whole = feed.store.latest
        assert not note.isVisible()
        open_every_group(window)
        assert {int(p) for p in table_column(window, "PID") if p} == {
            p.pid for _g, p in whole.all_processes()
        }
        for text, gpu in zip(card_texts(window), whole.gpus):
            assert READING not in text and f"{len(gpu.processes)} process" in text
    finally:
        window.services.close()


def test_a_first_look_that_came_while_the_window_was_built_is_shown_at_once(themed_app, qtbot):
    feed = Pipeline(ScriptedSource())
    feed.store.append(pending(frame_at(0)))  # the sampler started first: its look is in
    window = MainWindow(feed)  # (woken by each frame; the poll is a safety net)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.pages.currentWidget() is window.splitter, timeout=WAKE_POLL_MS // 4)
    assert window.table.pending.isVisible()
    feed.close()

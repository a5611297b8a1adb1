"""Strangers' text in the window (issue 24): a command line, a GPU name, a host
or a remote error that looks like HTML is shown as the characters it is --
never rendered (Qt guesses rich text per string) -- and control or bidi
characters show as visible escapes."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtGui import QTextDocument

from vramscope.core.end_process.actions import ProcessSummary
from vramscope.core.processes.process_rows import COL, TableBuilder, TableOrder
from vramscope.core.samples import (
    Frame,
    GpuProcess,
    GpuSample,
    HostState,
    ProcessInfo,
)
from vramscope.core.units import GiB
from vramscope.ui.agents.agent_breakdown import legend_html
from vramscope.ui.monitor.cards import GpuCard
from vramscope.ui.end_process.end_process_dialog import EndProcessDialog
from vramscope.ui.monitor.hosts_bar import HostsBar
from vramscope.ui.processes.process_model import ProcessTableModel
from vramscope.ui.qt.pens import ColourBook
from vramscope.ui.qt.theme import current
from vramscope.ui.timeline.timeline_legend import process_label

HTML_ARGV = (
    "python",
    "<img src=x><b>bold</b><a href='http://evil'>click</a>",
    "\x1b[2J\u202eexe.niart\r\nGPU 9 FORGED",
)
SHOWN = " ".join(HTML_ARGV)


def as_user_sees(tooltip: str) -> str:
    """What Qt shows for a tooltip string: rich text rendered to its plain text."""
    if GuiQt.mightBeRichText(tooltip):
        doc = QTextDocument()
        doc.setHtml(tooltip)
        return doc.toPlainText()
    return tooltip


def test_a_command_tooltip_and_cell_show_html_as_text_and_controls_escaped(qtbot):
    frame = Frame(
        time=1.7e9,
        gpus=(
            GpuSample(
                index=0,
                name="GPU",
                total=24 * GiB,
                used=GiB,
                processes=(
                    GpuProcess(
                        pid=7,
                        used=GiB,
                        sm=0,
                        info=ProcessInfo(pid=7, start_time=1.7e9, user="mallory", cmdline=HTML_ARGV),
                    ),
                ),
            ),
        ),
    )
    model = ProcessTableModel(ColourBook())
    model.show(TableBuilder().build(frame, None, TableOrder()))
    cell = model.data(model.index(0, COL["Command"]))
    tooltip = model.data(model.index(0, COL["Command"]), Qt.ItemDataRole.ToolTipRole)
    shown = as_user_sees(tooltip)
    assert "<img src=x><b>bold</b>" in shown and "click</a>" in shown  # the text, not a link
    assert "\\x1b[2J\\u202eexe.niart\\r\\nGPU 9 FORGED" in shown
    assert "\x1b" not in cell + shown and "\u202e" not in cell + shown and "\n" not in cell


def test_labels_of_the_end_process_dialog_hosts_and_cards_are_plain_text(themed_app, qtbot):
    summary = ProcessSummary(
        pid=7,
        start_time=None,
        command=SHOWN,
        user="<i>mallory</i>",
        age_seconds=1.0,
        memory=GiB,
        own=False,
        connection_file=None,
        refusal="<b>no</b>",
        host="<u>lab2</u>",
    )
    dialog = EndProcessDialog(summary)
    qtbot.addWidget(dialog)
    for label in (
        dialog.fields["Command"],
        dialog.fields["User"],
        dialog.fields["Host"],
        dialog.refusal,
        dialog.headline,
    ):
        assert label.textFormat() == Qt.TextFormat.PlainText
    assert "<img src=x>" in dialog.fields["Command"].text()
    assert "\x1b" not in dialog.fields["Command"].text()

    bar = HostsBar()
    qtbot.addWidget(bar)
    bar.update_from(
        Frame(
            time=1.7e9, hosts=(HostState("<b>lab\x1b[2J</b>", "down", error="<img src=x> ssh: \x1b]0;t\x07"),)
        )
    )
    (chip,) = bar.chips.values()
    assert chip.textFormat() == Qt.TextFormat.PlainText and "\\x1b[2J" in chip.text()
    assert "<img src=x> ssh: \\x1b]0;t\\x07" in as_user_sees(chip.toolTip())

    card = GpuCard(0)
    qtbot.addWidget(card)
    card.update_from(GpuSample(index=0, name="<b>RTX</b>\u202e", uuid="GPU-1", total=24 * GiB, used=GiB))
    assert "<b>RTX</b>\\u202e" in as_user_sees(card.title.toolTip())
    assert "\u202e" not in card.title.text()
    assert card.title.textFormat() == Qt.TextFormat.PlainText  # "<b>RTX</b>" as written, not bold
    card.update_from(GpuSample(index=0, name="RTX", uuid="GPU-1", error="<img src=x> lost\x1b[2J"))
    assert card.error.textFormat() == Qt.TextFormat.PlainText
    assert card.error.text() == "<img src=x> lost\\x1b[2J"


def test_a_remote_error_on_the_no_gpu_page_is_plain_text(themed_app, qtbot):
    from vramscope.ui.window.banners import NoDriverPage

    page = NoDriverPage()
    qtbot.addWidget(page)
    page.show_error("lab2: <img src=x> ssh: \x1b]0;t\x07")
    assert page.detail.textFormat() == Qt.TextFormat.PlainText
    assert page.detail.text() == "lab2: <img src=x> ssh: \\x1b]0;t\\x07"


def test_a_process_name_in_the_timeline_legend_and_an_agent_note_are_text_not_html():
    key = ("proc", 0, 7, 1.7e9, "used")
    shown = process_label(key, {(7, 1.7e9): "<img src=x>\u202e (7)"})
    assert shown == "&lt;img src=x&gt;\\u202e (7)"
    page = legend_html([], current(), note="<a href='http://evil'>x</a>")
    doc = QTextDocument()
    doc.setHtml(page)
    assert "<a href='http://evil'>x</a>" in doc.toPlainText()

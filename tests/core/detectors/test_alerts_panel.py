"""The alerts panel: list, details, acknowledge/mute, End process with its
confirmation (on real processes), tray notifications; screenshot of the demo."""

from __future__ import annotations

import psutil
import pytest

pytest.importorskip("PySide6")

from vramscope.core.end_process.actions import ProcessActions  # noqa: E402
from vramscope.core.end_process.audit_log import read_audit_log  # noqa: E402
from vramscope.core.detectors import Diagnostics, DiagnosticSettings  # noqa: E402
from vramscope.core.detectors.jupyter import NotebookHint  # noqa: E402
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo  # noqa: E402
from vramscope.core.units import GiB  # noqa: E402
from vramscope.ui.alerts.alerts_panel import AlertsPanel  # noqa: E402
from vramscope.ui.end_process.end_process_dialog import EndProcessDialog  # noqa: E402
from vramscope.ui.alerts.tray import TrayNotifier  # noqa: E402

from .conftest import STUBBORN

T0 = 1_700_000_000.0


def no_finder(pid, conn):
    return NotebookHint(None, "no running Jupyter server found here")


@pytest.fixture
def themed(qapp):
    from vramscope.ui.qt import theme

    theme.apply(qapp)
    return qapp


def demo_engine(seconds=400):
    from vramscope.sources.demo.simulated import SimulatedSource

    src = SimulatedSource(seed=1, start_time=T0)
    # the kernel thresholds shortened so that the leftover kernel is a warning by then
    engine = Diagnostics(
        DiagnosticSettings(kernel_idle_minutes=1, kernel_warn_minutes=5), notebook_finder=no_finder
    )
    for t in range(seconds + 1):
        engine.feed(src.sample(T0 + t))
    return engine


@pytest.mark.slow
def test_demo_alerts_listed_with_evidence_and_fix_screenshot(themed, qtbot, artifacts_dir):
    engine = demo_engine()
    panel = AlertsPanel(engine, actions=None, clock=lambda: T0 + 400)
    panel.set_simulated(True)
    qtbot.addWidget(panel)
    panel.resize(1200, 640)
    counts = []
    panel.counts_changed.connect(lambda n, c: counts.append((n, c)))
    panel.refresh()
    panel.show()
    kinds = [a.kind for a in panel.alerts()]
    assert {"squatter", "leak", "fragmentation"} <= set(kinds)
    assert counts[-1][0] == len(kinds)
    row = panel.tree.topLevelItem(kinds.index("squatter"))
    assert row.text(0) == "warning" and "Jupyter kernel" in row.text(1)
    assert "ago)" in row.text(2) and "holds 3.0 GiB" in row.text(3)
    panel.tree.select_alert(panel.alerts()[kinds.index("squatter")].key)
    text = panel.details.toPlainText()
    assert "Evidence" in text and "Fix" in text and "connection file" in text
    assert not panel.buttons.end_button.isEnabled() and "Demo data" in panel.buttons.end_button.toolTip()
    qtbot.wait(20)
    assert panel.grab().save(str(artifacts_dir / "alerts_panel_demo.png"))


@pytest.mark.slow
def test_acknowledge_and_mute_from_the_panel(themed, qtbot):
    engine = demo_engine(330)
    panel = AlertsPanel(engine, clock=lambda: T0 + 330)
    qtbot.addWidget(panel)
    panel.refresh()
    before = len(panel.alerts())
    leak = next(a for a in panel.alerts() if a.kind == "leak")
    panel.tree.select_alert(leak.key)
    panel.buttons.ack_button.click()
    assert leak.key not in [a.key for a in panel.alerts()]
    panel.buttons.show_hidden.setChecked(True)
    assert len(panel.alerts()) == before  # shown again, dimmed
    panel.buttons.show_hidden.setChecked(False)
    kernel = next(a for a in panel.alerts() if a.kind == "squatter")
    panel.tree.select_alert(kernel.key)
    panel.buttons.mute_button.click()
    assert engine.is_muted(kernel.identity)
    # left: the leaking run's fragmentation and its memory growth (INFO)
    assert [a.kind for a in panel.alerts()] == ["fragmentation", "growth"]


# -- End process on real processes ---------------------------------------------------------


def frame_with(pid, start, t):
    info = ProcessInfo(
        pid=pid,
        start_time=start,
        user="me",
        name="python",
        cmdline=("python", "-c", "sleep"),
        ppid=1,
        status="sleeping",
        parent_alive=True,
    )
    proc = GpuProcess(pid=pid, used=2 * GiB, sm=0, info=info)
    return Frame(
        time=t,
        gpus=(
            GpuSample(index=0, total=24 * GiB, used=3 * GiB, free=21 * GiB, util_gpu=0, processes=(proc,)),
        ),
    )


def panel_for(qtbot, pid, start, tmp_path, **kw):
    engine = Diagnostics(DiagnosticSettings().with_overrides(idle_minutes=0.0), notebook_finder=no_finder)
    engine.feed(frame_with(pid, start, start + 10))
    actions = ProcessActions(audit_path=tmp_path / "audit.jsonl", grace_seconds=0.3, **kw)
    panel = AlertsPanel(engine, actions)
    qtbot.addWidget(panel)
    panel.refresh()
    return panel, actions


def confirmation(qtbot, panel, ask=None):
    """The dialog ``ask()`` (default: End process on the selected alert) opens once the
    process was checked anew on a worker."""
    with qtbot.waitSignal(panel.dialog_opened, timeout=5000) as opened:
        assert (ask or panel.buttons.end_selected)()
    return opened.args[0]


def test_end_process_confirm_then_sigterm_ends_it(themed, qtbot, start_child, tmp_path, artifacts_dir):
    p, start = start_child()
    panel, actions = panel_for(qtbot, p.pid, start, tmp_path)
    assert panel.buttons.end_button.isEnabled()
    dialog = confirmation(qtbot, panel)
    assert isinstance(dialog, EndProcessDialog) and dialog.isVisible()
    assert "time.sleep(120)" in dialog.fields["Command"].text()
    assert dialog.fields["Memory"].text() == "2.0 GiB"
    assert dialog.fields["User"].text() == psutil.Process(p.pid).username()
    assert dialog.fields["Age"].text().endswith("s")
    dialog.resize(560, 260)
    assert dialog.grab().save(str(artifacts_dir / "alerts_end_dialog.png"))
    with qtbot.waitSignal(panel.process_ended, timeout=5000) as ended:
        dialog.confirm_button.click()
    assert ended.args[0] == p.pid
    assert p.wait(timeout=5) == -15
    assert read_audit_log(tmp_path / "audit.jsonl")[0]["action"] == "SIGTERM"


@pytest.mark.slow
def test_survivor_is_offered_sigkill_after_the_grace_period(themed, qtbot, start_child, tmp_path):
    p, start = start_child(STUBBORN)
    panel, actions = panel_for(qtbot, p.pid, start, tmp_path)
    first = confirmation(qtbot, panel)
    first.confirm_button.click()
    qtbot.waitUntil(
        lambda: panel.buttons.active_dialog is not first and panel.buttons.active_dialog.isVisible(),
        timeout=5000,
    )
    kill = panel.buttons.active_dialog
    assert kill.mode == "kill" and "SIGKILL" in kill.confirm_button.text()
    with qtbot.waitSignal(panel.process_ended, timeout=5000):
        kill.confirm_button.click()
    assert p.wait(timeout=5) == -9


def test_cancel_sends_nothing_and_mismatched_identity_is_refused(themed, qtbot, start_child, tmp_path):
    p, start = start_child()
    panel, _ = panel_for(qtbot, p.pid, start, tmp_path)
    confirmation(qtbot, panel).reject()
    qtbot.wait(400)
    assert p.poll() is None
    stale, _ = panel_for(qtbot, p.pid, start - 50.0, tmp_path)  # the alert names an older process
    dialog = confirmation(qtbot, stale)
    assert dialog.confirm_button is None and "PID was reused" in dialog.refusal.text()
    assert p.poll() is None


def test_read_only_disables_end_process(themed, qtbot, start_child, tmp_path):
    p, start = start_child()
    panel, _ = panel_for(qtbot, p.pid, start, tmp_path, read_only=True)
    assert not panel.buttons.end_button.isEnabled()
    assert "read-only" in panel.buttons.end_button.toolTip()
    assert panel.request_end(panel.tree.selected_alert()) is False


# -- tray -----------------------------------------------------------------------------------


class RecordingTray:
    """Stands in for QSystemTrayIcon where the test desktop has none."""

    def __init__(self):
        self.messages = []

    def supportsMessages(self):
        return True

    def showMessage(self, title, text, icon, ms):
        self.messages.append((title, text))


@pytest.mark.slow
def test_tray_notifies_only_when_window_is_away_and_once_per_alert(themed, qtbot):
    from PySide6.QtWidgets import QWidget

    engine = demo_engine(330)
    alerts = engine.alerts()
    window = QWidget()
    qtbot.addWidget(window)
    tray = RecordingTray()
    notifier = TrayNotifier(window, tray=tray, available=True)
    window.show()
    assert notifier.notify(alerts) == []  # visible window: no desktop notification
    assert len(notifier.suppressed) == len([a for a in alerts if a.severity != "info"])
    window.hide()
    notifier.forget([])
    shown = notifier.notify(alerts)
    assert shown and tray.messages == shown
    assert notifier.notify(alerts) == []  # not repeated


@pytest.mark.slow
def test_tray_unavailable_degrades_quietly(themed):
    notifier = TrayNotifier(None, available=False)
    assert notifier.reason and notifier.notify(demo_engine(330).alerts()) == []
    assert notifier.suppressed


def test_watching_rows_below_the_alerts_greyed_and_without_actions(themed, qtbot):
    """'idle 3 of 5 min' is listed below the alerts, not counted, and offers no action."""
    from .cases import engine as suite_engine
    from .scenarios import frame, gpu, proc
    from .test_urgency import busy_scene

    eng = suite_engine()
    for t in range(0, 370, 10):  # the holder is an alert at 5 min; the kernel idle 6 of 10
        eng.feed(frame(t, busy_scene(0)))
    panel = AlertsPanel(eng, actions=None, clock=lambda: T0 + 370)
    qtbot.addWidget(panel)
    counts = []
    panel.counts_changed.connect(lambda n, c: counts.append((n, c)))
    panel.refresh()
    alerts, watches = panel.alerts(), panel.tree.watching()
    assert [w.message.split(": ")[-1] for w in watches] == ["kernel idle 6 of 10 min"]
    assert counts[-1][0] == len(alerts)  # watching is not counted as an alert
    last = panel.tree.topLevelItem(panel.tree.topLevelItemCount() - 1)
    assert last.text(0) == "watching" and last.text(1).startswith("kernel idle 6 of 10 min \u00b7 ")
    assert "becomes a squatter alert at 10 min" in last.text(4)
    panel.tree.setCurrentItem(last)
    assert panel.tree.selected_alert() is None and not panel.buttons.end_button.isEnabled()
    assert "Nothing to do yet" in panel.details.toPlainText()
    first = panel.tree.topLevelItem(0)
    assert first.text(0) != "watching"
    # with no alerts, the empty line says what is watched
    quiet = suite_engine()
    for t in range(0, 100, 10):
        quiet.feed(frame(t, [gpu([proc(77, 2 * GiB, sm=0)], util=0)]))
    panel2 = AlertsPanel(quiet, actions=None, clock=lambda: T0 + 100)
    qtbot.addWidget(panel2)
    panel2.refresh()
    assert panel2.alerts() == [] and len(panel2.tree.watching()) == 1
    assert "Watching 1" in panel2.empty.text()


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_urgent_first_screenshot(themed, qtbot, artifacts_dir, size):
    """A card seconds from full on top (critical), growth next, the idle holder below,
    the kernel watched below the alerts."""
    from .cases import engine as suite_engine
    from .scenarios import frame
    from .test_urgency import busy_scene

    eng = suite_engine()
    for t in range(0, 500, 5):
        eng.feed(frame(t, busy_scene(max(0, t - 300))))
        near = [a for a in eng.alerts() if a.kind == "near_oom"]
        if near and (near[0].data["eta_seconds"] or 99) < 30:
            break
    panel = AlertsPanel(eng, actions=None, clock=lambda: T0 + t)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    panel.refresh()
    rows = [panel.tree.topLevelItem(i) for i in range(panel.tree.topLevelItemCount())]
    assert rows[0].text(0) == "critical" and "Near out of memory" in rows[0].text(1)
    assert [r.text(0) for r in rows][-1] == "watching"
    assert panel.grab().save(str(artifacts_dir / f"alerts-urgent-{size[0]}x{size[1]}.png"))


def test_the_fix_comes_before_the_evidence_in_the_details():
    """On a 1,024 x 700 window the details show what to do without scrolling past the
    evidence; the squatter fixes lead with the action the Fix column shows."""
    from vramscope.core.detectors.naming import KERNEL, OTHER_USER, SQUATTER_FIXES, TRAINING
    from vramscope.ui.alerts.alert_texts import alert_html, first_sentence

    from .scenarios import GiB, proc

    p = proc(4242, 2 * GiB, sm=0)
    firsts = {kind: first_sentence(SQUATTER_FIXES[kind](p)) for kind in (TRAINING, KERNEL, OTHER_USER)}
    assert firsts[TRAINING] == "End process if it has nothing left to do." and firsts[KERNEL].startswith(
        "Shut it down"
    )
    assert not any(first.endswith("\u2026") for first in firsts.values())  # whole, not cut
    assert firsts[OTHER_USER].startswith("Ask its owner")
    from vramscope.core.detectors.alert import WARNING, Alert, AlertKind

    alert = Alert(
        kind=AlertKind.SQUATTER,
        severity=WARNING,
        gpu=0,
        pid=4242,
        start_time=1.0,
        since=1.0,
        message="train.py (4242) on GPU 0 holds 2.0 GiB",
        evidence=("holds 2.0 GiB on GPU 0",),
        fix=SQUATTER_FIXES[TRAINING](p),
    )
    html = alert_html(alert, 100.0)
    assert html.index("<b>Fix</b>") < html.index("<b>Evidence</b>")

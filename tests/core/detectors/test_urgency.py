"""Alerts in order of urgency, and the watching state for rules that need time."""

from __future__ import annotations

from vramscope.core.detectors.watching import watching_to_json

from .cases import KERNEL_CMD, SERVER_CMDS, engine
from .scenarios import GiB, MiB, frame, gpu, proc


def busy_scene(t):
    """GPU 0: train.py (4242) growing 100 MiB/s toward a full card, an idle holder that
    has held 3 GiB since t=0, a Jupyter kernel idle since t=0; GPU 1: an idle vLLM."""
    grower = proc(4242, 4 * GiB + 100 * MiB * t, sm=90)
    holder = proc(5151, 3 * GiB, sm=0, cmd=("python", "bench_matmul.py"))
    kernel = proc(3131, 2 * GiB, sm=0, cmd=KERNEL_CMD)
    server = proc(9001, 20 * GiB, sm=0, cmd=SERVER_CMDS["vllm"], ppid=1, parent_alive=False)
    return [
        gpu([grower, holder, kernel], total=24 * GiB, util=90),
        gpu([server], total=24 * GiB, util=0, index=1, uuid="GPU-1"),
    ]


def test_near_oom_seconds_from_full_is_first_and_critical_idle_holders_below():
    eng = engine()
    # the grower starts late enough that the holder is already an alert when the card fills
    alerts = []
    for t in range(0, 420, 5):
        g = busy_scene(max(0, t - 300))
        alerts = eng.feed(frame(t, g))
        near = [a for a in alerts if a.kind == "near_oom"]
        if near and near[0].data["eta_seconds"] is not None and near[0].data["eta_seconds"] < 30:
            break
    kinds = [a.kind for a in alerts]
    assert kinds[0] == "near_oom" and alerts[0].severity == "critical", kinds
    assert "full in about" in alerts[0].message
    assert kinds.index("squatter") > kinds.index("growth") > 0  # idle holders last
    assert alerts == eng.alerts()  # the Alerts tab and `status` read this order


def test_among_warnings_the_sooner_full_comes_first():
    from vramscope.core.detectors.alert import Alert, sort_alerts

    idle = Alert("squatter", "warning", 0, 1, None, 0.0, "idle")
    soon = Alert(
        "near_oom", "warning", 0, None, None, 50.0, "full in about 4 min", data={"eta_seconds": 240.0}
    )
    later = Alert("growth", "warning", 1, 2, None, 10.0, "grows", data={"seconds_to_full": 540.0})
    assert [a.message for a in sort_alerts([idle, later, soon])] == ["full in about 4 min", "grows", "idle"]


def test_watching_counts_up_to_the_alert_and_is_not_an_alert():
    eng = engine()
    seen = {}
    for t in range(0, 660, 10):
        alerts = eng.feed(frame(t, busy_scene(0)))
        seen[t] = ({w.message for w in eng.watching()}, {a.kind for a in alerts})
        if t == 240:
            rows = watching_to_json(eng.watching())
        assert not any(a.kind == "watching" for a in alerts)
    watching_at_180, _ = seen[180]
    assert "bench_matmul.py (5151) on GPU 0: idle 3 of 5 min" in watching_at_180
    watching_at_240, _ = seen[240]
    assert any(m.endswith("kernel idle 4 of 10 min") for m in watching_at_240)
    assert not any("9001" in m for m in watching_at_240)  # a server's pool is not watched
    watching_at_20, _ = seen[20]
    assert watching_at_20 == set()  # not in the first seconds: a pause between cells is nothing
    watching_at_310, kinds_at_310 = seen[310]
    assert "squatter" in kinds_at_310 and not any("5151" in m for m in watching_at_310)
    [row] = [r for r in rows if r["pid"] == 3131]
    assert row["needed_seconds"] == 600 and row["message"].endswith("of 10 min")


def test_a_busy_process_is_not_watched():
    eng = engine()
    for t in range(0, 200, 10):
        eng.feed(frame(t, [gpu([proc(4242, 8 * GiB, sm=80)], util=80)]))
    assert eng.watching() == []


def test_status_lists_alerts_by_urgency_then_what_it_watches(capsys):
    import argparse
    import io
    import json

    from vramscope.commands.status import emit

    eng = engine()
    last = None
    for t in range(0, 400, 5):  # the holder idle since 0; the grower from t=300
        last = frame(t, busy_scene(max(0, t - 300)))
        eng.feed(last)
    out = io.StringIO()
    emit(last, argparse.Namespace(json=False, diagnostics=eng), out)
    text = out.getvalue()
    alerts = text[text.index("alerts:") : text.index("watching (not alerts yet):")]
    assert alerts.index("near out of memory") < alerts.index("bench_matmul.py (5151)")
    assert "kernel idle 6 of 10 min" in text.split("watching (not alerts yet):")[1]
    out = io.StringIO()
    emit(last, argparse.Namespace(json=True, diagnostics=eng), out)
    data = json.loads(out.getvalue())
    assert data["alerts"][0]["kind"] == "near_oom"
    assert [w["pid"] for w in data["watching"]] == [3131]

"""The OOM alert and the OOM post-mortem name the same fix: the least damaging
one that covers the shortfall (agent/oom/oom_fixes.py), so the alerts tab and the
agents tab never disagree about what to do first."""

from __future__ import annotations

from vramscope.agent.oom import oom_fixes
from vramscope.core.agent_figures import oom_context
from vramscope.core.detectors import Diagnostics

from tests.agent.oom.test_oom_postmortem import _event

from .scenarios import GiB, MiB, T0, AgentEvent, agent, device, frame, gpu, proc

PID = 500


def _oom_alert(data):
    engine = Diagnostics()
    g = gpu([proc(PID, 20 * GiB, sm=90), proc(4242, 600 * MiB)], total=24 * GiB, util=90)
    alerts = engine.feed(
        frame(3, [g], [agent(PID, [device(18 * GiB, 19 * GiB)], [AgentEvent("oom", T0 + 3, data)])])
    )
    return next(a for a in alerts if a.kind == "oom")


def test_the_alert_leads_with_the_post_mortems_least_damaging_covering_fix():
    for requested in (2 * GiB, GiB + 200 * MiB):  # micro-batch first; then expandable segments
        data = _event(requested=requested)
        alert = _oom_alert(dict(data))
        first = oom_fixes.least_damaging(oom_context.report_of(alert.data | data)["fixes"])
        short = "1.0 GiB" if requested == 2 * GiB else "200.0 MiB"
        assert alert.fix.startswith(
            f"Fixes that cover the {short} shortfall, least damaging first: {first['fix']} ("
        )
        assert "try an 8-bit optimizer first" not in alert.fix  # no second, contradicting order


def test_without_a_covering_fix_the_alert_gives_the_usual_order_only():
    alert = _oom_alert(_event(requested=31 * GiB))
    assert not alert.fix.startswith("Fixes that cover") and "Surviving step 1" in alert.fix
    assert "dominate" in alert.fix  # the usual order, from the bucket that dominates

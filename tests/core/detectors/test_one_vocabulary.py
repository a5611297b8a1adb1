"""One word per thing: an alert's bucket words are the window's, every alert kind a rule
raises has a title and a place in the urgency order."""

from __future__ import annotations

from vramscope.agent.protocol import BUCKETS
from vramscope.core.detectors.alert import KIND_TITLES, URGENCY_ORDER, Alert, AlertKind, sort_alerts
from vramscope.core.samples import BUCKET_LABELS

from .scenarios import GiB, buckets
from .test_near_oom_advice import near_oom_with


def test_the_near_oom_alert_names_the_buckets_as_the_window_does():
    alert = near_oom_with(
        buckets(weights=6 * GiB, gradients=6 * GiB, optimizer_state=2 * GiB, other=1 * GiB, cached=8 * GiB)
    )
    assert alert.kind is AlertKind.NEAR_OOM
    lines = "\n".join(alert.evidence)
    for bucket in ("weights", "optimizer_state", "other_allocated", "cached_free"):
        assert f"{BUCKET_LABELS[bucket]} " in lines, (bucket, lines)
    assert set(BUCKET_LABELS) == set(BUCKETS)  # one label per bucket, no other table


def test_every_alert_kind_has_a_title_and_an_urgency():
    for kind in AlertKind:
        assert KIND_TITLES[kind] and KIND_TITLES[kind] != kind.value
    assert list(URGENCY_ORDER) == list(AlertKind)
    # an OOM sorts before a squatter of the same severity: the order is the enum's
    alerts = [
        Alert(kind=k, severity="warning", gpu=0, pid=None, start_time=None, since=0.0, message="")
        for k in (AlertKind.SQUATTER, AlertKind.OOM)
    ]
    assert [a.kind for a in sort_alerts(alerts)] == [AlertKind.OOM, AlertKind.SQUATTER]

"""The window takes its sampler process's alerts (core/detectors/taken.py): what
the sampler judged is shown as sent, the window's own rules do not run on it, and
acknowledging and muting stay the window's."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from vramscope.core.detectors import Diagnostics, alerts_to_json
from vramscope.core.detectors.alert import alert_from_json
from vramscope.core.detectors.taken import TakenAlerts

from .scenarios import GiB, frame, gpu, proc

# 23.5 of 24 GiB used: the window's own near-OOM rule would flag this GPU
FULL = [gpu([proc(4242, 23 * GiB, sm=90)])]


def _sent_by_a_sampler():
    engine = Diagnostics()
    for t in range(3):
        engine.feed(frame(t, FULL))
    sent = json.loads(json.dumps(alerts_to_json(engine.alerts())))  # as the stream carries them
    assert sent, "the scenario raises something"
    return sent


def test_the_sampler_s_alerts_are_shown_as_sent():
    sent = _sent_by_a_sampler()
    taken = TakenAlerts(lambda f: sent)
    taken.feed(frame(0, FULL))
    assert alerts_to_json(taken.alerts()) == sent


def test_a_frame_the_sampler_judged_healthy_raises_nothing_in_the_window():
    taken = TakenAlerts(lambda f: [])
    for t in range(3):
        taken.feed(frame(t, FULL))
    assert taken.alerts() == []


def test_a_frame_the_sampler_did_not_judge_is_judged_by_the_window():
    taken, plain = TakenAlerts(lambda f: None), Diagnostics()
    for t in range(3):
        taken.feed(frame(t, FULL))
        plain.feed(frame(t, FULL))
    assert taken.alerts() == plain.alerts() != []


def test_acknowledge_and_mute_hide_taken_alerts_until_they_return_worse():
    sent = _sent_by_a_sampler()
    taken = TakenAlerts(lambda f: sent)
    taken.feed(frame(0, FULL))
    first = taken.alerts()[0]
    taken.acknowledge(first)
    taken.feed(frame(1, FULL))
    assert first.key not in {a.key for a in taken.alerts()}
    assert first.key in {a.key for a in taken.alerts(include_hidden=True)}
    taken.mute(first.identity)
    taken.feed(frame(2, FULL))
    assert all(a.identity != first.identity for a in taken.alerts())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "kind",
                "severity",
                "gpu",
                "pid",
                "since",
                "message",
                "evidence",
                "fix",
                "start_time",
                "device",
                "frees_bytes",
                "data",
                "host",
                "host_index",
            ]
        )
        | st.text(max_size=5),
        json_values,
        max_size=8,
    )
    | json_values
)
def test_anything_sent_as_an_alert_decodes_or_is_dropped(value):
    alert = alert_from_json(value)
    if alert is not None:  # what decodes encodes back to what was sent
        again = alerts_to_json([alert])[0]
        assert {k: v for k, v in again.items() if k in value} == {
            k: (list(v) if k == "evidence" else v) for k, v in value.items() if k in again
        }


def test_what_the_sampler_is_watching_reaches_the_window():
    """An idle holder 2 minutes in ("idle 2 of 5 min"): not an alert yet, but the
    window reading its sampler lists it below the alerts as the sampler does."""
    from vramscope.commands.stream import StreamWriter
    from vramscope.core.stream.delta_reader import FrameAssembler

    idle = [gpu([proc(777, 4 * GiB, sm=0)], util=0)]
    engine = Diagnostics()
    for t in range(0, 130, 10):
        engine.feed(frame(t, idle))
    assert engine.watching(), "the scenario is being watched"
    lines = []

    class Out:
        def write(self, data):
            lines.append(data)

        def flush(self):
            pass

    import threading

    StreamWriter(Out(), engine, threading.Event())(frame(130, idle))
    got, alerts = FrameAssembler().whole(json.loads(lines[-1]))
    taken = TakenAlerts(lambda f: alerts)
    taken.feed(got)
    assert [(w.kind, w.pid, w.progress) for w in taken.watching()] == [
        (w.kind, w.pid, w.progress) for w in engine.watching()
    ]
    assert taken.alerts() == [] == engine.alerts()

"""New thresholds and a new interval reach the window's running sampler process
as one request on its stdin: applied from the next pass, the same process and
the same session going on (no restart, no second session file); a request that
does not fit changes nothing and is answered with why."""

from __future__ import annotations

import dataclasses
import io
import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vramscope.commands.stream import StreamWriter, serve_requests
from vramscope.core.end_process.actions import ProcessActions
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.flow.monitor import Monitor
from vramscope.core.stream import protocol
from vramscope.core.stream.settings_request import settings_message
from vramscope.sources.demo.simulated import SimulatedSource

pytestmark = pytest.mark.timeout(60)


def _serve(monitor, *messages) -> list[dict]:
    out = io.BytesIO()
    stop = threading.Event()
    lines = [(m if isinstance(m, str) else json.dumps(m)).encode() + b"\n" for m in messages]
    serve_requests(
        iter(lines), StreamWriter(out, engine=None, stop=stop), ProcessActions(read_only=True), stop, monitor
    )
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_thresholds_and_interval_are_applied_to_the_running_monitor():
    monitor = Monitor.build(SimulatedSource(), interval=1.0, actions=False)
    mine = dataclasses.replace(DiagnosticSettings(), idle_minutes=2.5, kernel_idle_minutes=7.0)
    answers = _serve(monitor, {**settings_message(mine, interval=0.5), "id": 3})
    assert answers == [{"type": "result", "id": 3, "ok": True, "value": None}]
    assert monitor.engine.settings == mine
    assert monitor.pipeline.interval == 0.5
    answers = _serve(monitor, {**settings_message(interval=2.0), "id": 4})  # thresholds stay
    assert answers[0]["ok"] and monitor.engine.settings == mine and monitor.pipeline.interval == 2.0


@pytest.mark.parametrize(
    "bad",
    [
        {"thresholds": {"idle_minutes": "soon"}},
        {"thresholds": [1, 2]},
        {"thresholds": {"idle_minutes": 3.0}, "interval": "1s"},
        {"interval": True},
        {"interval": "NaN"},
    ],
)
def test_a_settings_request_that_does_not_fit_changes_nothing_and_says_why(bad):
    monitor = Monitor.build(SimulatedSource(), interval=1.0, actions=False)
    before = monitor.engine.settings
    (answer,) = _serve(monitor, {"type": protocol.SETTINGS, "id": 9, **bad})
    assert answer["ok"] is False and answer["id"] == 9
    assert answer["error"].startswith("settings not applied")
    assert monitor.engine.settings == before and monitor.pipeline.interval == 1.0


def test_a_stream_without_a_monitor_refuses_settings_and_goes_on_answering():
    answers = _serve(
        None,
        {**settings_message(interval=0.5), "id": 1},
        {"type": "act", "id": 2, "op": "is_alive", "pid": 1, "start_time": 1.0},
    )
    assert answers[0]["ok"] is False and "takes no settings" in answers[0]["error"]
    assert answers[1]["id"] == 2 and answers[1]["ok"] is True


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["thresholds", "interval", "id"]),
        st.from_type(object).filter(lambda v: not callable(v))
        | st.floats()
        | st.integers()
        | st.text(max_size=5),
        max_size=3,
    )
)
def test_any_settings_request_is_answered_once_and_never_raises(fields):
    try:
        json.dumps(fields)
    except (TypeError, ValueError):
        return  # not a line anyone can send
    monitor = Monitor.build(SimulatedSource(), interval=1.0, actions=False)
    answers = _serve(monitor, {**fields, "type": protocol.SETTINGS})
    assert len(answers) == 1 and answers[0]["type"] == "result" and isinstance(answers[0]["ok"], bool)

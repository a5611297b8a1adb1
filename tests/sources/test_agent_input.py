"""Decoding what an agent sends: typed values out, or one line saying why not."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vramscope.core.samples import AgentDevice
from vramscope.sources.agents import agent_input

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
DECODERS = (agent_input.hello, agent_input.sample, agent_input.step, agent_input.event)


def _one_line(exc: ValueError) -> str:
    text = str(exc)
    assert text and "\n" not in text and len(text) < 200, text
    return text


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    raw=json_values
    | st.dictionaries(
        st.sampled_from(
            [
                "t",
                "pid",
                "step",
                "devices",
                "event",
                "data",
                "settings",
                "models",
                "agent",
                "phases",
                "phase_peaks",
                "phase_order",
                "phase_times",
                "start_time",
            ]
        ),
        json_values,
        max_size=8,
    )
)
def test_any_json_is_a_typed_value_or_a_one_line_reason(raw):
    for decode in DECODERS:
        try:
            value = decode(raw)
        except ValueError as exc:
            _one_line(exc)
            continue
        assert type(value).__dataclass_params__.frozen
        if isinstance(value, agent_input.Sample):
            assert all(isinstance(d, AgentDevice) for d in value.devices)
            for d in value.devices:
                assert all(v is None or type(v) is int for v in (d.allocated, d.reserved, d.peak_allocated))


@pytest.mark.parametrize(
    "decode,raw,reason",
    [
        (agent_input.hello, [1, 2], "the handshake is not an object"),
        (agent_input.hello, {"pid": 10**30}, "the handshake names no valid pid"),
        (agent_input.sample, {"t": 1e400}, "an item without a finite time"),
        (agent_input.sample, {"t": 1.0, "devices": "cuda:0"}, "a sample's devices are not a list"),
        (agent_input.sample, {"t": 1.0, "devices": [{"allocated": 1}]}, "a device entry without a name"),
        (agent_input.step, {"t": 1.0}, "a step item without a step number"),
        (
            agent_input.step,
            {"t": 1.0, "step": 3, "devices": {"cuda:0": 5}},
            "not a StepItem: StepDevice expects an object, got 5",
        ),
        (agent_input.event, {"t": 1.0, "event": 7}, "an event without a kind"),
    ],
)
def test_malformed_items_are_rejected_with_the_reason(decode, raw, reason):
    with pytest.raises(ValueError) as info:
        decode(json.loads(json.dumps(raw)) if raw != {"t": 1e400} else raw)
    assert _one_line(info.value) == reason


def test_a_sample_decodes_into_what_the_window_shows():
    s = agent_input.sample(
        {
            "t": 5.0,
            "step": 12,
            "settings": {"backend": "native", "conf": ["not", "a", "scalar"]},
            "agent": {"phases_measured": 0.25},
            "devices": [
                {
                    "device": "cuda:0",
                    "uuid": "GPU-1",
                    "allocated": 1000,
                    "reserved": 3000.0,
                    "peak_allocated_bound": 1500,
                    "buckets": {"weights": 600, "gradients": None},
                    "buckets_note": "why",
                    "missing": ["active", 3],
                }
            ],
        }
    )
    (d,) = s.devices
    assert (s.t, s.step, s.phases_measured, dict(s.settings)) == (5.0, 12, 0.25, {"backend": "native"})
    assert (d.device, d.gpu_uuid, d.allocated, d.reserved, d.peak_allocated_bound) == (
        "cuda:0",
        "GPU-1",
        1000,
        3000,
        1500,
    )
    assert (d.buckets.weights, d.buckets.gradients, d.buckets.note, d.missing) == (
        600,
        None,
        "why",
        ("active",),
    )
    with pytest.raises((AttributeError, TypeError)):
        s.settings["backend"] = "other"  # frozen all the way: one sample, shared by the window and status


def test_a_step_becomes_the_step_event_sessions_record():
    item = {
        "t": 2.0,
        "step": 4,
        "duration": 0.5,
        "phase_order": ["forward"],
        "devices": {
            "cuda:1": {"peak_allocated": 9, "allocated_after": 3},
            "cuda:0": {"peak_allocated": 7, "allocated_after": 2},
        },
        "phases": {"cuda:0": {"forward": 5}},
    }
    for junk in ({"phase_order": ["forward", 9]}, {"phases": {"cuda:0": {"forward": 5}, "cuda:1": "junk"}}):
        with pytest.raises(ValueError, match="^not a StepItem: "):  # refused whole, with the reason
            agent_input.step({**item, **junk})
    st_ = agent_input.step(item)
    data = st_.event_data()
    assert (data["step"], data["duration"], data["peak_allocated"], data["allocated_after"]) == (4, 0.5, 7, 2)
    assert data["phases"] == {"cuda:0": {"forward": 5}} and data["phase_order"] == ["forward"]

"""The measured input and the sharded figures an agent sends (sources/agents/agent_input.py)
are untrusted: anything decodes to the right types or to None, never raises."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vramscope.sources.agents import agent_input

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(
    st.dictionaries(st.sampled_from(["batch", "seq", "output_bytes", "model", "x"]), json_values)
    | json_values
)
def test_measured_input_is_typed_or_none(raw):
    out = agent_input.measured_input(raw)
    if out is not None:
        assert isinstance(out["batch"], int) and not isinstance(out["batch"], bool) and out["batch"] >= 1
        assert out["seq"] is None or (isinstance(out["seq"], int) and out["seq"] >= 1)
        assert out["model"] is None or isinstance(out["model"], str)


@given(
    st.dictionaries(st.sampled_from(["fsdp_unsharded", "ddp_buckets", "other"]), json_values) | json_values
)
def test_sharded_figures_are_bytes_per_device_or_none(raw):
    out = agent_input.sharded(raw)
    if out is not None:
        assert set(out) <= set(agent_input.SHARDED)
        for per in out.values():
            assert per is None or all(
                isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in per.items()
            )


def test_a_sample_keeps_good_figures():
    s = agent_input.sample(
        {
            "t": 1.0,
            "devices": [],
            "input": {"batch": 4, "seq": "x"},
            "sharded": {"ddp_buckets": {"cuda:0": 1024, "cuda:1": -5}},
        }
    )
    assert s.input == {"batch": 4, "seq": None, "output_bytes": None, "model": None}
    assert s.sharded == {"ddp_buckets": {"cuda:0": 1024}}

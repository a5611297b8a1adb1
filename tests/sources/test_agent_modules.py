"""A modules item from an agent is untrusted: whatever it holds becomes ModuleFigures
with integer-or-None figures (None with a reason), or the item is refused -- never a
traceback in the sampler thread."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from vramscope.core.agent_figures.module_figures import FIGURES
from vramscope.sources.agents.agent_modules import BAD_FIGURE, decode

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
rows = st.dictionaries(
    st.sampled_from(
        ["name", "parent", "weights", "gradients", "optimizer_state", "activations", "shared", "why"]
    ),
    json_values,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(step=json_values, modules=st.lists(rows | json_values, max_size=6), device=json_values)
def test_any_item_decodes_to_checked_figures_or_is_refused(step, modules, device):
    try:
        out = decode({"step": step, "modules": modules, "device": device})
    except ValueError:
        return
    for m in out:
        assert isinstance(m.name, str) and m.name
        for f in FIGURES:
            v = getattr(m, f)
            assert v is None or (type(v) is int and v >= 0)
        if any(getattr(m, f) is None for f in FIGURES):
            assert m.why


def test_a_figure_that_is_not_a_byte_count_is_unavailable_with_a_reason():
    [m] = decode(
        {
            "step": 3,
            "device": "cuda:0",
            "modules": [
                {
                    "name": "h.0",
                    "parent": None,
                    "weights": -5,
                    "gradients": True,
                    "optimizer_state": 1.5,
                    "activations": 10,
                    "shared": "yes",
                }
            ],
        }
    )
    assert (m.weights, m.gradients, m.optimizer_state, m.activations) == (None, None, None, 10)
    assert m.why == BAD_FIGURE and m.shared is False and m.measured_step == 3


def test_an_item_without_a_step_is_refused():
    with pytest.raises(ValueError):
        decode({"modules": []})

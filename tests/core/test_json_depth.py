"""JSON nested too deep is refused (agent/json_limits.py), read from the text.

Whatever vramscope reads that it did not write goes through ``json_limits.loads``:
nesting deeper than the limit is a one-line ``ValueError``. The depth is read
from the text with string operations; it must agree with the parsed value's
depth for any JSON, brackets and escaped quotes inside strings included.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vramscope.agent.json_limits import TooDeep, depth_within, loads

# Strings full of what could confuse a reader of the text: brackets, quotes,
# backslashes, escapes.
TRICKY = st.text(alphabet=st.sampled_from(list('[]{}"\\/ab\n\u00e9\u2028')), max_size=8)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TRICKY
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
    max_leaves=30,
)


def nesting(value) -> int:
    if isinstance(value, list):
        return 1 + max((nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((nesting(v) for v in value.values()), default=0)
    return 0


@given(VALUES, st.integers(min_value=0, max_value=7), st.booleans(), st.sampled_from([None, 1]))
def test_the_depth_read_from_the_text_is_the_value_s(value, limit, ascii_only, indent):
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert depth_within(text, limit) == (nesting(value) <= limit)


@given(VALUES, st.integers(min_value=0, max_value=7))
def test_loads_refuses_exactly_what_nests_past_the_limit(value, limit):
    text = json.dumps(value)
    if nesting(value) > limit:
        with pytest.raises(TooDeep):
            loads(text, limit)
    else:
        assert loads(text, limit) == value


@pytest.mark.parametrize("depth", [64, 65, 300, 900])
def test_the_default_limit_at_and_past_its_edge(depth):
    text = '{"a": ' + "[" * (depth - 1) + '"]]]"' + "]" * (depth - 1) + "}"
    if depth <= 64:
        assert loads(text)["a"]
    else:
        with pytest.raises(TooDeep, match="nested deeper than 64 levels"):
            loads(text)

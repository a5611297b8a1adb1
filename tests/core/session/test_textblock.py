"""The vectorised text renderer writes what Python's own formatting would."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vramscope.core.export import textblock as tb

ints = st.integers(min_value=-(2**52), max_value=2**52)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ints, st.booleans()), min_size=1, max_size=50))
def test_integers(rows):
    values = np.array([v for v, _ in rows], np.int64)
    present = np.array([p for _, p in rows])
    n = len(rows)
    text, ends = tb.render([tb.integer(values, present), tb.lit(b"\n", n)])
    assert text.decode().split("\n")[:-1] == [str(v) if p else "" for v, p in rows]
    assert ends[-1] == len(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.floats(min_value=-1e9, max_value=1e9), st.just(float("nan"))), st.integers(0, 3)
        ),
        min_size=1,
        max_size=50,
    )
)
def test_numbers_with_up_to_three_decimals(rows):
    values = np.array([v for v, _ in rows], np.float64)
    decimals = np.array([d for _, d in rows])
    n = len(rows)
    text, _ = tb.render([tb.number(values, decimals), tb.lit(b"\n", n)])
    for line, (v, d) in zip(text.decode().split("\n"), rows):
        if np.isnan(v):
            assert line == ""
        else:
            assert abs(float(line) - v) <= 0.5 * 10**-d + 1e-9 * abs(v)
            assert "e" not in line and (d > 0 or "." not in line)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 4_000_000_000_000_000), min_size=1, max_size=50))
def test_fixed_microseconds(values):
    a = np.array(values, np.int64)
    text, _ = tb.render([tb.fixed(a, 6), tb.lit(b"\n", len(a))])
    assert text.decode().split("\n")[:-1] == [f"{v // 10**6}.{v % 10**6:06d}" for v in values]

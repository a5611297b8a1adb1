"""The table's growth figure and the stacked view's layers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vramscope.core.processes.growth import growth_per_minute, sparkline
from vramscope.core.processes.stacking import align, choose_layers, corners, cumulative, stretch_starts, thin
from vramscope.core.units import GiB, MiB


def test_growth_is_mib_per_minute_and_one_spike_makes_no_trend():
    t = np.arange(0.0, 300.0)
    rising = 2 * GiB + 40 * MiB * t / 60.0
    assert abs(growth_per_minute(t, rising, 299.0) - 40.0) < 0.01
    flat = np.full(300, 3.0 * GiB)
    flat[150] = 9 * GiB  # one spike
    assert growth_per_minute(t, flat, 299.0) == 0.0
    assert growth_per_minute(t[:30], rising[:30], 29.0) is None  # under a minute: no figure yet
    with_gap = rising.copy()
    with_gap[100:200] = np.nan  # n/a samples are left out, not read as 0
    assert abs(growth_per_minute(t, with_gap, 299.0) - 40.0) < 0.01


def test_the_sparkline_keeps_a_spike():
    t = np.arange(0.0, 300.0)
    v = np.full(300, 1.0 * GiB)
    v[77] = 5 * GiB
    line = sparkline(t, v, 299.0, points=24)
    assert 0 < len(line) <= 24 and max(line) == 5 * GiB


times = st.lists(st.integers(0, 400), max_size=60).map(lambda xs: np.array(sorted(xs), dtype=float))


@settings(max_examples=300, deadline=None)
@given(times, times)
def test_each_stretch_starts_once_where_its_first_sample_is(t, edges):
    starts = stretch_starts(t, edges)
    found = np.searchsorted(t, edges, side="left")
    assert starts.tolist() == np.unique(found[found < len(t)]).tolist()


@settings(max_examples=200, deadline=None)
@given(times, st.integers(1, 30))
def test_the_sparkline_is_the_peak_of_each_stretch_holding_samples(t, points):
    """However late the history begins (a process seen for 40 s of a 300 s
    window), each point is the highest reading of one equal stretch of time."""
    v = (t * 7919.0) % 1013.0  # any values, a different one at each time
    now = 400.0
    line = sparkline(t, v, now, points=points)
    kept = t >= now - 300.0
    if kept.sum() < 2:
        assert line == ()
        return
    tk, vk = t[kept], v[kept]
    edges = np.linspace(now - 300.0, now, points + 1)
    inside = [(tk >= lo) & ((tk < hi) | (hi == now)) for lo, hi in zip(edges[:-1], edges[1:])]
    expected = [vk[c].max() for c in inside if c.any()]
    assert list(line) == expected


def test_layers_largest_first_small_ones_grouped_alerted_kept_apart():
    current = {("p", i): (i + 1) * GiB for i in range(10)}
    order = list(current)
    own, rest = choose_layers(current, order, must=set(), expanded=False, shown=4, fits=4)
    assert own == [("p", 9), ("p", 8), ("p", 7), ("p", 6)]  # as many as the legend has rows for
    assert sorted(rest) == [("p", i) for i in range(6)]
    # with room for more, the largest of the rest stand alone until "others" is not the largest
    own, rest = choose_layers(current, order, must=set(), expanded=False, shown=4, fits=8)
    assert own == [("p", i) for i in range(9, 3, -1)] and sum(current[k] for k in rest) <= 10 * GiB
    own, rest = choose_layers(current, order, must={("p", 0)}, expanded=False, shown=4, fits=4)
    assert ("p", 0) in own and len(own) == 4 and ("p", 6) in rest  # the alerted one takes a place
    own, rest = choose_layers(current, order, must=set(), expanded=True, shown=4)
    assert rest == [] and len(own) == 10
    # a group of one is just that process
    own, rest = choose_layers({k: current[k] for k in order[:5]}, order, set(), False, shown=4)
    assert rest == [] and len(own) == 5


def test_alignment_thinning_and_the_stack_adds_up():
    base = np.arange(0.0, 100.0)
    t = np.arange(10.0, 20.0)
    a = align(base, t, np.full(10, 2.0))
    assert a[10:20].tolist() == [2.0] * 10 and a[:10].sum() == 0 and a[20:].sum() == 0
    assert align(base, t, np.full(10, np.nan)).sum() == 0  # n/a is not stacked
    tops = cumulative([np.ones(100), np.full(100, 2.0)])
    assert tops[-1].tolist() == [3.0] * 100
    tops[1, 42] = 50.0  # a spike
    tt, thinned = thin(base, tops, 10)
    assert len(tt) == 10 and thinned[1].max() == 50.0 and (thinned[1] >= thinned[0]).all()


def test_a_gpu_nothing_runs_on_is_thinned_to_its_columns_with_no_layers():
    """An idle GPU's long history: no band, and its times thinned like any other's."""
    base = np.arange(0.0, 1000.0)
    tt, tops = thin(base, cumulative([], len(base)), 100)
    assert len(tt) == 100 and tops.shape == (0, 100)


def test_thinning_gives_each_stretch_of_time_the_same_columns():
    """22 h of 10 s peaks then 2 h of 1 s samples: a 24 h plot gives the last 2 h
    its share of the width (1/12), not half of it."""
    t = np.concatenate([np.arange(0.0, 22 * 3600, 10.0), np.arange(22 * 3600.0, 24 * 3600.0)])
    tops = np.ones((1, len(t)))
    tt, _ = thin(t, tops, 240)
    recent = (tt >= 22 * 3600).sum()
    assert len(tt) <= 240 and 15 <= recent <= 25


def test_growth_colours_only_a_real_current_trend():
    """The Growth figure (and its warning colour, process_rows.GROWTH_WARN) uses the
    growth rule's regime and significance: a ramp that ended 90 s ago reads flat,
    workers oscillating +-150 MiB read flat, a real climb keeps its rate."""
    from vramscope.core.processes.process_rows import GROWTH_WARN

    t = np.arange(0.0, 300.0, 2.0)
    ramp_ended = 2 * GiB + np.minimum(t, 210.0) * 4491 * MiB / 60.0  # flat from t=210 s
    rate = growth_per_minute(t, ramp_ended, 299.0)
    assert rate is not None and abs(rate) < GROWTH_WARN
    rng = np.random.default_rng(3)
    oscillating = 2.5 * GiB + rng.uniform(-150, 150, len(t)) * MiB
    assert growth_per_minute(t, oscillating, 299.0) == 0.0
    climbing = 2 * GiB + 18 * MiB * t / 60.0 + rng.uniform(-4, 4, len(t)) * MiB
    assert abs(growth_per_minute(t, climbing, 299.0) - 18.0) < 2.0
    assert growth_per_minute(t, climbing, 299.0) >= GROWTH_WARN


def test_a_line_keeps_its_corners_and_its_gaps():
    t = np.arange(10.0)
    flat = np.full(10, 24.0)
    assert corners(t, flat)[0].tolist() == [0.0, 9.0]  # a capacity: its two ends
    v = np.array([1.0, 1.0, 1.0, 2.0, 2.0, np.nan, np.nan, 3.0, 3.0, 3.0])
    x, y = corners(t, v)
    assert x.tolist() == [0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]  # each step, both ends
    assert np.isnan(y[4]) and np.isnan(y[5])  # n/a still breaks the line (never drawn as a figure)
    back = y[np.searchsorted(x, t, side="right") - 1]  # every point left out lies on the line
    assert np.array_equal(back, v, equal_nan=True)
    rising = np.arange(5.0)
    assert corners(rising[:5], rising)[0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]

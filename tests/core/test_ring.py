"""Ring and TieredRing against plain-list models: what a plot of the store shows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vramscope.core.store.ring import Ring, TieredRing

values = st.one_of(st.none(), st.floats(min_value=0, max_value=1e12, allow_nan=False))


@given(capacity=st.integers(1, 20), vals=st.lists(st.floats(-1e9, 1e9), max_size=80))
def test_ring_keeps_the_newest_capacity_items_in_order(capacity, vals):
    ring = Ring(capacity)
    for i, v in enumerate(vals):
        ring.append(float(i), v)
    t, v = ring.arrays()
    model = list(enumerate(vals))[-capacity:]
    assert t.tolist() == [float(i) for i, _ in model]
    assert v.tolist() == [x for _, x in model]
    assert len(ring) == len(model)
    if model:
        assert ring.last() == (float(model[-1][0]), model[-1][1])
    else:
        assert ring.last() is None


def test_ring_wraps_around_and_arrays_are_copies():
    ring = Ring(3)
    for i in range(7):
        ring.append(float(i), i * 10.0)
    t, v = ring.arrays()
    assert t.tolist() == [4.0, 5.0, 6.0]
    assert v.tolist() == [40.0, 50.0, 60.0]
    v[0] = -1  # a reader scribbling on its copy changes nothing stored
    assert ring.arrays()[1].tolist() == [40.0, 50.0, 60.0]
    assert ring.first_time() == 4.0


def test_ring_rejects_zero_capacity():
    with pytest.raises(ValueError):
        Ring(0)


def _model_peaks(samples, step):
    """bucket -> peak of the non-missing values (NaN when all were missing)."""
    peaks = {}
    for t, v in samples:
        b = math.floor(t / step)
        cur = peaks.get(b, math.nan)
        if v is not None and (math.isnan(cur) or v > cur):
            cur = float(v)
        peaks[b] = cur
    return peaks


@settings(max_examples=150, deadline=None)
@given(
    fine=st.integers(1, 12),
    step=st.sampled_from([1.0, 2.5, 10.0]),
    gaps=st.lists(st.sampled_from([0.5, 1.0, 1.0, 3.0, 11.0]), min_size=1, max_size=90),
    data=st.data(),
)
def test_tiered_ring_never_loses_a_peak_and_stays_in_time_order(fine, step, gaps, data):
    vals = data.draw(st.lists(values, min_size=len(gaps), max_size=len(gaps)))
    ring = TieredRing(fine_points=fine, coarse_step=step, coarse_points=1000)
    samples, t = [], 100.0
    for gap, v in zip(gaps, vals):
        t += gap
        ring.append(t, v)
        samples.append((t, v))

    times, vs = ring.arrays()
    assert np.all(np.diff(times) > 0), "a plot needs strictly increasing x"
    # the newest `fine` samples are there exactly as they came (None -> NaN)
    raw = samples[-fine:]
    assert times[-len(raw) :].tolist() == [s[0] for s in raw]
    assert [None if math.isnan(x) else x for x in vs[-len(raw) :]] == [
        None if s[1] is None else float(s[1]) for s in raw
    ]
    # the highest value ever seen is still in the series: the spike that hit
    # the capacity line an hour ago must not vanish from the plot
    seen = [v for _, v in samples if v is not None]
    if seen:
        assert np.nanmax(vs) == max(seen)
    else:
        assert np.all(np.isnan(vs))
    # each coarse point is the peak of its whole bucket
    peaks = _model_peaks(samples, step)
    ct, cv = ring.coarse.arrays()
    for tt, vv in zip(ct, cv):
        want = peaks[math.floor(tt / step)]
        assert (math.isnan(vv) and math.isnan(want)) or vv == want


def test_tiered_ring_day_of_seconds_keeps_recent_raw_and_older_peaks():
    ring = TieredRing(fine_points=600, coarse_step=10.0, coarse_points=9000)
    for i in range(86400):
        ring.append(float(i), 1000.0 + (50_000.0 if i == 3605 else i % 7))
    t, v = ring.arrays()
    assert len(t) < 600 + 86400 // 10 + 2  # bounded, not one point per second
    assert t[-600:].tolist() == [float(i) for i in range(86400 - 600, 86400)]
    assert v.max() == 51_000.0  # the spike one day back is still drawn
    spike_t = t[np.argmax(v)]
    assert 3600.0 <= spike_t <= 3605.0  # at its bucket, not smeared elsewhere


def test_arrays_since_returns_the_window_plus_one_point_before():
    ring = TieredRing(fine_points=50, coarse_step=10.0, coarse_points=100)
    for i in range(200):
        ring.append(float(i), float(i))
    t, v = ring.arrays(since=180.0)
    assert t[0] == 179.0  # one point before, so the line enters the window
    assert t[1:].tolist() == [float(i) for i in range(180, 200)]
    # a window reaching back past the raw samples gets the coarse peaks there
    t, v = ring.arrays(since=100.0)
    assert t[0] <= 100.0 and t[-1] == 199.0
    older = t[t < 150.0]
    assert len(older) < 50 and older.min() >= 90.0
    assert v[t < 150.0].max() == 149.0  # the bucket straddling the raw part keeps its peak
    assert ring.arrays(since=500.0)[0].tolist() == [199.0]


def test_none_is_stored_as_nan_never_zero():
    ring = TieredRing(fine_points=4, coarse_step=10.0, coarse_points=4)
    ring.append(1.0, None)
    ring.append(2.0, 5.0)
    ring.append(3.0, None)
    t, v = ring.arrays()
    assert math.isnan(v[0]) and v[1] == 5.0 and math.isnan(v[2])
    assert ring.coarse.arrays()[1].tolist() == [5.0]  # the bucket's peak ignores n/a


def test_nbytes_is_bounded_by_capacity_not_by_samples():
    ring = TieredRing(fine_points=100, coarse_step=10.0, coarse_points=200)
    small = ring.nbytes  # storage starts small: a short-lived series costs little
    assert small < (100 + 200) * 2 * 8
    for i in range(10_000):
        ring.append(float(i), 1.0)
    assert ring.nbytes == (100 + 200) * 2 * 8
    for i in range(10_000, 20_000):
        ring.append(float(i), 1.0)
    assert ring.nbytes == (100 + 200) * 2 * 8

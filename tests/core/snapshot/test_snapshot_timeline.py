"""The viewer's timeline: the bands and the merged band add up to the allocated total at
every drawn point, every drawn point is a real instant of the trace, and the peak is drawn."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.snapshot.snapshot_format import replay, snapshots
from vramscope.core.snapshot import reading
from vramscope.core.snapshot.example import training_snapshot
from vramscope.core.snapshot.replay import DeviceReplay
from vramscope.core.snapshot.timeline import timeline


@settings(max_examples=40)
@given(snapshots(), st.integers(2, 40), st.integers(0, 4))
def test_bands_add_up_to_the_total_at_real_instants(tmp_path_factory, snap, points, bands):
    path = tmp_path_factory.mktemp("t") / "s.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    r = DeviceReplay(reading.read(path), 0)
    tl = timeline(r, bands=bands, points=points)
    stacked = np.sum(tl.bands, axis=0) + tl.other if tl.bands else tl.other
    assert np.array_equal(stacked, tl.total)
    assert (tl.other >= 0).all() and len(tl.bands) <= bands
    assert np.all(np.diff(tl.entries) > 0) and len(tl.entries) <= points + 1
    assert int(tl.total.max()) == r.peak()[0]  # no peak lost to the downsampling


def test_the_drawn_totals_are_the_replayed_ones(tmp_path):
    snap = training_snapshot()
    path = tmp_path / "train.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    tl = timeline(DeviceReplay(reading.read(path), 0), points=200)
    totals: list = []
    replay(snap, 0, totals=totals)
    assert tl.total.tolist() == [totals[e + 1] for e in tl.entries.tolist()]
    assert len(tl.bands) == 5  # activations, attention, Adam's state, the weights, the gradients

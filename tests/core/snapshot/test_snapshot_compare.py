"""The difference of two snapshots (`vramscope snapshot A B`, the viewer's Compare with):
by device, the peaks' difference and each stack's change at the peak, checked against
the independent replay of both."""

from __future__ import annotations

import pickle

from hypothesis import given, settings

from tests.core.snapshot.snapshot_format import replay, snapshots
from vramscope.core.snapshot import reading, summary

ALL = 10**6


def _summary(tmp_path, snap, name):
    path = tmp_path / name
    path.write_bytes(pickle.dumps(snap, protocol=4))
    return summary.summary(reading.read(path), None, None, ALL)


@settings(max_examples=60)
@given(snapshots(), snapshots())
def test_the_difference_is_each_stacks_change_at_the_peaks(tmp_path_factory, a, b):
    tmp = tmp_path_factory.mktemp("c")
    diff = summary.compare(_summary(tmp, a, "a.pickle"), _summary(tmp, b, "b.pickle"))
    (dev,) = diff["devices"]
    peak_a, _t, groups_a, _ = replay(a, 0)
    peak_b, _t, groups_b, _ = replay(b, 0)
    assert dev["peak_allocated"] == {"a": peak_a, "b": peak_b, "delta": peak_b - peak_a}
    expected = {
        k: groups_b.get(k, [0])[0] - groups_a.get(k, [0])[0]
        for k in groups_a.keys() | groups_b.keys()
        if groups_b.get(k, [0])[0] != groups_a.get(k, [0])[0]
    }
    got = {
        tuple((f["filename"], f["line"], f["name"]) for f in c["frames"]): c["delta"]
        for c in dev["top_changes_at_peak"]
    }
    assert got == expected
    deltas = [abs(c["delta"]) for c in dev["top_changes_at_peak"]]
    assert deltas == sorted(deltas, reverse=True)  # largest change first


@settings(max_examples=30)
@given(snapshots())
def test_a_snapshot_against_itself_changes_nothing(tmp_path_factory, a):
    s = _summary(tmp_path_factory.mktemp("c"), a, "a.pickle")
    (dev,) = summary.compare(s, s)["devices"]
    assert dev["top_changes_at_peak"] == []
    assert all(
        dev[k]["delta"] in (0, None)
        for k in ("peak_allocated", "reserved", "allocated", "largest_free", "events")
    )

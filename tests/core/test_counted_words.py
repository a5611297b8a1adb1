"""Counts read as words a person would write: '1 segment', never '1 segments', and an
unknown count is 'n/a', never 0 (the segment map under the agents tab and the snapshot
viewer, `vramscope snapshot`)."""

from vramscope.core.units import fmt_count


def test_one_is_singular_many_are_plural_and_unknown_is_not_zero():
    assert fmt_count(1, "segment") == "1 segment"
    assert fmt_count(0, "segment") == "0 segments"
    assert fmt_count(3, "segment") == "3 segments"
    assert fmt_count(None, "segment") == "n/a segments"
    assert fmt_count(2, "process", "processes") == "2 processes"


def test_the_segment_map_says_one_segment_and_n_a_when_the_agent_did_not_say():
    import pytest

    pytest.importorskip("PySide6")
    from vramscope.ui.allocator.segment_map import figures_text

    one = figures_text({"segments": 1, "reserved": 10, "allocated": 6})
    assert "1 segment," in one and "1 segments" not in one
    unknown = figures_text({"reserved": 10, "allocated": 6})
    assert "n/a segments" in unknown and "0 segments" not in unknown

"""Numbers from the kernel's text files, bounded (sources/drm/figure_bounds.py), and KFD's
files read from arbitrary text: a figure is kept only within its bound, anything
else is None or "implausible", never an exception out of a reader."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kfd_trees import KfdNode, stage_kfd
from vramscope.sources.drm import kfd
from vramscope.sources.drm.figure_bounds import INT64_MAX, MAX_BYTES, ImplausibleFigure, bounded_int


def test_within_the_bound_kept_beyond_it_implausible():
    assert bounded_int("1024", 1024) == 1 << 20
    assert bounded_int("0x10de", base=16) == 0x10DE
    assert bounded_int(str(INT64_MAX)) == INT64_MAX
    with pytest.raises(ImplausibleFigure, match="4000-digit"):
        bounded_int("4" * 4000)
    with pytest.raises(ImplausibleFigure):
        bounded_int(str(MAX_BYTES + 1), limit=MAX_BYTES)
    with pytest.raises(ValueError):
        bounded_int("x" * 40)
    with pytest.raises(ValueError):
        bounded_int("-5")  # no size is negative
    assert bounded_int("-5", signed=True) == -5


@given(st.text(max_size=60), st.sampled_from([1, 1024]), st.sampled_from([10, 16]))
def test_any_text_gives_a_bounded_int_or_a_value_error(text, scale, base):
    try:
        n = bounded_int(text, scale, MAX_BYTES, base)
    except ValueError:
        return  # ImplausibleFigure is one
    assert abs(n) <= MAX_BYTES


@given(st.integers(min_value=0, max_value=10**60))
def test_any_size_is_kept_exactly_or_named_implausible(n):
    try:
        assert bounded_int(str(n), limit=MAX_BYTES) == n <= MAX_BYTES
    except ImplausibleFigure:
        assert n > MAX_BYTES


@given(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=80),
)
def test_kfd_files_with_any_text_never_raise(tmp_path_factory, properties, vram):
    root = tmp_path_factory.mktemp("kfd")
    stage_kfd(root, [KfdNode(gpu_id=9, simds=4, render_minor=128)], {77: {9: 0}})
    base = root / "class" / "kfd" / "kfd"
    (base / "topology" / "nodes" / "0" / "properties").write_text(properties)
    (base / "proc" / "77" / "vram_9").write_text(vram)
    gpus = kfd.gpus(str(root))
    assert set(gpus) == {9}
    (held,) = kfd.processes(str(root))
    assert held.vram.get(9) is None or 0 <= held.vram[9] <= MAX_BYTES

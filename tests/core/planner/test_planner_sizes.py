"""The --params / --gpu-memory parsers: exact values, clear refusals, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.planner.sizes import parse_count, parse_gpu_memory, parse_size
from vramscope.core.units import GB, GiB, MiB


@pytest.mark.parametrize(
    "text, value",
    [
        ("7e9", 7 * 10**9),
        ("7B", 7 * 10**9),
        ("13b", 13 * 10**9),
        ("70B", 70 * 10**9),
        ("1.5B", 1_500_000_000),
        ("500M", 500_000_000),
        ("6,738,415,616", 6_738_415_616),
        ("124439808", 124_439_808),
        (" 7 B ", 7 * 10**9),
        ("4k", 4000),
        ("1T", 10**12),
    ],
)
def test_counts(text, value):
    assert parse_count(text) == value


@pytest.mark.parametrize(
    "text, value",
    [
        ("24GiB", 24 * GiB),
        ("80GB", 80 * GB),
        ("81920MiB", 80 * GiB),
        ("40 gb", 40 * GB),
        ("0.5GiB", GiB // 2),
        ("1TiB", 1 << 40),
    ],
)
def test_sizes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize(
    "text, words",
    [
        ("24", "no unit"),
        ("24XB", "unknown unit"),
        ("GiB", "not a memory size"),
        ("-5GB", "not a memory size"),
        ("0GB", "needs some memory"),
        ("", "not a memory size"),
    ],
)
def test_bad_sizes_say_what_is_expected(text, words):
    with pytest.raises(ValueError, match=words):
        parse_size(text)


@pytest.mark.parametrize(
    "text, words",
    [
        ("seven", "not a parameter count"),
        ("7Q", "unknown suffix"),
        ("0", "at least one"),
        ("1.5", "whole number"),
        ("7BB", "not a parameter count"),
        ("1e999999999", "implausibly large"),
        ("99999T", "implausibly large"),
    ],
)
def test_bad_counts_say_what_is_expected(text, words):
    with pytest.raises(ValueError, match=words):
        parse_count(text)


def test_named_gpu_memory():
    assert parse_gpu_memory("RTX 4090=24GiB") == ("RTX 4090", 24 * GiB)
    assert parse_gpu_memory("80GB") == ("80GB GPU", 80 * GB)


UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": GB,
    "TB": 10**12,
    "KiB": 1024,
    "MiB": MiB,
    "GiB": GiB,
    "TiB": 1 << 40,
}


@given(
    st.integers(min_value=1, max_value=10**6),
    st.sampled_from(sorted(UNITS)),
    st.sampled_from(["", " "]),
    st.booleans(),
)
def test_size_roundtrip(n, unit, space, lower):
    text = f"{n}{space}{unit.lower() if lower else unit}"
    assert parse_size(text) == n * UNITS[unit]


@given(st.integers(min_value=1000, max_value=10**15))
def test_count_roundtrip_plain_and_with_commas(n):
    assert parse_count(str(n)) == n
    assert parse_count(f"{n:,}") == n


@given(st.integers(min_value=1, max_value=999))
def test_a_bare_count_under_1000_is_a_missing_unit(n):
    with pytest.raises(ValueError, match=f"did you mean {n}B"):
        parse_count(str(n))


@given(st.integers(min_value=1, max_value=999), st.sampled_from(["K", "M", "B", "T"]))
def test_count_suffixes_are_decimal(n, suffix):
    assert parse_count(f"{n}{suffix}") == n * {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}[suffix]


@given(st.text(max_size=20))
def test_any_text_gives_a_value_or_a_value_error(text):
    for parse in (parse_count, parse_size, parse_gpu_memory):
        try:
            parse(text)
        except ValueError as exc:
            assert str(exc)

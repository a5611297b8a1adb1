"""The DRM fdinfo parser against the kernel's format (drm-usage-stats.rst) and
what drivers print, and against arbitrary text (it never raises)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drm_trees import GiB, KiB, MiB, amdgpu_5_15_fdinfo, amdgpu_fdinfo, xe_fdinfo
from vramscope.sources.drm.drm_fdinfo import parse_fdinfo, parse_number
from vramscope.sources.drm.figure_bounds import INT64_MAX, MAX_BYTES, ImplausibleFigure
from vramscope.sources.drm.pci_names import _lookup, device_name


def test_units_and_bare_numbers():
    assert parse_number("1024 KiB") == MiB
    assert parse_number("3 MiB") == 3 * MiB
    assert parse_number("4096") == 4096
    assert parse_number("12 parsecs") is None
    assert parse_number("") is None


def test_amdgpu_new_and_old_keys_give_the_same_vram():
    new = parse_fdinfo(amdgpu_fdinfo(7, vram=GiB))
    old = parse_fdinfo(amdgpu_fdinfo(7, vram=GiB, legacy_only=True))
    assert new.device_memory == old.device_memory == GiB
    assert (new.driver, new.client_id, new.pdev) == ("amdgpu", 7, "0000:03:00.0")


def test_amdgpu_before_the_common_format_linux_5_15():
    c = parse_fdinfo(amdgpu_5_15_fdinfo(vram=3 * GiB, gtt=8 * MiB))
    assert (c.driver, c.pdev, c.client_id) == ("amdgpu", "0000:03:00.0", None)
    assert c.device_memory == 3 * GiB and c.system_memory == 8 * MiB
    assert parse_fdinfo("pos:\t0\npdev:\t0000:03:00.0\n") is None  # no figure: not a DRM client


def test_xe_vram0_and_cycles():
    c = parse_fdinfo(xe_fdinfo(44, vram=768 * MiB, cycles=100, total_cycles=1000))
    assert c.device_memory == 768 * MiB
    assert c.system_memory == 192 * KiB
    assert c.cycles["rcs"] == (100, 1000)
    assert "cycles-rcs" not in c.total  # drm-total-cycles-* is a counter, not a region


def test_resident_wins_over_total_and_engines_in_ns():
    c = parse_fdinfo(
        "drm-driver: i915\ndrm-client-id: 3\ndrm-pdev: 0000:00:02.0\n"
        "drm-total-local0: 8 MiB\ndrm-resident-local0: 6 MiB\n"
        "drm-engine-render: 123456 ns\ndrm-engine-capacity-video: 2\n"
    )
    assert c.device_memory == 6 * MiB
    assert c.engines == {"render": 123456} and c.capacity == {"video": 2}


def test_not_a_drm_file():
    assert parse_fdinfo("pos:\t0\nflags:\t02\n") is None
    assert parse_fdinfo("drm-client-id: 4\n") is None  # drm-driver is mandatory


def test_an_integrated_gpu_has_no_device_memory():
    c = parse_fdinfo("drm-driver: i915\ndrm-client-id: 5\ndrm-total-system0: 64 MiB\n")
    assert c.device_memory is None and c.system_memory == 64 * MiB


@given(st.text(max_size=400))
def test_never_raises_on_any_text(text):
    c = parse_fdinfo(text)
    assert c is None or c.driver


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,6}[0-9]?", fullmatch=True),
        st.one_of(st.integers(min_value=0, max_value=1 << 40), st.integers(min_value=0, max_value=10**45)),
        max_size=5,
    ),
    st.sampled_from(["", " KiB", " MiB"]),
)
def test_sizes_round_trip_and_figures_beyond_any_card_are_left_out(regions, unit):
    scale = {"": 1, " KiB": KiB, " MiB": MiB}[unit]
    text = "drm-driver:\tx\n" + "".join(f"drm-resident-{r}:\t{n}{unit}\n" for r, n in regions.items())
    c = parse_fdinfo(text)
    assert c.resident == {r: n * scale for r, n in regions.items() if n * scale <= MAX_BYTES}
    assert set(c.implausible) == {f"drm-resident-{r}" for r, n in regions.items() if n * scale > MAX_BYTES}
    assert all(v <= INT64_MAX for v in c.resident.values())


def test_a_40_digit_figure_and_a_60000_digit_one_are_implausible_not_a_crash():
    forty = "9" * 40
    c = parse_fdinfo(
        f"drm-driver:\tamdgpu\ndrm-client-id:\t3\ndrm-memory-vram:\t{forty} KiB\n"
        f"drm-engine-gfx:\t{'7' * 60000} ns\ndrm-total-gtt:\t4 KiB\n"
    )
    assert c.device_memory is None and c.system_memory == 4 * KiB
    assert c.implausible == ("drm-memory-vram", "drm-engine-gfx") and c.memory_implausible
    assert c.engines == {}
    with pytest.raises(ImplausibleFigure):
        parse_number("1" * 25)


def test_stolen_local_memory_is_the_cards_own_and_amdgpus_cpu_region_is_not_mapped():
    arc = parse_fdinfo(
        "drm-driver:\ti915\ndrm-client-id:\t4\ndrm-total-local0:\t8 MiB\n"
        "drm-total-stolen-local0:\t2 MiB\ndrm-total-system0:\t1 MiB\n"
    )
    assert arc.device_memory == 10 * MiB and arc.system_memory == MiB
    apu = parse_fdinfo(amdgpu_fdinfo(5, vram=512 * MiB, gtt=3 * GiB))
    assert apu.system_memory == 3 * GiB  # the "cpu" region (swapped-out buffers) is left out


def test_pci_names_from_a_pci_ids_file_and_the_fallback(tmp_path):
    ids = tmp_path / "pci.ids"
    ids.write_text(
        "# comment\n1002  Advanced Micro Devices, Inc. [AMD/ATI]\n"
        "\t73bf  Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]\n\t\t1002 0e3a  sub\n"
        "8086  Intel Corporation\n\t56a5  DG2 [Arc A380]\n"
    )
    assert device_name(0x1002, 0x73BF, (str(ids),)) == "AMD Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]"
    assert device_name(0x8086, 0x56A5, (str(ids),)) == "Intel DG2 [Arc A380]"
    assert device_name(0x1002, 0x1234, (str(ids),)) == "AMD GPU 0x1234"
    assert device_name(0x1002, 0x744C, ()) == "AMD Radeon RX 7900 XTX"  # the table
    assert _lookup(iter(["1002  AMD\n"] * 10), 0x1002, 1) is None

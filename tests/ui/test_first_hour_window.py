"""What a new user reads at a glance on the busy demo's window (issue 46): the
GPU's PCI address in its useful part, a group's SM % that is not a sum."""

from __future__ import annotations

from ui.helpers import table_column
from vramscope.core.pci_address import short_bus_id


def test_the_card_shows_the_pci_address_without_the_zero_domain(busy):
    window = busy()
    card = window.gpu_panel.cards[0]
    assert card.heading.text() == "GPU 0  ·  01:00.0"
    assert "00000000:01:00.0" in card.title.toolTip()  # the whole address, as NVML gives it


def test_short_bus_ids():
    assert short_bus_id("00000000:4C:00.0") == "4c:00.0"
    assert short_bus_id("0000:17:00.0") == "17:00.0"  # sysfs' form
    assert short_bus_id("00000001:4C:00.0") == "0001:4c:00.0"  # a second domain is kept
    assert short_bus_id("01:00.0") == "01:00.0" and short_bus_id(None) is None
    assert short_bus_id("not:a bus") == "not:a bus"


def test_a_group_row_says_its_sm_is_the_busiest_process(busy):
    window = busy()
    names = table_column(window, "Name")
    row = next(i for i, n in enumerate(names) if "ray::RolloutWorker ×10" in n)
    sm = table_column(window, "SM %")[row]
    assert sm.startswith("max ") and 35 <= int(sm.split()[1]) <= 55


def test_the_legend_and_the_table_agree_at_the_same_instant(busy, qtbot):
    """An hour's time axis redraws its curves every few seconds; the table every half
    second: the legend's figures follow the table's, frame by frame (train.py loading
    its weights, gigabytes a second)."""
    import re

    from ui.conftest import BUSY_T0
    from ui.helpers import table_cell

    window = busy(seconds=4, window="1h")
    pid = window.feed.source.train.pid(0)
    checked = between_redraws = 0
    for k in range(4, 16):
        window.feed.sampler.sample_once(BUSY_T0 + k)
        window.refresh()
        between_redraws += window.fanout.plot_time < window.fanout.table_time
        legend = window.gpu_panel.timelines[0].legend
        row = next((label.text for _s, label in legend.item.items if f"({pid})" in label.text), None)
        if row is None:
            continue
        shown = float(re.search(r"· ([\d.]+) GiB", row).group(1))
        table = float(table_cell(window, pid, "Memory").split()[0])
        assert abs(shown - table) <= 0.051, (k, row, table)
        checked += 1
    assert checked >= 8 and between_redraws >= 3  # (frames where only the table was due)

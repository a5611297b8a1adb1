"""The agents tab's module tree on the busy machine: the largest modules first with the
step they were measured at, sortable, expandable, a click highlights a module, a module
the agent could not measure says why; screenshots at 1400x900 and 1024x700."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from vramscope.ui.agents.module_tree import SHARE_COL, TOTAL_COL

from .helpers import save


def _tab(w, qtbot):
    for i in range(w.tabs.count()):
        if w.tabs.tabText(i) == "PyTorch agents":
            w.tabs.setCurrentIndex(i)
    w.refresh(force=True)
    qtbot.wait(30)  # (new sections are shown from the event loop)
    w.refresh(force=True)
    panel = w.tabs.currentWidget()
    [view] = [v for v in panel.views.values() if v.live]
    view.details.reveal(view.modules)  # a click on the Modules tab
    qtbot.wait(30)
    return view.modules


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_the_module_tree_shows_the_largest_modules_first_and_a_click_highlights_one(
    busy, qtbot, artifacts_dir, size
):
    w = busy(*size)
    tree = _tab(w, qtbot)
    assert tree.isVisible()
    assert "measured at step" in tree.heading.text()
    top = [tree.tree.topLevelItem(i) for i in range(tree.tree.topLevelItemCount())]
    names = [it.data(0, Qt.ItemDataRole.UserRole) for it in top]
    assert names == ["transformer", "lm_head"]  # largest first
    totals = [it.data(TOTAL_COL, 0x0101) for it in top]
    assert totals == sorted(totals, reverse=True)
    assert top[0].text(SHARE_COL).endswith("%")
    top[0].setExpanded(True)
    h = tree.items["transformer.h"]
    h.setExpanded(True)
    tree.items["transformer.h.11"].setExpanded(True)
    assert tree.items["transformer.h.11"].text(4) == "n/a"  # a checkpointed block: why, not 0
    ckpt = tree.items["transformer.h.11.attn"]
    assert ckpt.text(4) == "n/a" and "checkpointing" in ckpt.toolTip(4)
    tree._clicked(tree.items["transformer.h.3"], 0)
    assert tree.items["transformer.h.3"].font(0).bold()
    assert not tree.items["transformer.h"].font(0).bold()
    w.refresh(force=True)
    tree.tree.scrollToTop()
    panel = w.tabs.currentWidget()
    panel.scroll.ensureWidgetVisible(tree, 0, 0)
    qtbot.wait(30)
    save(w, artifacts_dir, f"busy-modules-{size[0]}x{size[1]}.png")
    tree.tree.sortByColumn(4, Qt.SortOrder.DescendingOrder)  # activations
    kids = [h.child(i).data(0, Qt.ItemDataRole.UserRole) for i in range(h.childCount())]
    assert kids[-2:] in (["transformer.h.10", "transformer.h.11"], ["transformer.h.11", "transformer.h.10"])

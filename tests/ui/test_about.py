"""Help → About: the versions a bug report needs, "not available" when the
driver did not say."""

from __future__ import annotations

import platform

import PySide6
import pyqtgraph
from PySide6.QtCore import qVersion

from vramscope import __version__
from vramscope.core.samples import Frame
from vramscope.ui.window.about import NO_SAMPLE, NOT_AVAILABLE, AboutDialog, about_rows, about_text


def test_rows_from_a_real_frame():
    frame = Frame(
        time=1.0,
        source="nvml",
        driver_version="550.54.14",
        nvml_version="12.550.54.14",
        cuda_driver_version="12.4",
    )
    rows = dict(about_rows(frame))
    assert rows["vramscope"] == __version__
    assert rows["NVIDIA driver"] == "550.54.14"
    assert rows["NVML"] == "12.550.54.14"
    assert rows["CUDA driver API"] == "12.4"
    assert rows["Qt"] == qVersion()
    assert rows["PySide6"] == PySide6.__version__
    assert rows["pyqtgraph"] == pyqtgraph.__version__
    assert rows["Python"].startswith(platform.python_version())


def test_missing_driver_facts_say_not_available_never_a_guess():
    rows = dict(about_rows(Frame(time=1.0, source="nvml", driver_version="550.54.14")))
    assert rows["NVML"] == NOT_AVAILABLE and rows["CUDA driver API"] == NOT_AVAILABLE
    rows = dict(about_rows(None))
    assert rows["NVIDIA driver"] == NO_SAMPLE


def test_demo_versions_are_marked_simulated():
    frame = Frame(time=1.0, source="demo", simulated=True, driver_version="550.120")
    assert dict(about_rows(frame))["NVIDIA driver"] == "550.120 (demo: simulated)"


def test_dialog_shows_and_copies_the_rows(qtbot):
    from PySide6.QtGui import QGuiApplication

    frame = Frame(time=1.0, source="nvml", driver_version="550.54.14", cuda_driver_version="12.4")
    d = AboutDialog(frame)
    qtbot.addWidget(d)
    assert d.values["NVIDIA driver"].text() == "550.54.14"
    assert d.values["NVML"].text() == NOT_AVAILABLE
    d.copy_button.click()
    assert QGuiApplication.clipboard().text() == about_text(frame)
    assert "CUDA driver API: 12.4" in about_text(frame)

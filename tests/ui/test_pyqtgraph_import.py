"""The window imports pyqtgraph without making every Qt class (pyqtgraph's copy
of the Qt modules made ~24k objects that every full garbage collection walked),
and everything pyqtgraph and the window read from Qt is still there."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

APP = pathlib.Path(__file__).resolve().parents[2] / "app"

# Run in a fresh interpreter: what the window's process holds after importing pyqtgraph.
_LOOK = """
import gc, json, sys
from PySide6 import QtCore, QtGui, QtWidgets
app = QtWidgets.QApplication([])
if sys.argv[1] == "window":
    import vramscope.ui
import pyqtgraph as pg
gc.collect()
tracked = len(gc.get_objects())
names = {m.__name__: sorted(dir(m)) for m in (QtCore, QtGui, QtWidgets)}
w = pg.PlotWidget()
w.plot([1, 2, 3], [3, 1, 2])
w.resize(200, 120)
image = w.grab().toImage()
print(json.dumps({
    "tracked": tracked,
    "names": names,
    "same": [pg.Qt.QtWidgets.QGraphicsView is QtWidgets.QGraphicsView,
             pg.Qt.QtGui.QPdfWriter is QtGui.QPdfWriter,
             pg.Qt.QtCore.QTimer is QtCore.QTimer,
             pg.QtCore.Signal is QtCore.Signal],
    "drawn": [image.width(), image.height()],
}))
"""


def _look(kind: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(APP), "QT_QPA_PLATFORM": "offscreen"}
    env.pop("PYQTGRAPH_QT_LIB", None)
    r = subprocess.run(
        [sys.executable, "-c", _LOOK, kind], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_window_imports_pyqtgraph_without_making_every_qt_class():
    plain, window = _look("plain"), _look("window")
    # pyqtgraph alone (its own copy) made every class: about 24k objects more,
    # although the window has imported itself on top of it.
    assert window["tracked"] < plain["tracked"] - 10_000, (window["tracked"], plain["tracked"])
    assert window["same"] == [True, True, True, True]
    assert window["drawn"] == [200, 120]
    # PySide6's own listing of its modules is as it was.
    assert window["names"] == plain["names"]


def test_names_resolve_to_pyside6_and_unknown_ones_fail_as_before(qapp):
    import pyqtgraph as pg
    from PySide6 import QtCore, QtGui, QtWidgets

    import vramscope.ui  # noqa: F401  (the window's import of pyqtgraph)
    from pyqtgraph.Qt.QtCore import QRunnable

    assert QRunnable is QtCore.QRunnable
    assert pg.Qt.QtGui.QTextDocumentWriter is QtGui.QTextDocumentWriter
    assert pg.Qt.QtWidgets.QWizardPage is QtWidgets.QWizardPage
    with pytest.raises(AttributeError):
        pg.Qt.QtWidgets.QNoSuchWidget  # noqa: B018
    with pytest.raises(ImportError):
        from pyqtgraph.Qt.QtGui import QNoSuchThing  # noqa: F401


def test_a_pyqtgraph_whose_copies_hold_code_is_imported_as_it_is(tmp_path):
    """Another pyqtgraph (its Qt copies are modules of their own) keeps them."""
    qt = tmp_path / "pyqtgraph" / "Qt"
    for short in ("QtCore", "QtGui", "QtWidgets"):
        (qt / short).mkdir(parents=True)
        (qt / short / "__init__.py").write_text(f"OWN = {short!r}\n")
    (qt / "__init__.py").write_text("from . import QtCore, QtGui, QtWidgets\n")
    (tmp_path / "pyqtgraph" / "__init__.py").write_text("from . import Qt\n")
    code = (
        "import sys\n"
        "import vramscope.ui\n"
        "print([sys.modules['pyqtgraph.Qt.' + s].OWN for s in ('QtCore', 'QtGui', 'QtWidgets')])\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{APP}", "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "['QtCore', 'QtGui', 'QtWidgets']"

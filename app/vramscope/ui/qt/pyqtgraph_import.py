"""pyqtgraph imported without making every Qt class there is.

pyqtgraph keeps its own copies of QtCore, QtGui and QtWidgets
(``pyqtgraph.Qt.QtCore`` and so on) and fills them at import by copying every
name of the binding's modules (``_copy_attrs`` in ``pyqtgraph/Qt/__init__.py``).
PySide6 makes a class only when a name is first looked up, so that copy makes
all of them: ~1,300 classes and enums for ~720 names, with their methods and
descriptors some 24,000 objects (the window itself uses ~330). Every full
garbage collection of the window then walks them for as long as it runs (a
fifth of the window's tracked objects, about 5 ms of each full collection
here), and they cost a quarter of a second at start.

Here pyqtgraph's three copies are made before pyqtgraph is imported, as modules
that look a name up in PySide6 the first time it is asked for (a module
``__getattr__``, PEP 562), and while pyqtgraph is imported each PySide6 module
lists only the names it has already made, so the copy copies those. Every name
pyqtgraph reads resolves to the same PySide6 object as before; only the ones
nobody reads are never made. This is done only where pyqtgraph's copies are
the empty packages it fills so (0.13 and 0.14); any other pyqtgraph, or one
packed where its files cannot be seen, is imported as it is.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from collections.abc import Callable

from PySide6 import QtCore, QtGui, QtWidgets

_BINDING = (QtCore, QtGui, QtWidgets)


def _short(module) -> str:
    """QtCore for PySide6.QtCore: the name of pyqtgraph's copy within pyqtgraph.Qt."""
    return module.__name__.rpartition(".")[2]


def _copies_are_empty() -> bool:
    """Whether the installed pyqtgraph's copies are empty packages (filled at import)."""
    spec = importlib.util.find_spec("pyqtgraph")
    where = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not where:
        return False
    for module in _BINDING:
        try:
            if os.path.getsize(os.path.join(where[0], "Qt", _short(module), "__init__.py")) != 0:
                return False
        except OSError:
            return False
    return True


def _looks_up(copy: types.ModuleType, module) -> Callable[[str], object]:
    def lookup(name: str) -> object:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {copy.__name__!r} has no attribute {name!r}")
        value = getattr(module, name)
        setattr(copy, name, value)
        return value

    return lookup


def _made_names(module) -> Callable[[], list[str]]:
    return lambda: list(vars(module))


def import_pyqtgraph() -> types.ModuleType:
    """Import pyqtgraph (once) with copies of the Qt modules that fill as used."""
    if "pyqtgraph" in sys.modules:
        return sys.modules["pyqtgraph"]
    if os.environ.get("PYQTGRAPH_QT_LIB", "PySide6") != "PySide6" or not _copies_are_empty():
        import pyqtgraph

        return pyqtgraph
    for module in _BINDING:
        copy = types.ModuleType("pyqtgraph.Qt." + _short(module), f"pyqtgraph's copy of {module.__name__}")
        copy.__getattr__ = _looks_up(copy, module)
        sys.modules.setdefault(copy.__name__, copy)
    listed = [vars(module).get("__dir__") for module in _BINDING]
    try:
        for module in _BINDING:
            module.__dir__ = _made_names(module)
        import pyqtgraph
    finally:
        for module, own in zip(_BINDING, listed):
            if own is None:
                del module.__dir__
            else:
                module.__dir__ = own
    return pyqtgraph

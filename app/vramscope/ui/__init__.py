"""The window (PySide6 + pyqtgraph). The only package that may import Qt.

The window draws; it samples nothing. Frames come from its own sampler process
(or remote hosts, a fleet, the demo), and a worker thread puts them in the
store; a QTimer on the GUI thread pulls ``store.latest`` / ``store.version``
and updates the views. ``bridge.py`` is the one place where worker threads
hand work to the Qt main thread.
"""

from vramscope.ui.qt.pyqtgraph_import import import_pyqtgraph

import_pyqtgraph()

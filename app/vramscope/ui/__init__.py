"""The window (PySide6 + pyqtgraph). The only package that may import Qt.

Data flows one way: source -> sampler thread -> store -> a QTimer on the GUI
thread pulls ``store.latest`` / ``store.version`` and updates the views. The
GUI thread never calls NVML or psutil; ``bridge.py`` is the one place where
worker threads hand work to the Qt main thread.
"""

"""Qt plumbing every view shares: pyqtgraph imported lean, colours and themes
(`theme.py`, `schemes.py`, `pens.py`), strangers' text in widgets (`safe_text.py`), and the raster-thread and
GIL workarounds. May import Qt and vramscope.core; no other ui package.
"""

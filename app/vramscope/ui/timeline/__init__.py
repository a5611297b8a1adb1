"""A GPU's memory timeline (gpu_timeline): stacked bands or lines per process from the
store's series, its legend, its alert markers and the "others" stack. May import
PySide6, pyqtgraph, vramscope.core and the rest of vramscope.ui; never
vramscope.sources' GPU backends.
"""

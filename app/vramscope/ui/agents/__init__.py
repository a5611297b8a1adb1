"""The agents tab: one section per process that runs the vramscope agent, and per
device where PyTorch's memory goes (buckets, allocator details, memory outside
PyTorch, ranks) with the texts they share. Reads the store's agent series only. May
import PySide6, pyqtgraph, vramscope.core and the rest of vramscope.ui; never
vramscope.sources' GPU backends.
"""

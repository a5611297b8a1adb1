"""The allocator's picture: the segment map (`segment_map.py`), each segment a bar of
its blocks. Drawn by the agents tab for a live run and by the snapshot viewer for a
file; may import Qt, vramscope.core and ui.qt, no tab.
"""

"""The store: the latest frame plus bounded history per series (`store.py`), held in
numpy rings with a coarser tier (`ring.py`, `ring_columns.py`) and exact rows
(`held_rows.py`). May import vramscope.core's vocabulary (samples, units,
agent_figures' keys); never sources, ui or Qt.
"""

"""The planner tab: the form (model, precision, optimizer, ZeRO/LoRA/offload, KV cache),
its results and what-if views, the measured figures from an agent beside the
arithmetic, and the loaders of a model's shape. May import PySide6, pyqtgraph,
vramscope.core (the planner's arithmetic lives in vramscope.core.planner) and the rest
of vramscope.ui; never vramscope.sources' GPU backends.
"""

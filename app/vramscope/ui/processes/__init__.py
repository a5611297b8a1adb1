"""The process table and ending a process from the window: the view, its model, its
cells, columns and notes, the worker that builds its rows, the pending text, the
confirmation dialog and the step-by-step flow. May import Qt, vramscope.core and
ui's qt helpers; never another tab, never vramscope.sources.
"""

"""The monitor view: one row per GPU with its card and timeline (`gpu_panel.py`,
`gpu_rows.py`, `cards.py`, `time_plot.py`, `time_axis.py`, `axis_specs.py`,
`legend_text.py`), the fleet overview, the hosts bar and a recorded session's
scrubber. May import Qt, pyqtgraph, vramscope.core and ui's timeline and qt helpers;
never a tab (agents, planner, alerts) and never vramscope.sources.
"""

"""Ending a process from the window: the confirmation that checks the process anew
(`end_process_dialog.py`) and the flow, step by step (`end_process_flow.py`). Used by
the processes tab and the alerts tab's fixes; may import Qt, vramscope.core and ui.qt.
"""

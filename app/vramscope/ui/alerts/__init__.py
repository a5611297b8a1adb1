"""The alerts tab and desktop notifications for new alerts (`alerts_panel.py` with
`alert_list.py`, `alert_texts.py`, `alert_actions.py`; `tray.py`). May import Qt, vramscope.core and ui's qt helpers; never another tab,
never vramscope.sources.
"""

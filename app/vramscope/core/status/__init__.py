"""`vramscope status` as text and JSON (Qt-free): the JSON-ready report
(`status_report.py`), the terminal table (`status_table.py`), and the two text
helpers every printed figure goes through: strangers' text made safe for a terminal
(`terminal_text.py`) and JSON every reader accepts (`json_text.py`). May import
vramscope.core; never sources, ui or Qt.
"""

"""Ending a process, safely (Qt-free): the signal (`actions.py`), the checks made
before it (`process_checks.py`), whose processes may be ended (`process_owner.py`)
and the audit log of what was ended (`audit_log.py`). May import vramscope.core's
vocabulary and safe_io; never sources, ui or Qt.
"""

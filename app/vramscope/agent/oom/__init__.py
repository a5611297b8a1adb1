"""Out-of-memory capture and its post-mortem (stdlib + torch): the capture (`oom.py`), the
agent's part of the post-mortem (`postmortem.py`), the report (`oom_report.py`), its
fixes and what each recovers (`oom_fixes.py`), its figures read from plain data
(`oom_numbers.py`) and its words (`oom_text.py`).
"""

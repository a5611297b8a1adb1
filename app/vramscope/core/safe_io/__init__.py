"""Reading and writing what someone else may control, with every bound in one place:
bounded file reads (`bounded_read.py`), one bounded HTTP GET (`bounded_http.py`)
and writing files without harming anyone (`safe_write.py`). Stdlib only; imports
nothing else of vramscope.
"""

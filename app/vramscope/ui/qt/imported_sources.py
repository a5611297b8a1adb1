"""What PySide6 reads of every module imported after it, dropped.

Importing PySide6 replaces ``__import__``; for each module imported after, its
``__feature__`` support reads the module's source (``inspect.getsource``) to
see whether it names PySide6, and ``linecache`` keeps every line read, for the
life of the process: at the window's start some 500 files, 150-200k lines
(numpy, pyqtgraph, the stdlib, ours); a planner lookup that brings in
huggingface_hub and transformers, 400 files and 240k lines more. Each file is a
list of strings that every full garbage collection walks ("What a full collection
walks" in `git log -p bench/README.md`). Nothing reads them again: a traceback reads
the lines it shows from the file (https://docs.python.org/3/library/linecache.html).
"""

from __future__ import annotations

import linecache


def forget_imported_sources() -> None:
    """Called once the window is built, and after work that may have imported
    modules (the planner's lookups)."""
    linecache.clearcache()

"""`vramscope export` -- not built yet (see the open issues)."""

from __future__ import annotations

import sys


def add_arguments(p) -> None:
    pass


def run(args) -> int:
    print("vramscope export: not available in this version", file=sys.stderr)
    return 2

"""`vramscope snapshot FILE [FILE2] [--json] [--device N] [--at TIME_US]`: a PyTorch memory
snapshot (``torch.cuda.memory._dump_snapshot``) summarised without a window.

Per device: reserved and allocated at the snapshot, the segments, the trace's
entries and OOMs, the peak of allocated bytes over the trace and what was
alive then grouped by stack; ``--at`` the same breakdown at another instant;
a second file, the difference. The file is unpickled with every global
refused (core/snapshot/safe_load.py): nothing in it runs. No Qt.
"""

from __future__ import annotations

import argparse
import sys

from vramscope.commands.option_types import non_negative, positive
from vramscope.core.status.terminal_text import say


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="FILE", help="a snapshot pickle (torch.cuda.memory._dump_snapshot)")
    p.add_argument("path2", nargs="?", default=None, metavar="FILE2", help="a second one: the difference")
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.add_argument("--device", type=non_negative(int), default=None, metavar="N", help="only device N")
    p.add_argument(
        "--at",
        type=non_negative(int),
        default=None,
        metavar="TIME_US",
        help="also what was alive at this time (a trace entry's time_us; its number where the file has no times)",
    )
    p.add_argument("--top", type=positive(int), default=10, metavar="N", help="stacks listed (default 10)")


def _read(path: str, args) -> dict | None:
    from vramscope.core.snapshot import reading, summary
    from vramscope.core.snapshot.safe_load import SnapshotError

    try:
        snap = reading.read(path)
    except (SnapshotError, OSError) as exc:
        say(sys.stderr, f"vramscope snapshot: {exc}")
        return None
    if args.device is not None and args.device not in snap.devices():
        say(sys.stderr, f"vramscope snapshot: {path} has no device {args.device} (devices: {snap.devices()})")
        return None
    return summary.summary(snap, args.device, args.at, args.top)


def run(args) -> int:
    from vramscope.core.status import json_text
    from vramscope.core.snapshot import summary

    first = _read(args.path, args)
    if first is None:
        return 2
    second = _read(args.path2, args) if args.path2 else None
    if args.path2 and second is None:
        return 2
    if args.json:
        out = {"file": args.path, **first}
        if second is not None:
            out = {
                "a": out,
                "b": {"file": args.path2, **second},
                "difference": summary.compare(first, second),
            }
        print(json_text.dumps(out, indent=1))
        return 0
    from vramscope.core.snapshot.text import comparison_lines, summary_lines

    lines = summary_lines(args.path, first, args.top)
    if second is not None:
        lines += [""] + summary_lines(args.path2, second, args.top)
        lines += [""] + comparison_lines(summary.compare(first, second), args.top)
    try:
        for line in lines:
            say(sys.stdout, line, flush=False)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error again at exit
    return 0

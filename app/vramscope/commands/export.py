"""`vramscope export FILE --format csv|perfetto|oom-report [--out PATH] [--redact]` (no Qt).
Without --out the export goes beside the session: run.vramscope -> run.csv / run.perfetto.json /
run.oom-report.md."""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

from vramscope.core.status.terminal_text import say


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_file", metavar="FILE", help="a recorded session (vramscope record)")
    p.add_argument(
        "--format",
        choices=("csv", "perfetto", "oom-report"),
        default="csv",
        help="csv: long form time,host,gpu,pid,metric,value; perfetto: a Chrome/Perfetto "
        "trace JSON for ui.perfetto.dev; oom-report: each OOM's post-mortem as "
        "Markdown",
    )
    p.add_argument(
        "--out",
        metavar="PATH",
        default=None,
        help="file to write (default: beside FILE, named after it: run.csv, run.perfetto.json)",
    )
    p.add_argument(
        "--redact", action="store_true", help="replace command lines and user names (to share the export)"
    )
    p.add_argument("--force", action="store_true", help="overwrite PATH if it exists")


SUFFIXES = {"csv": ".csv", "perfetto": ".perfetto.json", "oom-report": ".oom-report.md"}


def default_out(session_file: str, fmt: str) -> pathlib.Path:
    """Beside the session, its name with the format's suffix: runs/a.vramscope -> runs/a.csv."""
    path = pathlib.Path(session_file).expanduser()
    return path.with_name(path.stem + SUFFIXES[fmt])


def _err(text: str) -> None:
    say(sys.stderr, f"vramscope export: {text}")


def run(args) -> int:
    from vramscope.core.export import FORMATS, copy_snapshots
    import sqlite3

    from vramscope.core.session import SessionError, open_session
    from vramscope.core.session.errors import UNREADABLE, unreadable

    out = pathlib.Path(args.out).expanduser() if args.out else default_out(args.session_file, args.format)
    if os.path.lexists(out) and not args.force:
        _err(f"{out} already exists (use --force to overwrite)")
        return 2
    try:
        reader = open_session(args.session_file)
    except SessionError as exc:
        _err(str(exc))
        return 2
    started = time.monotonic()
    with reader:
        try:
            summary = FORMATS[args.format](reader, out, redact=args.redact)
        except OSError as exc:
            from vramscope.core.safe_io.safe_write import UnsafeTarget

            _err(str(exc) if isinstance(exc, UnsafeTarget) else f"cannot write {out}: {exc}")
            return 2
        except SessionError as exc:
            _err(str(exc))
            return 2
        except (sqlite3.Error, *UNREADABLE) as exc:
            _err(str(unreadable(args.session_file, exc)))
            return 2
        snap_dir = out.with_name(out.name + ".oom-snapshots")
        if args.redact:
            from vramscope.core.export.snapshots import snapshot_paths

            if snapshot_paths(reader):
                _err(
                    "OOM snapshots are not copied with --redact (they can hold file paths "
                    "and names); export without --redact to get them"
                )
            copied, problems = [], []
        else:
            copied, problems = copy_snapshots(reader, snap_dir)
        problems, snapshot_problems = list(summary.problems), problems
    took = time.monotonic() - started
    what = {"csv": "rows", "oom-report": "OOM reports"}.get(args.format, "events")
    say(
        sys.stdout,
        f"vramscope: wrote {summary.rows} {what} to {out} ({summary.bytes / 1e6:.1f} MB, {took:.1f} s)",
    )
    for path in copied:
        say(sys.stdout, f"vramscope: OOM snapshot (open at pytorch.org/memory_viz): {path}")
    for p in snapshot_problems:
        _err(p)
    if problems:
        _err("the session file is damaged; exported what could be read:")
        for p in problems:
            say(sys.stderr, f"  - {p}", flush=False)
    return 0

"""`vramscope [--demo] [FILE]`: the window. Qt is imported only in ``run``."""

from __future__ import annotations

import argparse

from vramscope.commands.common import Parser, add_host_arguments, add_source_arguments
from vramscope.commands.option_types import address, interval_seconds, seconds
from vramscope.core.settings.view_options import Theme, TimeWindow

WINDOW_CHOICES = tuple(w.value for w in TimeWindow)
THEME_CHOICES = tuple(t.value for t in Theme)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_source_arguments(p)
    add_host_arguments(p)
    # None = "not given": the saved setting applies (a given value overrides it for this run)
    p.add_argument(
        "--interval",
        type=interval_seconds,
        default=None,
        metavar="SECONDS",
        help="sampling interval, 0.1 to 60 s (default: the saved setting, 1 s)",
    )
    p.add_argument(
        "--window",
        choices=WINDOW_CHOICES,
        default=None,
        help="time window shown in the plots (default: the saved setting, 10m)",
    )
    p.add_argument(
        "--theme",
        choices=THEME_CHOICES,
        default=None,
        help="colours (default: the saved setting, following the desktop)",
    )
    p.add_argument(
        "--no-record",
        dest="record",
        action="store_false",
        help="do not record this session (recording is on by default for real GPUs; "
        "sessions go to the user's data directory, oldest removed past 2 GiB)",
    )
    p.add_argument("--read-only", action="store_true", help="disable every action (ending processes)")
    p.add_argument(
        "--prometheus",
        metavar="HOST:PORT",
        default=None,
        type=address,
        help="also serve the current metrics for Prometheus (loopback unless told otherwise)",
    )
    p.add_argument(
        "--quit-after", type=seconds(), default=None, metavar="SECONDS", help=argparse.SUPPRESS
    )  # smoke tests and the bundle check
    # the window grabs its tabs into DIR after --shots-after seconds, says what it shows
    # (DIR/shown.json) and quits (ui/window/window_shots.py: README's pictures, user-path tests)
    p.add_argument("--shots", default=None, metavar="DIR", help=argparse.SUPPRESS)
    p.add_argument("--shots-after", type=seconds(), default=8.0, metavar="SECONDS", help=argparse.SUPPRESS)
    p.add_argument(
        "file",
        nargs="?",
        default=None,
        metavar="FILE",
        help="a recorded session to reopen, or a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The window's options alone: used for `vramscope [options] FILE`, where a
    positional after the subcommands would be taken for a subcommand name."""
    p = Parser(prog="vramscope", description="What fills your GPU: a live VRAM monitor.")
    add_arguments(p)
    p.set_defaults(command=None)
    return p


NO_DISPLAY = (
    "vramscope: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are "
    "unset); in a terminal, `vramscope status` shows the same figures"
)


def display_missing(env=None, platform: str | None = None) -> bool:
    """On Linux, a window needs X11 or Wayland (or a Qt platform chosen by hand,
    e.g. QT_QPA_PLATFORM=offscreen); Qt would otherwise abort the process."""
    import os
    import sys

    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return False
    return not any(env.get(k) for k in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


def run(args) -> int:
    import sys

    if display_missing():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    from vramscope.window_display import display_problem

    problem = display_problem()  # a display named but not reachable, Qt's libraries missing
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    from vramscope.ui.window.app import run as run_window

    return run_window(args)

"""`vramscope` command line.

    vramscope [--demo] [FILE]        the window (a session FILE reopens a recording)
    vramscope status [--json]        one sampling pass, printed; no Qt
    vramscope record ...             headless recorder
    vramscope export FILE ...        CSV / Perfetto trace
    vramscope plan ...               will it fit?
    vramscope run -- python train.py start a script with the PyTorch agent on
    vramscope stream                 frames on stdout, for `vramscope --host` over ssh
    vramscope sites PID --steps N    allocation sites of a running agent (CUDA)
    vramscope snapshot FILE [FILE2]  a PyTorch memory snapshot summarised (or two compared)

Each subcommand lives in ``vramscope.commands.<name>`` with ``add_arguments``
and ``run``; modules are imported only when their command runs (except for
their argument definitions), so `status` never imports Qt.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from vramscope import __version__
from vramscope.commands.common import Parser

COMMANDS = {
    "status": "print one sampling pass (no window); --json for scripts",
    "record": "record a session headless (SSH, servers)",
    "export": "export a recorded session to CSV or a Perfetto trace",
    "plan": "will it fit? the memory arithmetic before a run",
    "run": "run a Python script with the vramscope PyTorch agent on",
    "desktop": "add vramscope to your desktop menu (install / uninstall / show)",
    "stream": "write this machine's frames to stdout (what `vramscope --host` runs over ssh)",
    "sites": "record allocation sites in a running agent for N steps (CUDA)",
    "snapshot": "summarise a PyTorch memory snapshot pickle (peak, stacks, OOMs; no code run)",
}


def _command_module(name: str):
    return importlib.import_module(f"vramscope.commands.{name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only`` (a command) that command's options alone,
    so a command imports no other's modules (the window's sampler process starts
    ~0.25 s sooner without the planner's and the others' argument definitions)."""
    parser = Parser(prog="vramscope", description="What fills your GPU: a live VRAM monitor.")
    parser.add_argument("--version", action="version", version=f"vramscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = _command_module(name)
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
    _command_module("gui").add_arguments(parser)
    return parser


def _words(argv: list[str]) -> list[str]:
    return [a for a in argv if not a.startswith("-")]


def _not_a_file(word: str | None) -> str | None:
    """A word that is neither a command nor a file: a mistyped command (`statuss`)."""
    import difflib
    import os

    from vramscope.core.snapshot.safe_load import SNAPSHOT_SUFFIXES

    if (
        word is None
        or os.path.exists(word)
        or os.sep in word
        or word.endswith((".vramscope", *SNAPSHOT_SUFFIXES))
    ):
        return None  # a session or snapshot file (a missing one is the window's to say)
    close = difflib.get_close_matches(word, COMMANDS, n=1)
    hint = f" (did you mean `vramscope {close[0]}`?)" if close else ""
    return (
        f"vramscope: unknown command {word!r}{hint}; commands: {', '.join(COMMANDS)} "
        f"(a session file to reopen must exist)"
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":  # everything after `run` belongs to the child
        args = argparse.Namespace(command="run", child=argv[1:])
    elif _words(argv) and not any(w in COMMANDS for w in _words(argv)):
        # `vramscope [options] FILE`: the window's own parser, because argparse
        # would take a positional FILE for a subcommand name.
        args = _command_module("gui").build_parser().parse_args(argv)
        refused = _not_a_file(args.file)
        if refused:
            print(refused, file=sys.stderr)
            return 2
    else:
        args = build_parser(argv[0] if argv and argv[0] in COMMANDS else None).parse_args(argv)
    if getattr(args, "busy", False) and not getattr(args, "demo", False):
        print(
            "vramscope: --busy is a kind of demo: use it with --demo (`vramscope --demo --busy`)",
            file=sys.stderr,
        )
        return 2
    name = args.command or "gui"
    return int(_command_module(name).run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())

"""Options and helpers shared by the commands (no Qt)."""

from __future__ import annotations

import argparse

from vramscope.core.samples import Frame


class Parser(argparse.ArgumentParser):
    """argparse, with a refused option said in one line (status 2), not usage + error."""

    def error(self, message: str):
        from vramscope.core.status.terminal_text import visible

        self.exit(2, visible(f"{self.prog}: {message} (--help lists the options)") + "\n")


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--demo", action="store_true", help="use the simulated workstation instead of NVML (no GPU needed)"
    )
    p.add_argument(
        "--busy", action="store_true", help="with --demo: a shared workstation, sixteen processes on two GPUs"
    )
    p.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)


def driver_unavailable(frame: Frame) -> bool:
    """The frame of a source that has no GPU to read (no library, no driver)."""
    return frame.error is not None and not frame.gpus and not frame.simulated


def probe_driver(source) -> Frame:
    """The one driver probe: a pass of ``source`` before a command commits to it."""
    import time

    return source.sample(time.time())


def say_driver_unavailable(command: str, frame: Frame, consequence: str = "", err=None) -> None:
    """The one "driver unavailable" line, on stderr: why, what was not done, the demo."""
    import sys

    from vramscope.core.status.terminal_text import say

    say(
        err or sys.stderr,
        f"vramscope {command}: {frame.error}{'; ' + consequence if consequence else ''} "
        f"(`vramscope {command} --demo` shows a simulated workstation)",
    )


def ssh_target(text: str) -> str:
    """argparse type for --host: ``[user@]HOST`` as ssh takes it."""
    from vramscope.sources.remote.host_stream import check_target

    try:
        return check_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_host_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        metavar="[USER@]HOST",
        action="append",
        type=ssh_target,
        default=None,
        help="watch another machine over ssh (repeatable): runs `vramscope stream` "
        "there through your own ssh (keys, config, ProxyJump); nothing listens "
        "on the network",
    )
    p.add_argument(
        "--from-prometheus",
        metavar="URL",
        default=None,
        help="watch a fleet: every machine a Prometheus server (http://HOST:9090) "
        "scrapes from `vramscope record --prometheus` or dcgm-exporter, one "
        "host per instance label",
    )

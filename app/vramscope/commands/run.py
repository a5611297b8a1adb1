"""`vramscope run -- python train.py ARGS`: run a script with the PyTorch agent on.

The child gets VRAMSCOPE_AGENT=1 and, first on its PYTHONPATH, a directory
holding a ``sitecustomize`` that starts the agent once the script imports
torch (and chains to any other sitecustomize). No code change in the
script; torchrun ranks each get their own agent. The child's exit code is
returned; Ctrl-C goes to the child (same process group) and we wait for it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

USAGE = """usage: vramscope run [--interval SECONDS] -- COMMAND [ARGS...]

Run a Python script with the vramscope PyTorch agent on, with no code change:
the window and `vramscope status` then show its allocated vs reserved memory
and the breakdown into weights, gradients, optimizer state and activations.

  vramscope run -- python train.py --lr 3e-4
  vramscope run --interval 1 -- torchrun --nproc-per-node 2 train.py

options:
  --interval SECONDS  agent sampling interval in seconds (default 0.5)
  -h, --help          show this help and exit"""


def _agent_interval(text: str) -> float:
    from vramscope.agent import MIN_INTERVAL
    from vramscope.commands.option_types import MAX_INTERVAL, seconds

    return seconds(MIN_INTERVAL, MAX_INTERVAL)(text)


def add_arguments(p) -> None:
    p.add_argument(
        "--interval",
        type=_agent_interval,
        default=0.5,
        help="agent sampling interval in seconds (default 0.5)",
    )
    p.add_argument("child", nargs="*", metavar="COMMAND", help="the command to run, after --")


def site_dir() -> str:
    import vramscope.agent

    return os.path.join(os.path.dirname(vramscope.agent.__file__), "_site")


def child_env(base: dict | None = None, interval: float = 0.5) -> dict:
    env = dict(os.environ if base is None else base)
    import vramscope

    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(vramscope.__file__)))
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = site_dir() + (os.pathsep + old if old else "")
    env["VRAMSCOPE_AGENT"] = "1"
    env["VRAMSCOPE_AGENT_PATH"] = package_parent
    env["VRAMSCOPE_AGENT_INTERVAL"] = str(interval)
    return env


def _parse(argv: list[str]) -> tuple[float, list[str]] | str:
    interval = 0.5
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return interval, argv[i + 1 :]
        if a == "--interval" and i + 1 < len(argv) or a.startswith("--interval="):
            text = argv[i + 1] if a == "--interval" else a.split("=", 1)[1]
            try:
                interval = _agent_interval(text)
            except argparse.ArgumentTypeError as exc:
                return f"--interval: {exc}"
            i += 2 if a == "--interval" else 1
            continue
        if a in ("-h", "--help"):
            return USAGE
        return interval, argv[i:]
    return interval, []


def _say_where_the_agent_listens() -> None:
    """A refused socket directory is said here, where the user looks, not only
    inside the child's log."""
    from vramscope.agent.serving import paths

    try:
        directory, refused = paths.choose_agent_dir()
    except paths.RuntimeDirError as exc:
        print(
            f"vramscope run: warning: the agent has nowhere to listen ({exc}); the script "
            "runs, but no vramscope window or `status` will see it",
            file=sys.stderr,
        )
        return
    if refused:
        print(
            f"vramscope run: warning: {'; '.join(refused)}; the agent listens in {directory} "
            "instead (vramscope's window and `status` look there too)",
            file=sys.stderr,
        )


def run(args) -> int:
    parsed = _parse(list(getattr(args, "child", None) or []))
    if isinstance(parsed, str):
        if parsed == USAGE:  # asked for: to stdout, like every --help
            print(USAGE)
            return 0
        print(f"vramscope run: {parsed}\n{USAGE}", file=sys.stderr)
        return 2
    interval, command = parsed
    if not command:
        print(f"vramscope run: no command given\n{USAGE}", file=sys.stderr)
        return 2
    _say_where_the_agent_listens()
    try:
        child = subprocess.Popen(command, env=child_env(interval=interval))
    except FileNotFoundError:
        print(f"vramscope run: command not found: {command[0]}", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"vramscope run: permission denied: {command[0]}", file=sys.stderr)
        return 126
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child gets Ctrl-C itself
    try:
        code = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    if code < 0:  # killed by a signal: shell convention
        return 128 - code
    return code

"""`vramscope sites PID [--steps N] [--json]`: record allocation sites in a running agent.

Turns on PyTorch's memory history (Python frames) in the training process for N
steps, then off; prints the top allocation sites by bytes alive at the peak of
those steps, the measured overhead, and the memory_viz pickle it saved. For a
headless run, set VRAMSCOPE_SITES_STEPS=N in its environment instead. No Qt.
"""

from __future__ import annotations

import argparse
import sys

from vramscope.core.status.json_text import dumps
from vramscope.core.status.terminal_text import say
from vramscope.core.units import finite_number, fmt_bytes


def _steps(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: from 1 to 1000 steps")
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pid", type=int, metavar="PID", help="the training process (it runs the agent)")
    p.add_argument("--steps", type=_steps, default=3, help="steps to record (default 3)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the steps")
    p.add_argument("--json", action="store_true", help="the result as JSON")


def overhead_text(d: dict) -> str:
    """The recording's measured cost (n/a for what is not a finite number)."""
    ov, per = finite_number(d.get("overhead")), finite_number(d.get("us_per_alloc"))
    if ov is None:
        return "overhead: not measured yet"
    text = f"overhead: step time {ov:+.1%}"
    return text + (f" ({per:.2f} µs per allocation)" if per is not None else "")


def run(args) -> int:
    from vramscope.sources.agents.agent_requests import NoAgent, record_sites

    def progress(d: dict) -> None:
        if not args.json:
            say(
                sys.stderr,
                f"vramscope sites: step {d.get('done_steps') or 0} of {d.get('steps') or args.steps} · "
                + overhead_text(d),
            )

    try:
        result = record_sites(args.pid, args.steps, timeout=args.timeout, on_progress=progress)
    except (NoAgent, OSError) as exc:  # a reply over the limits: ConnectionError, said here
        say(sys.stderr, f"vramscope sites: {exc}")
        return 2
    if args.json:
        print(dumps(result, indent=2))
        return 0 if result.get("ok") else 1
    if not result.get("ok"):
        say(sys.stderr, f"vramscope sites: {result.get('error') or result.get('why')}")
        return 1
    say(
        sys.stdout,
        f"allocation sites over {result.get('done_steps')} steps of PID {args.pid} · "
        + overhead_text(result),
    )
    for device, d in (result.get("devices") or {}).items():
        say(sys.stdout, f"{device}: peak {fmt_bytes(d.get('peak_bytes'))} alive; top sites:")
        for s in d.get("sites") or ():
            count = "?" if s.get("count") is None else s["count"]
            say(sys.stdout, f"  {fmt_bytes(s.get('bytes')):>10}  {count:>5}x  {s.get('site')}")
        if d.get("why"):
            say(sys.stdout, f"  note: {d['why']}")
    if result.get("snapshot_path"):
        say(sys.stdout, f"snapshot (open at pytorch.org/memory_viz): {result['snapshot_path']}")
    return 0

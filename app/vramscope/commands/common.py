"""Options and helpers shared by the commands (no Qt)."""

from __future__ import annotations

import argparse


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--demo", action="store_true",
                   help="use the simulated workstation instead of NVML (no GPU needed)")
    p.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)


def open_source(args):
    """The source the options ask for: the simulated workstation or NVML."""
    if getattr(args, "demo", False):
        from vramscope.sources.simulated import SimulatedSource
        return SimulatedSource(seed=getattr(args, "seed", 1))
    from vramscope.sources.nvml import NvmlSource
    return NvmlSource()


def enrichers_for(source, store) -> list:
    """Frame -> Frame steps every front end applies after sampling.

    A real source gets the PyTorch agent client (discovers agents, pulls their
    samples, matches each to its process by pid + start time); a source whose
    frames already carry agent reports (the demo, a replayed session) gets
    their series recorded into the store instead, so every view reads one layout.
    """
    from vramscope.sources.agents import AgentClient, record_reports

    if getattr(source, "simulated", False):
        return [lambda frame: record_reports(store, frame)]
    return [AgentClient(store=store)]

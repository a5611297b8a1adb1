"""Options and helpers shared by the commands (no Qt)."""

from __future__ import annotations

import argparse


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--demo", action="store_true",
                   help="use the simulated workstation instead of NVML (no GPU needed)")
    p.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)

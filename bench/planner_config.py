"""`vramscope plan --config` for a hand-formula family: how long one answer takes,
beside the import of transformers it no longer needs.

    .venv/bin/python bench/planner_config.py [--runs 5]

Each run is a fresh process (what a user waits for at the shell): the plan of
Llama-2-7B's config.json (tests/core/planner/configs) as JSON, and, side by side,
`python -c "import transformers"` -- what each call cost while the planner
imported it. Budget (issue 27): the plan under 2 s.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / "tests" / "core" / "planner" / "configs" / "llama-2-7b.json"


def timed(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "app")}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *args], check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    runs = ap.parse_args().runs
    plan, peer = [], []
    for _ in range(runs):  # interleaved: drift on a shared machine hits both alike
        plan.append(
            timed(["-m", "vramscope", "plan", "--config", str(CONFIG), "--gpu-memory", "24GiB", "--json"])
        )
        peer.append(timed(["-c", "import transformers"]))
    p, t = statistics.median(plan), statistics.median(peer)
    print(
        f"plan --config (llama, hand formula): median {p:.2f} s over {runs} runs "
        f"(budget 2 s: {'met' if p <= 2 else 'NOT met'})"
    )
    print(f"import transformers alone:           median {t:.2f} s -- {t / p:.1f}x the plan")


if __name__ == "__main__":
    main()

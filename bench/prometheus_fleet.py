"""`vramscope status --from-prometheus` against a fleet of 100,000 series
(issue 24; a figure, not a timed test).

    .venv/bin/python bench/prometheus_fleet.py                 # 100,000 series
    .venv/bin/python bench/prometheus_fleet.py --series 30000

A stand-in Prometheus on 127.0.0.1 (an ephemeral port, nothing else is
reached) answers the instant query with a canned vector shaped like
`vramscope record --prometheus` exporters: per host, 8 GPUs with the GPU
gauges, 4 processes per GPU (memory and SM), and ``up``. The child
`vramscope status --from-prometheus URL` (text, then --json) is timed end to
end, wall clock; the peer is fetching and parsing the same answer alone
(urllib + json.loads in the bench's process), the floor any reader pays.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "tests")]

from rawhttp import RawHttp, http_answer  # noqa: E402 (the tests' stand-in HTTP peer)
from remote.conftest import private_dirs  # noqa: E402
from vramscope.core.export.metrics import GPU_GAUGES, PROCESS_MEMORY_METRIC, PROCESS_SM_METRIC  # noqa: E402


def fleet_vector(series: int, gpus: int = 8, procs: int = 4) -> list[dict]:
    """About ``series`` series: whole hosts of GPU gauges, processes and ``up``."""
    out: list[dict] = []
    host = 0
    while len(out) < series:
        instance = f"node{host:05d}:9400"
        out.append(
            {"metric": {"__name__": "up", "instance": instance, "job": "vramscope"}, "value": [1.7e9, "1"]}
        )
        for g in range(gpus):
            base = {
                "instance": instance,
                "gpu": str(g),
                "name": "NVIDIA H100 80GB HBM3",
                "uuid": f"GPU-{host:05d}-{g}",
            }
            for attr, name, _ in GPU_GAUGES:
                value = {"total": 80 << 30, "used": (10 + g) << 30}.get(attr, 50)
                out.append({"metric": {"__name__": name, **base}, "value": [1.7e9, str(value)]})
            for p in range(procs):
                labels = {**base, "pid": str(1000 + 10 * g + p), "process": f"train_{p}.py"}
                out.append(
                    {"metric": {"__name__": PROCESS_MEMORY_METRIC, **labels}, "value": [1.7e9, str(2 << 30)]}
                )
                out.append({"metric": {"__name__": PROCESS_SM_METRIC, **labels}, "value": [1.7e9, "30"]})
        host += 1
    return out


def private_env(base: pathlib.Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"), **private_dirs(base))
    env["HOME"] = env["XDG_CONFIG_HOME"]
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=100_000)
    ap.add_argument("--gpus", type=int, default=8, help="GPUs per host (default 8)")
    ap.add_argument("--procs", type=int, default=4, help="processes per GPU (default 4)")
    args = ap.parse_args()
    vector = fleet_vector(args.series, args.gpus, args.procs)
    hosts = sum(1 for s in vector if s["metric"]["__name__"] == "up")
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": vector}}).encode()
    server = RawHttp(http_answer(body, headers={"Content-Type": "application/json"}))
    url = server.url
    print(
        f"stand-in Prometheus at {url}: {len(vector):,} series, {hosts:,} hosts x {args.gpus} "
        f"GPUs x {args.procs} processes, answer {len(body) / 1e6:.1f} MB"
    )
    # the peer: only fetching and parsing the same answer (urllib + json), in this process
    started = time.perf_counter()
    with urllib.request.urlopen(url + "/api/v1/query?query=x", timeout=60) as reply:
        json.loads(reply.read())
    floor = time.perf_counter() - started
    print(f"peer: urllib GET + json.loads of the answer: {floor:6.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        env = private_env(pathlib.Path(tmp))
        for mode in ([], ["--json"]):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "vramscope", "status", "--from-prometheus", url, *mode],
                env=env,
                capture_output=True,
                timeout=900,
            )
            took = time.perf_counter() - started
            lines = done.stdout.count(b"\n")
            print(
                f"status --from-prometheus {' '.join(mode) or '(text)':8s}: {took:6.2f} s wall "
                f"({took / floor:.1f}x the peer; start-up included), exit {done.returncode}, "
                f"{lines:,} lines out"
            )
            if done.returncode not in (0, 1):
                print(done.stderr.decode(errors="replace")[-2000:])
    server.close()


if __name__ == "__main__":
    main()

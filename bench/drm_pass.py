"""The DRM part of a sampling pass (AMD / Intel GPUs through fdinfo and sysfs).

A staged /proc of N processes, each with 40 ordinary fds, and a quarter of
them GPU processes on the staged AMD and Intel cards (tests/drm_trees.py),
psutil enrichment of real ``sleep`` processes; half of the GPU processes run
ROCm (they hold /dev/kfd and KFD lists their VRAM in /sys/class/kfd/kfd/proc),
and a tenth print no drm-client-id (each compared with kcmp). Timed, median /
p95 in ms:

- the full pass (every process's fd table walked: once every 5 s);
- the light pass (only the DRM fds found then re-read: every other pass);
- the floor: a bare loop doing the full pass's reads and nothing else
  (listdir of /proc and of each fd table, readlink of each fd, read of each
  DRM fdinfo, listdir of KFD's proc and read of each vram file), side by side
  in this process; the ratio is printed against the pass budget (1.4x the
  floor, as for the NVML pass).

    .venv/bin/python bench/drm_pass.py [--processes 400] [--passes 50]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "app"))

from drm_trees import Fd, GiB, Machine, MiB, amdgpu_fdinfo, xe_fdinfo  # noqa: E402
from kfd_trees import KfdNode, stage_kfd  # noqa: E402
from sampling_pass import summary, timed  # noqa: E402  (bench/ is this script's folder)

from vramscope.sources.drm.drm_source import FULL_SCAN_EVERY, DrmGpus  # noqa: E402


BUDGET = 1.4  # a pass at most this many times its floor (DESIGN.md's budgets)
GPU_ID = 53251  # KFD's id of the staged AMD card


def floor(proc_root: str, sys_root: str) -> None:
    kfd = f"{sys_root}/class/kfd/kfd/proc"
    for name in os.listdir(kfd):
        for entry in os.listdir(f"{kfd}/{name}"):
            if entry.startswith("vram_"):
                with open(f"{kfd}/{name}/{entry}", "rb") as f:
                    f.read(4096)
    for name in os.listdir(proc_root):
        if not name.isdigit():
            continue
        fd_dir = f"{proc_root}/{name}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            target = os.readlink(f"{fd_dir}/{fd}")
            if target.startswith("/dev/dri/"):
                with open(f"{proc_root}/{name}/fdinfo/{fd}", "rb") as f:
                    f.read(65536)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=400)
    ap.add_argument("--passes", type=int, default=50)
    args = ap.parse_args()
    gpu_procs = max(2, args.processes // 4)
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(gpu_procs)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            m = Machine(pathlib.Path(tmp))
            rocm = {}
            for i in range(args.processes):
                pid = sleepers[i].pid if i < gpu_procs else 1_000_000 + i
                fds = [Fd(f"/dev/pts/{k}", "pos:\t0\n") for k in range(40)]
                if i < gpu_procs:
                    amd = amdgpu_fdinfo(10 + i, vram=(i + 1) * 16 * MiB)
                    if i % 10 == 9:  # a driver that prints no client id: kcmp compares
                        amd = "".join(x + "\n" for x in amd.splitlines() if not x.startswith("drm-client-id"))
                    fds += [Fd("renderD129", amd), Fd("renderD130", xe_fdinfo(10 + i, vram=GiB // 64))]
                    if i % 2 == 0:
                        fds.append(Fd("/dev/kfd", "pos:\t0\n"))
                        rocm[pid] = {GPU_ID: (i + 1) * 16 * MiB}
                m.fds[pid] = fds
            m.stage_sys()
            m.stage_proc()
            stage_kfd(
                m.root / "sys", [KfdNode(0, cpu_cores=16), KfdNode(GPU_ID, simds=192, render_minor=129)], rocm
            )
            source = DrmGpus(m.proc, m.sys)
            clock = [0.0]

            def full():
                clock[0] += FULL_SCAN_EVERY
                source.read(clock[0])

            for _ in range(5):  # warm: the fdinfo parse cache, psutil's names
                full()

            def light():
                clock[0] += 0.001
                source.read(clock[0])

            # the full pass and its floor alternate, pass by pass, so both see the same
            # load on a shared machine (the ratio is of medians over the same minutes)
            full_ms, floor_ms = [], []
            for _ in range(args.passes):
                full_ms += timed(full, 1, warmup=0)
                floor_ms += timed(lambda: floor(m.proc, m.sys), 1, warmup=0)
            light_ms = timed(light, args.passes)
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
    print(f"{args.processes} processes ({gpu_procs} on the GPUs, {len(rocm)} of them ROCm), 40 fds each")
    print(f"full pass   {summary(full_ms)}")
    print(f"light pass  {summary(light_ms)}")
    print(f"bare reads  {summary(floor_ms)}")
    ratio = statistics.median(full_ms) / statistics.median(floor_ms)
    print(
        f"full pass / bare reads: {ratio:.2f}x (budget {BUDGET}x: {'met' if ratio <= BUDGET else 'NOT met'})"
    )


if __name__ == "__main__":
    main()

"""A busy simulated workstation: the demo's GPU 0, and a shared GPU 1 with
sixteen processes in all -- for the README's screenshots, the window's tests
and the CPU bench (``vramscope --demo --busy``).

GPU 0 is the demo's (Xorg, an idle Jupyter kernel, ``train.py`` under the
agent). GPU 1 (RTX A6000, 48 GiB) holds ten Ray workers of 2.4-3.2 GiB,
an embedding server whose memory grows by about 40 MiB a minute (a leak
the growth rule names), two idle holders (a finished notebook's process
and a stopped benchmark) and the demo's evaluation job that comes and goes.
"""

from __future__ import annotations

from vramscope.core.samples import GpuProcess, ProcessInfo
from vramscope.core.units import GiB, MiB
from vramscope.sources.demo.demo_modules import modules_for
from vramscope.sources.demo.busy_oom import CaughtOom
from vramscope.sources.demo.simulated import USER, SimulatedSource

WORKERS = 10
EMBED_START = 9 * GiB
EMBED_GROWTH = 40 * MiB  # per minute
_CH_WORKERS = 4000


class BusyWorkstation(SimulatedSource):
    def __init__(self, seed: int = 1, start_time: float | None = None):
        super().__init__(seed=seed, start_time=start_time)
        self.ray_pid0 = 41000 + seed * 17
        self.embed_pid = 38211
        self.caught_oom = CaughtOom()  # train.py's caught OOM at 7 min (sources/demo/busy_oom.py)
        self.holders = (
            (36702, "python", ("python", "bench_matmul.py", "--size", "16384"), 1536 * MiB),
            (35120, "python3", ("python3", "notebooks/export_onnx.py"), 820 * MiB),
        )

    def _gpus(self, t: float, prev: float):
        g0, g1 = self.gpus
        procs0 = [self._xorg(t), self._kernel()]
        got = self.train.sample(
            self.start_time,
            t,
            prev,
            g0.uuid,
            g0.total,
            g0.usable - g0.unattributed - sum(p.used for p in procs0 if p.used),
        )
        agents = []
        if got is not None:
            procs0.append(got[0])
            free = g0.usable - g0.unattributed - sum(p.used for p in procs0 if p.used)
            agents.append(
                modules_for(
                    self.caught_oom.apply(got[1], got[0], procs0, g0.total, free, t, prev, self.start_time)
                )
            )
        procs1 = self._workers(t) + [self._embedder(t)] + self._holders()
        short = self._short_job(t)
        if short is not None:
            procs1.append(short)
        return (self._gpu_sample(g0, procs0, t), self._gpu_sample(g1, procs1, t)), tuple(agents)

    def _workers(self, t: float) -> list[GpuProcess]:
        out = []
        for i in range(WORKERS):
            pid = self.ray_pid0 + 3 * i
            info = ProcessInfo(
                pid=pid,
                start_time=self.start_time - 1800 + i,
                user=USER,
                name="ray::RolloutWorker",
                cmdline=("ray::RolloutWorker",),
                ppid=self.ray_pid0 - 5,
                status="running",
                parent_alive=True,
            )
            base = (2400 + (i * 331) % 800) * MiB
            wobble = int(self.noise.jitter(_CH_WORKERS + i, int(t // 5), 48.0)) * MiB
            sm = 35 + int(20 * self.noise.u(_CH_WORKERS + 50 + i, int(t)))
            out.append(GpuProcess(pid=pid, used=base + wobble, sm=sm, info=info))
        return out

    def _embedder(self, t: float) -> GpuProcess:
        age = 4 * 3600.0
        info = ProcessInfo(
            pid=self.embed_pid,
            start_time=self.start_time - age,
            user=USER,
            name="python",
            cmdline=("python", "-m", "embed_server", "--port", "8100", "--model", "bge-large-en-v1.5"),
            ppid=1,
            status="sleeping",
            parent_alive=True,
        )
        used = EMBED_START + int(EMBED_GROWTH * (t + age) / 60.0) - int(EMBED_GROWTH * age / 60.0)
        return GpuProcess(pid=self.embed_pid, used=used, sm=8, info=info)

    def _holders(self) -> list[GpuProcess]:
        out = []
        for pid, name, cmd, used in self.holders:
            info = ProcessInfo(
                pid=pid,
                start_time=self.start_time - 7200,
                user=USER,
                name=name,
                cmdline=cmd,
                ppid=self._shell_pid,
                status="sleeping",
                parent_alive=True,
            )
            out.append(GpuProcess(pid=pid, used=used, sm=0, info=info))
        return out

"""The simulated workstation behind ``vramscope --demo`` and the tests.

A deterministic function of the seed and the time since the session started
(the first sample, unless ``start_time`` is given). The script, in session
seconds ``t``:

GPU 0, NVIDIA GeForce RTX 4090 (24 GiB)
  - Xorg, a graphics process whose memory NVML does not report (n/a);
  - a Jupyter kernel left over from the morning: 3 GiB, 0 % SM, idle;
  - ``python train.py`` from t = 2 s: CUDA context, weights loaded in four
    shards, then steps of ~1 s with busy SMs; memory plateaus after ~12 s.
    It runs the agent: allocated/reserved, buckets (Adam state = 2 x weights).
GPU 1, NVIDIA RTX A6000 (48 GiB)
  - ``python finetune.py``, running for 5 min when the session starts, with
    the agent: allocated after each step creeps up by 4 MiB per step (a leak),
    and reserved - allocated grows with variable-length batches
    (fragmentation; allocator retries from ~3 min). After about an hour it
    runs out of memory, the agent reports the OOM, the process exits and is
    restarted 45 s later as a new process;
  - a short evaluation job: present for 40 s every 2 minutes (t = 20..60,
    140..180, ...), a new process each time.

The PIDs are invented: they name no process on this machine (``simulated``
is True on every frame; the UI must not offer actions on them).
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from dataclasses import dataclass

from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.units import GiB, MiB
from vramscope.sources.demo.demo_clock import Noise, round_up
from vramscope.sources.demo.demo_runs import RunScript, ScriptedRun

USER = "alice"
HOSTNAME = "workstation"
DRIVER_VERSION = "550.120"

TRAIN_START = 2.0  # session time the training run starts
SHORT_JOB_PERIOD = 120.0
SHORT_JOB_FROM, SHORT_JOB_UNTIL = 20.0, 60.0  # within each period
KERNEL_BYTES = 3 * GiB
FINETUNE_STARTED_BEFORE = 300.0  # the leaking run was already going

# noise channels (any distinct integers)
_CH_GPU = 1000
_CH_SHORT = 2000
_CH_HOST = 3000

_ALLOCATOR_DEFAULTS = {"expandable_segments": False, "max_split_size": None, "backend": "native"}


@dataclass(frozen=True)
class _Gpu:
    """One simulated board: what NVML would report that does not change."""

    index: int
    name: str
    total: int
    reserved: int  # driver-reserved (nvmlMemory_v2)
    pci_bus_id: str
    uuid: str
    idle_w: float
    limit_w: float
    idle_c: int
    unattributed: int  # in NVML's used figure, but in no process's (Xorg's n/a included)
    mem_util_share: float  # memory-controller % per SM %

    @property
    def usable(self) -> int:
        return self.total - self.reserved


class SimulatedSource:
    """The demo workstation as a Source (see core/flow/source.py)."""

    name = "demo"
    simulated = True

    def __init__(self, seed: int = 1, start_time: float | None = None):
        self.seed = seed
        self.start_time = start_time
        self._prev_t: float | None = None
        self.noise = Noise(seed)
        rng = random.Random(seed)

        def gpu_uuid():
            return "GPU-" + str(uuid.UUID(int=rng.getrandbits(128), version=4))

        self.gpus = (
            _Gpu(
                0,
                "NVIDIA GeForce RTX 4090",
                24564 * MiB,
                314 * MiB,
                "00000000:01:00.0",
                gpu_uuid(),
                21.0,
                450.0,
                36,
                180 * MiB,
                0.55,
            ),
            _Gpu(
                1,
                "NVIDIA RTX A6000",
                49140 * MiB,
                565 * MiB,
                "00000000:4C:00.0",
                gpu_uuid(),
                27.0,
                300.0,
                33,
                64 * MiB,
                0.45,
            ),
        )
        home = f"/home/{USER}"
        self.xorg_pid = rng.randrange(1500, 2600)
        self.lab_pid = rng.randrange(20000, 60000)
        self.kernel_pid = self.lab_pid + rng.randrange(20, 400)
        self.kernel_file = (
            f"{home}/.local/share/jupyter/runtime/"
            f"kernel-{uuid.UUID(int=rng.getrandbits(128), version=4)}.json"
        )
        shell_pid = rng.randrange(60000, 90000)
        self.short_job_pid0 = rng.randrange(200000, 900000)
        self.kernel_started = 3 * 3600 + 12 * 60 + rng.randrange(0, 600)  # seconds before t=0
        self.xorg_started = 2 * 86400 + rng.randrange(0, 86400)

        gpt2_medium = 354_823_168  # parameters, fp32 weights + Adam: 16 B/param
        self.train = ScriptedRun(
            RunScript(
                gpu=0,
                device="cuda:0",
                pid=rng.randrange(100000, 200000),
                name="python",
                cmdline=(
                    "python",
                    "train.py",
                    "--config",
                    "configs/gpt2-medium.yaml",
                    "--batch-size",
                    "16",
                    "--seq-len",
                    "1024",
                    "--lr",
                    "3e-4",
                    "--bf16",
                    "--out",
                    "runs/gpt2m-0412",
                ),
                user=USER,
                ppid=shell_pid,
                context=520 * MiB,
                weights=4 * gpt2_medium,
                gradients=4 * gpt2_medium,
                optimizer_state=8 * gpt2_medium,
                activations=10 * GiB + 512 * MiB,
                activation_spread=0.04,
                period=0.93,
                period_jitter=0.05,
                sm=96,
                gap0=256 * MiB,
                gap_growth=128 * MiB,
                gap_tau=60.0,
                inactive_share=0.2,
                allocator_settings=_ALLOCATOR_DEFAULTS,
                channel=10,
            ),
            self.noise,
            first_start=TRAIN_START,
            hostname=HOSTNAME,
        )

        tinyllama = 1_100_048_384
        gpu1 = self.gpus[1]
        self.short_job_max = round_up(420 * MiB + 3400 * MiB)
        self.finetune = ScriptedRun(
            RunScript(
                gpu=1,
                device="cuda:0",  # started with CUDA_VISIBLE_DEVICES=1: match by UUID
                pid=rng.randrange(200000, 300000),
                name="python",
                cmdline=(
                    "python",
                    "finetune.py",
                    "--model",
                    "TinyLlama/TinyLlama-1.1B",
                    "--data",
                    "data/support_chats.jsonl",
                    "--max-seq-len",
                    "4096",
                    "--no-packing",
                    "--lr",
                    "2e-5",
                    "--epochs",
                    "3",
                ),
                user=USER,
                ppid=shell_pid + 3,
                context=560 * MiB,
                weights=4 * tinyllama,
                gradients=4 * tinyllama,
                optimizer_state=8 * tinyllama,
                activations=8 * GiB,
                activation_spread=0.45,
                period=1.5,
                period_jitter=0.1,
                sm=84,
                leak_per_step=4 * MiB,
                after_noise=12 * MiB,
                gap0=1 * GiB,
                gap_growth=6 * GiB,
                gap_tau=600.0,
                inactive_share=0.7,
                retries_from=FINETUNE_STARTED_BEFORE + 180.0,
                retries_every=20.0,
                allocator_settings=_ALLOCATOR_DEFAULTS,
                channel=20,
            ),
            self.noise,
            first_start=-FINETUNE_STARTED_BEFORE,
            budget=gpu1.usable - gpu1.unattributed - self.short_job_max - 192 * MiB,
            hostname=HOSTNAME,
        )
        self._shell_pid = shell_pid
        gpu0 = self.gpus[0]
        assert self.train.max_used + KERNEL_BYTES + gpu0.unattributed <= gpu0.usable

    # -- the Source protocol ---------------------------------------------------
    def sample(self, now: float) -> Frame:
        if self.start_time is None:
            self.start_time = now
        t = max(0.0, now - self.start_time)
        # agent events are "new since the previous frame": the steps in (prev, t]
        prev = self._prev_t if self._prev_t is not None and self._prev_t <= t else t - 1.0
        self._prev_t = t
        gpus, agents = self._gpus(t, prev)
        return Frame(
            time=now,
            gpus=gpus,
            source=self.name,
            simulated=True,
            driver_version=DRIVER_VERSION,
            nvml_version="12." + DRIVER_VERSION,
            cuda_driver_version="12.4",
            agents=agents,
        )

    def close(self) -> None:
        pass

    # -- the scenario ----------------------------------------------------------
    def _gpus(self, t: float, prev: float):
        g0, g1 = self.gpus
        procs0 = [self._xorg(t), self._kernel()]
        procs1 = []
        short = self._short_job(t)
        if short is not None:
            procs1.append(short)
        agents = []
        for run, gpu, procs in ((self.train, g0, procs0), (self.finetune, g1, procs1)):
            others = sum(p.used for p in procs if p.used is not None)
            got = run.sample(
                self.start_time, t, prev, gpu.uuid, gpu.total, gpu.usable - gpu.unattributed - others
            )
            if got is not None:
                procs.append(got[0])
                agents.append(got[1])
        return (self._gpu_sample(g0, procs0, t), self._gpu_sample(g1, procs1, t)), tuple(agents)

    def _gpu_sample(self, gpu: _Gpu, procs: list[GpuProcess], t: float) -> GpuSample:
        used = gpu.unattributed + sum(p.used for p in procs if p.used is not None)
        util = min(100, sum(p.sm or 0 for p in procs))
        tick = int(t)
        j = self.noise.jitter
        temp = gpu.idle_c + round(0.42 * util + j(_CH_GPU + gpu.index, tick // 5, 1.0))
        power = gpu.idle_w + (0.92 * gpu.limit_w - gpu.idle_w) * util / 100.0
        power += j(_CH_GPU + 10 + gpu.index, tick, 4.0)
        return GpuSample(
            index=gpu.index,
            name=gpu.name,
            uuid=gpu.uuid,
            pci_bus_id=gpu.pci_bus_id,
            total=gpu.total,
            used=used,
            free=gpu.usable - used,
            reserved=gpu.reserved,
            util_gpu=util,
            util_memory=round(util * gpu.mem_util_share),
            temperature=temp,
            power_w=round(power, 1),
            power_limit_w=gpu.limit_w,
            processes=tuple(sorted((self._with_host(p, t) for p in procs), key=lambda p: p.pid)),
        )

    def _with_host(self, proc: GpuProcess, t: float) -> GpuProcess:
        """Host CPU % and resident memory: a busy step loop keeps about one core busy
        feeding the GPU; an idle holder sleeps. Resident memory is steady per process."""
        busy = (proc.sm or 0) >= 20
        cpu = (
            98.0 + self.noise.jitter(_CH_HOST + proc.pid % 97, int(t), 6.0)
            if busy
            else 0.3 + abs(self.noise.jitter(_CH_HOST + 1, int(t), 0.3))
        )
        host = (1536 + (proc.pid * 7919) % 6144) * MiB
        return dataclasses.replace(proc, cpu_percent=round(max(0.0, cpu), 1), host_memory=host)

    def _xorg(self, t: float) -> GpuProcess:
        info = ProcessInfo(
            pid=self.xorg_pid,
            start_time=self.start_time - self.xorg_started,
            user="root",
            name="Xorg",
            cmdline=(
                "/usr/lib/xorg/Xorg",
                "vt2",
                "-displayfd",
                "3",
                "-auth",
                "/run/user/1000/gdm/Xauthority",
                "-nolisten",
                "tcp",
                "-background",
                "none",
                "-noreset",
                "-keeptty",
                "-novtswitch",
                "-verbose",
                "3",
            ),
            ppid=self.xorg_pid - 14,
            status="sleeping",
            parent_alive=True,
        )
        sm = 1 + int(3 * self.noise.u(_CH_GPU + 20, int(t)))
        return GpuProcess(pid=self.xorg_pid, used=None, kinds=("graphics",), sm=sm, info=info)

    def _kernel(self) -> GpuProcess:
        info = ProcessInfo(
            pid=self.kernel_pid,
            start_time=self.start_time - self.kernel_started,
            user=USER,
            name="python3",
            cmdline=("/usr/bin/python3", "-m", "ipykernel_launcher", "-f", self.kernel_file),
            ppid=self.lab_pid,
            status="sleeping",
            parent_alive=True,
        )
        return GpuProcess(pid=self.kernel_pid, used=KERNEL_BYTES, sm=0, info=info)

    def _short_job(self, t: float) -> GpuProcess | None:
        k = int(t // SHORT_JOB_PERIOD)
        r = t - k * SHORT_JOB_PERIOD - SHORT_JOB_FROM
        if r < 0 or r >= SHORT_JOB_UNTIL - SHORT_JOB_FROM:
            return None
        pid = 300 + (self.short_job_pid0 - 300 + 131 * k) % 4_000_000
        info = ProcessInfo(
            pid=pid,
            start_time=self.start_time + t - r,
            user=USER,
            name="python",
            cmdline=(
                "python",
                "scripts/eval_ckpt.py",
                "--ckpt",
                f"runs/ft-1b/ckpt-{k:04d}.pt",
                "--split",
                "val",
                "--batch-size",
                "32",
            ),
            ppid=self._shell_pid,
            status="running",
            parent_alive=True,
        )
        if r < 2.0:
            used, sm = 420 * MiB, 0
        else:
            used = round_up(420 * MiB + 3400 * MiB * min(1.0, (r - 2.0) / 4.0))
            sm = 50 + int(25 * self.noise.u(_CH_SHORT, int(t * 10)))
        return GpuProcess(pid=pid, used=used, sm=sm, info=info)

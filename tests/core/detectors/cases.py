"""The alert-trust scenario suite: what each rule must flag (and how fast) and
what it must never flag, as frame sequences fed to the real engine.

Used by tests/core/detectors/test_trust_cases.py (pass/fail) and bench/alerts.py
(per rule: false warnings, missed cases, time to detection).

A case is either "flag" (its rule must raise an alert of at least
``severity`` within ``within`` seconds of ``start``) or "quiet" (its rule --
or, with rule=None, any rule -- raises nothing at ``severity`` or above from
``quiet_after`` on).
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from vramscope.core.detectors import Diagnostics, naming
from vramscope.core.detectors.alert import severity_rank
from vramscope.core.detectors.jupyter import NotebookHint
from vramscope.core.samples import AgentEvent

from .scenarios import GiB, MiB, T0, UUID, agent, device, frame, gpu, proc

CARD = 24 * GiB
GPU1_UUID = "GPU-11111111-1111-1111-1111-111111111111"


@dataclass
class Case:
    name: str
    rule: str | None  # alert kind under test; None = every rule (quiet cases)
    flag: bool
    frames: Callable[[], Iterator]  # yields Frame values
    within: float | None = None  # flag cases: seconds from ``start`` to detection
    start: float = 0.0  # when the condition begins (seconds from the first frame)
    severity: str = "warning"  # lowest severity that counts
    quiet_after: float = 0.0  # quiet cases: only alerts from this time on count
    check: Callable | None = None  # extra assertions on the first flagging alert
    notes: str = ""
    tags: tuple = field(default=())


def engine() -> Diagnostics:
    return Diagnostics(
        notebook_finder=lambda pid, conn: NotebookHint(None, "suite"), kernel_activity=lambda conn: None
    )


@dataclass
class Outcome:
    case: Case
    detected_at: float | None  # seconds after case.start (flag cases)
    false_alerts: list  # (time, alert) that should not have been raised
    first: object | None  # the first flagging alert


def run_case(case: Case, make_engine: Callable[[], Diagnostics] = engine) -> Outcome:
    me = naming._me
    naming._me = lambda: "alice"  # the monitor runs as the suite's user, whoever runs it
    try:
        return _run(case, make_engine())
    finally:
        naming._me = me


def _run(case: Case, eng: Diagnostics) -> Outcome:
    floor = severity_rank(case.severity)
    detected = first = None
    false = []
    for fr in case.frames():
        t = fr.time - T0
        for a in eng.feed(fr):
            if severity_rank(a.severity) < floor:
                continue
            if case.rule is not None and a.kind != case.rule:
                continue
            if case.flag:
                if detected is None and t >= case.start:
                    detected, first = t - case.start, a
            elif t >= case.quiet_after:
                false.append((t, a))
    return Outcome(case, detected, false, first)


# -- building blocks ---------------------------------------------------------------------


def _jitter(rng: random.Random, amplitude: int) -> int:
    return int(rng.uniform(-amplitude, amplitude))


VLLM_CMD = (
    "/usr/bin/python3",
    "/opt/venv/bin/vllm",
    "serve",
    "meta-llama/Llama-3.1-8B-Instruct",
    "--gpu-memory-utilization",
    "0.9",
)
SERVER_CMDS = {
    "vllm": ("vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-utilization", "0.9"),
    "sglang": (
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "Qwen/Qwen2.5-7B",
        "--mem-fraction-static",
        "0.88",
    ),
    "tgi": (
        "text-generation-launcher",
        "--model-id",
        "mistralai/Mistral-7B-v0.1",
        "--cuda-memory-fraction",
        "0.9",
    ),
    "llama.cpp": (
        "/opt/llama.cpp/build/bin/llama-server",
        "-m",
        "model.gguf",
        "-ngl",
        "99",
        "--ctx-size",
        "32768",
    ),
    "ollama": (
        "/usr/local/bin/ollama",
        "runner",
        "--model",
        "/root/.ollama/models/blobs/sha256-x",
        "--port",
        "41235",
    ),
    "triton": ("/opt/tritonserver/bin/tritonserver", "--model-repository=/models"),
}
# the same engines launched the other common ways (an idle one must still be a server)
SERVER_LAUNCHES = {
    # the `vllm serve` console script, as /proc shows it: the shebang's interpreter first;
    # V0 runs the engine in this same process (no VLLM::EngineCore child)
    "vllm console script": (
        "/opt/venv/bin/python3",
        "/opt/venv/bin/vllm",
        "serve",
        "Qwen/Qwen2.5-7B-Instruct",
    ),
    "llama-cpp-python": (
        "python3",
        "-m",
        "llama_cpp.server",
        "--model",
        "/models/q4.gguf",
        "--n_gpu_layers",
        "-1",
    ),
    "llama.cpp old server binary": (
        "./server",
        "-m",
        "models/7B/ggml-model-q4_0.gguf",
        "-ngl",
        "99",
        "-c",
        "4096",
    ),
}


def idle_server(
    cmd, fraction: float, seconds: float = 3600, step: float = 5.0, sm: Callable[[float], int] = lambda t: 0
):
    """A server that loads for 40 s up to ``fraction`` of the card, then sits there."""
    pool = int(fraction * CARD) - 300 * MiB

    def frames():
        t = 0.0
        while t <= seconds:
            used = int(pool * min(1.0, t / 40.0)) + 500 * MiB
            s = sm(t)
            yield frame(
                t, [gpu([proc(9001, used, sm=s, cmd=cmd, ppid=1, parent_alive=False)], total=CARD, util=s)]
            )
            t += step

    return frames


def growing_plain(seconds=240.0, rate=24 * MiB):
    """train.py (no agent) grows 24 MiB/s from 2 GiB; big.py holds 8 GiB, flat."""

    def frames():
        for t in range(int(seconds) + 1):
            yield frame(
                t,
                [
                    gpu(
                        [
                            proc(4242, 2 * GiB + rate * t, sm=90),
                            proc(5151, 8 * GiB, sm=60, cmd=("python", "big.py")),
                        ],
                        total=CARD,
                        util=95,
                    )
                ],
            )

    return frames


def ramp_then_flat(ramp_s=120.0, flat_s=600.0, rate=100 * MiB):
    """A warm-up ramp (100 MiB/s for 2 min from 4 GiB) that then stays flat."""

    def frames():
        rng = random.Random(5)
        for t in range(int(ramp_s + flat_s) + 1):
            used = 4 * GiB + rate * min(t, ramp_s) + _jitter(rng, 4 * MiB)
            yield frame(t, [gpu([proc(4242, used, sm=90)], total=CARD, util=95)])

    return frames


def staircase_plain(seconds=2 * 3600.0, every=360.0, jump=400 * MiB, step=5.0):
    """train.py (no agent) keeps 400 MiB more every 6 min: 8 GiB in 2 h, flat between."""

    def frames():
        rng = random.Random(21)
        t = 0.0
        while t <= seconds:
            used = 3 * GiB + jump * int(t // every) + _jitter(rng, 8 * MiB)
            yield frame(t, [gpu([proc(4242, used, sm=70)], total=CARD, util=70)])
            t += step

    return frames


def oscillating_workers(seconds=2 * 3600.0, step=5.0):
    """Ten workers of ~2.5 GiB each swinging +-150 MiB (batches of varying size)."""

    def frames():
        rng = random.Random(22)
        t = 0.0
        while t <= seconds:
            procs = [
                proc(6000 + i, 2500 * MiB + _jitter(rng, 150 * MiB), sm=40, cmd=("ray::RolloutWorker",))
                for i in range(8)
            ]
            yield frame(t, [gpu(procs, total=CARD, util=40)])
            t += step

    return frames


def two_models_loaded(seconds=3600.0, step=5.0):
    """A process that loads one model, then a second 20 min later: two steps, no trend."""

    def frames():
        t = 0.0
        while t <= seconds:
            used = 1 * GiB + (5 * GiB if t >= 60 else 0) + (5 * GiB if t >= 1260 else 0)
            yield frame(t, [gpu([proc(4242, used, sm=60)], total=CARD, util=60)])
            t += step

    return frames


def step_fills_card(step=5.0, seconds=600.0):
    """big.py holds 16 GiB, flat; train.py (4242) goes from 2 GiB to 7.2 GiB at t=120
    (a larger batch): the card is near full and it is train.py that grew."""

    def frames():
        t = 0.0
        while t <= seconds:
            small = 2 * GiB if t < 120 else 7 * GiB + 200 * MiB
            yield frame(
                t,
                [
                    gpu(
                        [
                            proc(5151, 16 * GiB, sm=80, cmd=("python", "big.py")),
                            proc(4242, small, sm=90, cmd=("python", "train.py", "--batch-size", "32")),
                        ],
                        total=CARD,
                        util=95,
                    )
                ],
            )
            t += step

    return frames


def eval_mode_run(train_s=3600.0, eval_s=0.0):
    """Fine-tuning in eval() mode (forwards with grad in eval mode, a step every 2 s,
    allocated read mid-forward every other pass) for ``train_s``; then ``eval_s`` of an
    evaluation loop with grad on whose allocated climbs 64 MiB/s."""

    def frames():
        base = 10 * GiB
        for t in range(0, int(train_s + eval_s), 2):
            training = t < train_s
            events = [AgentEvent("eval_autograd", T0 + t + 0.2, {"model": "Net"})] if t % 30 == 0 else []
            if training:
                events.append(
                    AgentEvent(
                        "step",
                        T0 + t + 1.5,
                        {
                            "step": t // 2 + 1,
                            "allocated_after": base,
                            "peak_allocated": base + 4 * GiB,
                            "duration": 2.0,
                        },
                    )
                )
                alloc = base + (3 * GiB if t % 4 == 2 else 0)
            else:
                alloc = base + int(t - train_s) * 64 * MiB
            rep = dataclasses.replace(
                agent(4242, [device(alloc, 16 * GiB)], events, t=t), step=min(t, int(train_s)) // 2 + 1
            )
            yield frame(t, [gpu([proc(4242, 17 * GiB, sm=95, has_agent=True)], total=CARD, util=95)], [rep])

    return frames


def agent_run(
    after: Callable[[int], int],
    steps: int,
    steps_per_frame: int = 1,
    step_s: float = 1.0,
    gpu_index: int = 0,
    uuid: str = UUID,
    sm: Callable[[float], int] = lambda t: 95,
    stall_from: float | None = None,
    retries: Callable[[float], int] = lambda t: 0,
    seconds: float | None = None,
    used=14 * GiB,
    nvml_jitter: int = 0,
    stall_jitter: int = 0,
    read_every: int = 1,
):
    """A run under the agent: ``after(k)`` is allocated after step k. Frames every
    ``steps_per_frame * step_s`` seconds; no steps from ``stall_from`` on (allocated then
    moves by up to ``stall_jitter`` a frame: an evaluation phase allocates and frees).
    ``read_every``: only every n-th step carries its reading, as on steps too short for
    the agent's CPU budget to read each one (agent/steps/after_step.py); the others are
    left out, as the rule skips a step without one."""
    frame_s = steps_per_frame * step_s
    total = seconds if seconds is not None else steps * step_s

    def frames():
        rng = random.Random(11)
        k = 0
        t = 0.0
        while t <= total:
            events = []
            while (
                k < steps
                and (k + 1) * step_s <= t + 1e-9
                and (stall_from is None or (k + 1) * step_s < stall_from)
            ):
                k += 1
                if k % read_every:
                    continue
                events.append(
                    AgentEvent(
                        "step", T0 + k * step_s, {"step": k, "allocated_after": after(k), "duration": step_s}
                    )
                )
            last = after(k) if k else after(1)
            if stall_jitter and stall_from is not None and t >= stall_from:
                last += _jitter(rng, stall_jitter)
            dev = device(last, last + GiB, retries=retries(t), uuid=uuid)
            rep = dataclasses.replace(agent(4242, [dev], events, t=t), step=k or None)
            s = sm(t)
            u = used + (_jitter(rng, nvml_jitter) if nvml_jitter else 0)
            yield frame(
                t,
                [gpu([proc(4242, u, sm=s, has_agent=True)], total=CARD, util=s, index=gpu_index, uuid=uuid)],
                [rep],
            )
            t += frame_s

    return frames


KERNEL_CMD = (
    "/usr/bin/python3",
    "-m",
    "ipykernel_launcher",
    "-f",
    "/run/user/1000/jupyter/runtime/kernel-5d2a.json",
)


def notebook(pattern: Callable[[float], int], seconds=3600.0, step=5.0):
    def frames():
        t = 0.0
        while t <= seconds:
            s = pattern(t)
            yield frame(t, [gpu([proc(3131, 6 * GiB, sm=s, cmd=KERNEL_CMD)], total=CARD, util=s)])
            t += step

    return frames


def active_use(t: float) -> int:
    """20 s cells, then 90 s of reading, for as long as the notebook is used."""
    return 85 if t % 110 < 20 else 0


# -- checks on the first alert -----------------------------------------------------------


def names_train_py(alert):
    assert alert.message.startswith("train.py (4242) on GPU 0"), alert.message
    assert "MiB/min" in alert.message or "growing: train.py (4242)" in alert.message


def near_oom_names_grower(alert):
    assert "growing: train.py (4242)" in alert.message, alert.message
    assert "vramscope run" in alert.fix  # not under the agent: the agent is the advice


def names_the_one_that_grew(alert):
    assert "grew: train.py (4242)" in alert.message, alert.message
    assert "largest" not in alert.message.split(";")[-1]
    assert "--batch-size 16 with gradient accumulation 2" in alert.fix, alert.fix


def staircase_named(alert):
    assert alert.message.startswith("train.py (4242) on GPU 0 grows in steps"), alert.message


def leak_named_on_gpu1(alert):
    assert alert.message.startswith("train.py (4242) on GPU 1"), alert.message
    assert "cuda:0" not in alert.message
    assert alert.data["steps_to_oom"] is not None  # the OOM projection
    assert "out of memory in" in alert.message


def stalled_not_to_end(alert):
    assert "stalled since step" in alert.message, alert.message
    assert "End process" not in alert.fix and "py-spy dump" in alert.fix


def stalled_busy(alert):
    assert "stalled since step 599" in alert.message and "SM still busy" in alert.message
    assert "NCCL" in alert.fix and "End process" not in alert.fix


def leak_with_projection(alert):
    assert alert.data["steps_to_oom"] is not None and "out of memory in" in alert.message


def eval_leak_at_its_mean_rate(alert):
    """+200 MiB every 100 steps: 2 MiB/step on average, from the staircase's levels at
    their blocks' middle steps (within 3 %; from the blocks' ends it read 1.92)."""
    assert 0.97 * 2 * MiB <= alert.data["slope_bytes_per_step"] <= 1.03 * 2 * MiB


def leak_at_its_rate_from_sparse_readings(alert):
    """2 MiB/step read on 1 step in 50: the slope from the readings' own steps, within 10 %."""
    leak_with_projection(alert)
    assert 1.8 * MiB <= alert.data["slope_bytes_per_step"] <= 2.2 * MiB
    assert alert.data["staircase_jumps"] is None or "a staircase" not in alert.evidence[0]
    assert any(re.search(r"\(read after \d+ of them: on steps this short", e) for e in alert.evidence)


# -- the suite ---------------------------------------------------------------------------


def _sawtooth(k: int) -> int:
    return 10 * GiB + 2 * MiB * (k % 20)


def _jitter_leak(seed: int):
    rng = random.Random(seed)
    table = [10 * GiB + 2 * MiB * k + _jitter(rng, 32 * MiB) for k in range(200)]
    return lambda k: table[min(k, len(table) - 1)]


def _flat_jitter(seed: int):
    rng = random.Random(seed)
    table = [10 * GiB + _jitter(rng, 32 * MiB) for _ in range(4000)]
    return lambda k: table[k % len(table)]


def _series(seed: int, shape: Callable[[int], int], jitter: int = 32 * MiB, steps: int = 4000):
    """after(k) = 10 GiB + shape(k) + jitter, precomputed (the same on every replay)."""
    rng = random.Random(seed)
    table = [10 * GiB + shape(k) + _jitter(rng, jitter) for k in range(steps + 1)]
    return lambda k: table[min(k, steps)]


def short_step_leak(seed: int = 15):
    """2 MiB/step +-32 MiB on 2 ms steps (1 GiB/s): 30 s of steps."""
    return _series(seed, lambda k: 2 * MiB * k, steps=15_000)


def short_step_flat(seed: int = 16):
    """Flat +-32 MiB on 2 ms steps: 5 min of steps."""
    return _series(seed, lambda k: 0, steps=150_000)


def slow_leak(seed: int = 12):
    """1 MiB/step, exactly the threshold, +-16 MiB: the slope estimate straddles it."""
    return _series(seed, lambda k: MiB * k, jitter=16 * MiB)


def one_step_up(seed: int = 13):
    """Flat, then +512 MiB once at step 600 (a buffer made lazily), flat again."""
    return _series(seed, lambda k: 512 * MiB if k >= 600 else 0)


def eval_leak(seed: int = 14, every: int = 100, jump: int = 200 * MiB):
    """Flat while training; after each evaluation (every 100 steps) 200 MiB more is kept."""
    return _series(seed, lambda k: jump * (k // every))


def cases() -> list[Case]:
    out = [
        # inference servers: never a squatter or near-OOM because of the pool
        *[
            Case(
                f"idle {name} server, 1 h",
                None,
                False,
                idle_server(cmd, 0.9),
                notes="pool preallocated at start-up, 0 % SM",
            )
            for name, cmd in SERVER_CMDS.items()
        ],
        Case(
            "idle vLLM at --gpu-memory-utilization 0.95",
            None,
            False,
            idle_server(SERVER_CMDS["vllm"][:-1] + ("0.95",), 0.95),
        ),
        *[
            Case(
                f"idle server launched as {how}, 1 h",
                None,
                False,
                idle_server(cmd, 0.9),
                notes="each common launch is a server, never an idle squatter to end",
            )
            for how, cmd in SERVER_LAUNCHES.items()
        ],
        Case("busy vLLM server, 1 h", None, False, idle_server(VLLM_CMD, 0.9, sm=lambda t: 40 + int(t) % 50)),
        # growth without the agent
        Case("growth 24 MiB/s, no agent", "growth", True, growing_plain(), within=90.0, check=names_train_py),
        Case(
            "near-OOM names the growing process",
            "near_oom",
            True,
            growing_plain(),
            within=90.0,
            check=near_oom_names_grower,
        ),
        Case("ramp during warm-up", "near_oom", True, ramp_then_flat(), within=90.0),
        Case(
            "near-OOM after one process's step up names it, not the largest",
            "near_oom",
            True,
            step_fills_card(),
            start=120.0,
            within=10.0,
            check=names_the_one_that_grew,
        ),
        Case(
            "staircase without the agent: +400 MiB every 6 min",
            "growth",
            True,
            staircase_plain(),
            within=25 * 60.0,
            severity="info",
            check=staircase_named,
        ),
        Case("workers oscillating +-150 MiB, 2 h", None, False, oscillating_workers(), severity="info"),
        Case(
            "a second model loaded 20 min after the first",
            "growth",
            False,
            two_models_loaded(),
            severity="info",
            quiet_after=180.0,
        ),
        Case(
            "ramp ended: near-OOM clears within 1 min",
            "near_oom",
            False,
            ramp_then_flat(),
            quiet_after=120.0 + 60.0,
        ),
        Case(
            "ramp ended: growth clears within 1 min",
            "growth",
            False,
            ramp_then_flat(),
            quiet_after=120.0 + 60.0,
            severity="info",
        ),
        # leak
        Case(
            "bounded sawtooth (+2 MiB/step for 20 steps), 1 h",
            "leak",
            False,
            agent_run(_sawtooth, 3600, steps_per_frame=5),
        ),
        Case(
            "leak 2 MiB/step, +-32 MiB jitter, 1 s steps",
            "leak",
            True,
            agent_run(_jitter_leak(1), 200),
            within=40.0,
            check=leak_with_projection,
        ),
        Case(
            "leak 2 MiB/step, +-32 MiB jitter, 0.1 s steps",
            "leak",
            True,
            agent_run(_jitter_leak(2), 200, steps_per_frame=10, step_s=0.1),
            within=4.0,
            check=leak_with_projection,
        ),
        # 2 ms steps: the agent's budget reads after ~1 step in 50 there (bench/README)
        Case(
            "leak 2 MiB/step, +-32 MiB jitter, 2 ms steps read on 1 in 50",
            "leak",
            True,
            agent_run(short_step_leak(), 15_000, steps_per_frame=500, step_s=0.002, read_every=50),
            within=2.0,
            check=leak_at_its_rate_from_sparse_readings,
        ),
        Case(
            "flat +-32 MiB, 2 ms steps read on 1 in 50, 5 min",
            "leak",
            False,
            agent_run(short_step_flat(), 150_000, steps_per_frame=500, step_s=0.002, read_every=50),
        ),
        Case(
            "bounded sawtooth (+2 MiB/step for 20 steps), 2 ms steps read on 1 in 47, 5 min",
            "leak",
            False,
            agent_run(_sawtooth, 150_000, steps_per_frame=500, step_s=0.002, read_every=47),
        ),
        Case(
            "leak named on the GPU the cards show",
            "leak",
            True,
            agent_run(_jitter_leak(3), 200, gpu_index=1, uuid=GPU1_UUID),
            within=40.0,
            check=leak_named_on_gpu1,
        ),
        Case(
            "leak at the threshold (1 MiB/step, +-16 MiB), 1 h",
            "leak",
            True,
            agent_run(slow_leak(), 3600, steps_per_frame=5),
            within=240.0,
        ),
        Case(
            "one step up of 512 MiB, then flat, 1 h",
            "leak",
            False,
            agent_run(one_step_up(), 3600, steps_per_frame=5),
        ),
        Case(
            "leak only in evaluation (+200 MiB per eval every 100 steps), 1 h",
            "leak",
            True,
            agent_run(eval_leak(), 3600, steps_per_frame=5),
            within=450.0,
            check=eval_leak_at_its_mean_rate,
        ),
        # eval with autograd
        Case("fine-tuning in eval() mode with optimizer steps, 1 h", "eval_autograd", False, eval_mode_run()),
        Case(
            "evaluation loop with grad on after training",
            "eval_autograd",
            True,
            eval_mode_run(train_s=600.0, eval_s=180.0),
            start=600.0,
            within=60.0,
        ),
        # fragmentation
        Case(
            "one allocation retry",
            "fragmentation",
            False,
            agent_run(_flat_jitter(4), 1200, steps_per_frame=5, retries=lambda t: 1 if t >= 100 else 0),
        ),
        Case(
            "allocation retries rising",
            "fragmentation",
            True,
            agent_run(
                _flat_jitter(5), 1200, steps_per_frame=5, retries=lambda t: int(max(0.0, t - 100) // 30)
            ),
            start=100.0,
            within=90.0,
        ),
        # notebooks
        Case(
            "Jupyter kernel in active use (20 s cells, 90 s reading), 1 h",
            "squatter",
            False,
            notebook(active_use),
            severity="info",
        ),
        Case(
            "Jupyter kernel left idle",
            "squatter",
            True,
            notebook(lambda t: 85 if t < 300 else 0),
            start=300.0,
            within=11 * 60.0,
            severity="info",
        ),
        # a run under the agent whose steps stopped
        Case(
            "data-loader stall under the agent: not a squatter",
            "squatter",
            False,
            agent_run(
                _flat_jitter(6),
                600,
                seconds=1200,
                sm=lambda t: 95 if t < 600 else 0,
                stall_from=600.0,
                steps_per_frame=5,
            ),
        ),
        Case(
            "data-loader stall under the agent: stalled",
            "stalled",
            True,
            agent_run(
                _flat_jitter(7),
                600,
                seconds=1200,
                sm=lambda t: 95 if t < 600 else 0,
                stall_from=600.0,
                steps_per_frame=5,
            ),
            start=600.0,
            within=5.5 * 60,
            check=stalled_not_to_end,
        ),
        Case(
            "NCCL hang: steps stop, SM stays at 100 %",
            "stalled",
            True,
            agent_run(
                _flat_jitter(7), 600, seconds=1200, sm=lambda t: 100, stall_from=600.0, steps_per_frame=5
            ),
            start=600.0,
            within=5.5 * 60,
            check=stalled_busy,
        ),
        Case(
            "NCCL hang: not a squatter",
            "squatter",
            False,
            agent_run(
                _flat_jitter(7), 600, seconds=1200, sm=lambda t: 100, stall_from=600.0, steps_per_frame=5
            ),
            severity="info",
        ),
        Case(
            "10 min evaluation phase, SM busy, allocating: not stalled",
            "stalled",
            False,
            agent_run(
                _flat_jitter(7),
                600,
                seconds=1200,
                sm=lambda t: 95,
                stall_from=600.0,
                steps_per_frame=5,
                stall_jitter=256 * MiB,
            ),
        ),
        Case(
            "slow steps (8 min each), SM busy: not stalled",
            "stalled",
            False,
            agent_run(lambda k: 10 * GiB, 6, step_s=480.0, steps_per_frame=1 / 96, seconds=2880),
        ),
        # healthy hours
        Case(
            "healthy training under the agent, 1 h",
            None,
            False,
            agent_run(_flat_jitter(8), 3600, steps_per_frame=5, nvml_jitter=64 * MiB),
        ),
        Case(
            "healthy training at 0.1 s steps, 10 min",
            None,
            False,
            agent_run(_flat_jitter(9), 6000, steps_per_frame=10, step_s=0.1, nvml_jitter=64 * MiB),
        ),
    ]
    return out

"""A scripted PyTorch run of the demo workstation that reports through the agent:
its memory story (``RunScript``) and the process and agent report it gives at
any time (``ScriptedRun``), on deterministic noise and step clocks
(sources/demo/demo_clock.py), with its step and OOM events
(sources/demo/demo_events.py).

Everything here is a pure function of a seed and the time since the session
started (``t``, seconds), so the demo and the tests see the same story every
time. Nothing here keeps history: a value at ``t`` is computed, not replayed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport, GpuProcess, ProcessInfo
from vramscope.core.units import MiB
from vramscope.sources.demo import demo_allocator
from vramscope.sources.demo.demo_clock import Noise, StepClock, round_up
from vramscope.sources.demo.demo_events import oom_event, step_events


@dataclass(frozen=True)
class RunScript:
    """The memory story of one training process that runs the agent.

    Phases (run time r, seconds since the process started): CUDA context only;
    weights loaded shard by shard; then optimizer steps. In each step the
    activations rise through the forward pass (first 45 %), are freed through
    backward (to 90 %), then the optimizer steps. Gradients appear in the
    first backward, the optimizer state (Adam: 2 x weights) at the first step.
    """

    gpu: int
    device: str  # as torch names it inside the process ("cuda:0" under CUDA_VISIBLE_DEVICES)
    pid: int
    name: str
    cmdline: tuple[str, ...]
    user: str
    ppid: int
    context: int  # CUDA context + cuBLAS workspaces: NVML memory outside PyTorch
    weights: int
    gradients: int
    optimizer_state: int
    activations: int  # peak activations of the largest batch
    activation_spread: float  # batches vary between (1 - spread) and 1 x activations
    period: float  # seconds per optimizer step
    period_jitter: float  # fraction of a period
    sm: int  # SM % while stepping
    context_s: float = 3.0  # context only until then
    shards: int = 4
    shard_s: float = 2.0
    leak_per_step: int = 0  # allocated after each step grows by this much
    after_noise: int = 1 * MiB  # 0..after_noise added to allocated after a step
    gap0: int = 256 * MiB  # cached free blocks once stepping
    gap_growth: int = 0  # ... growing by this much (fragmentation)
    gap_tau: float = 600.0
    inactive_share: float = 0.15  # inactive_split = share x cached gap
    retries_from: float | None = None  # run time when num_alloc_retries starts rising
    retries_every: float = 20.0
    allocator_settings: dict = field(default_factory=dict)
    channel: int = 0  # noise channel base
    batch: int = 8  # the micro-batch and sequence of its training forwards
    seq: int | None = 2048

    @property
    def weights_loaded_at(self) -> float:
        return self.context_s + self.shards * self.shard_s


class ScriptedRun:
    """One (possibly restarting) agent run, evaluated at any session time."""

    LINGER_S = 3.0  # an OOM'd process prints its traceback, then exits

    def __init__(
        self,
        script: RunScript,
        noise: Noise,
        first_start: float,
        budget: int | None = None,
        restart_after: float = 45.0,
        hostname: str = "workstation",
    ):
        self.s = script
        self.noise = noise
        self.first_start = first_start  # session time the first process started
        self.restart_after = restart_after
        self.hostname = hostname
        self.clock = StepClock(
            script.weights_loaded_at, script.period, script.period_jitter, noise, script.channel + 1
        )
        self.oom_r: float | None = None
        if script.leak_per_step > 0:
            if budget is None:
                raise ValueError("a leaking run needs a memory budget to run out of")
            self._plan_oom(budget)
        self.max_used = self._max_used()

    # -- memory as a function of steps done and run time -----------------------
    def batch_activations(self, k: int) -> int:
        s = self.s
        return int(s.activations * (1.0 - s.activation_spread * self.noise.u(s.channel + 2, k)))

    def allocated_after(self, n: int) -> int:
        """Allocated after n completed steps (n >= 1)."""
        s = self.s
        return (
            s.weights
            + s.gradients
            + s.optimizer_state
            + s.leak_per_step * n
            + int(s.after_noise * self.noise.u(s.channel + 3, n))
        )

    def _gap(self, r: float) -> int:
        s = self.s
        since = max(0.0, r - s.weights_loaded_at)
        return s.gap0 + int(s.gap_growth * (1.0 - math.exp(-since / s.gap_tau)))

    def _reserved_stepping(self, n: int, r: float) -> int:
        """Reserved once steps have begun: an envelope that only grows."""
        s = self.s
        return round_up(
            s.weights
            + s.gradients
            + s.optimizer_state
            + s.activations
            + s.leak_per_step * n
            + s.after_noise
            + self._gap(r)
        )

    def _plan_oom(self, budget: int) -> None:
        """The step during which this process would need more than the budget."""
        s = self.s
        for n in range(1, 10_000_000):
            if s.context + self._reserved_stepping(n, self.clock.end(n + 1)) > budget:
                # fails in step n (its predecessor still fit)
                self.oom_r = self.clock.end(n - 1) + 0.3 * (self.clock.end(n) - self.clock.end(n - 1))
                return

    def _max_used(self) -> int:
        """The most NVML memory this process ever holds."""
        s = self.s
        if self.oom_r is not None:
            return s.context + self._state(self.oom_r)[2]
        return s.context + self._reserved_stepping(0, math.inf)

    def _state(self, r: float) -> tuple[int, int, int, int, int]:
        """(steps done, allocated, reserved, gradients, optimizer state) at run time r."""
        s = self.s
        if r < s.context_s:
            return 0, 0, 0, 0, 0
        if r < s.weights_loaded_at:
            shards = min(s.shards, int((r - s.context_s) / s.shard_s) + 1)
            allocated = s.weights * shards // s.shards
            return 0, allocated, round_up(allocated), 0, 0
        n = self.clock.count(r)
        start, end = self.clock.end(n), self.clock.end(n + 1)
        phase = (r - start) / (end - start)
        act = self.batch_activations(n + 1)
        if phase < 0.45:
            live = int(act * phase / 0.45)
        elif phase < 0.9:
            live = int(act * (0.9 - phase) / 0.45)
        else:
            live = 0
        if n == 0:  # first step: gradients at backward, optimizer state at the step
            grads = s.gradients if phase >= 0.45 else 0
            state = s.optimizer_state if phase >= 0.9 else 0
            allocated = s.weights + grads + state + live
            ramp = min(1.0, phase / 0.45)
            reserved = round_up(s.weights + grads + state + s.activations * ramp + self._gap(r) * ramp)
            return 0, allocated, max(reserved, round_up(allocated)), grads, state
        return (
            n,
            self.allocated_after(n) + live,
            self._reserved_stepping(n, r),
            s.gradients,
            s.optimizer_state,
        )

    def _peak_since(self, r: float, prev_r: float, n: int, allocated: int) -> int:
        """Peak allocated since the previous sample: a forward peak in between, else now."""
        peak = allocated
        for k in (n + 1, n):  # the current step's forward peak, then the previous one's
            if k < 1:
                continue
            start, end = self.clock.end(k - 1), self.clock.end(k)
            at = start + 0.45 * (end - start)
            if prev_r < at <= r:
                peak = max(peak, self.step_peak(k))
        return peak

    def step_peak(self, k: int) -> int:
        s = self.s
        if k <= 1:
            return s.weights + s.gradients + self.batch_activations(1)
        return self.allocated_after(k - 1) + self.batch_activations(k)

    # -- which process, when ---------------------------------------------------
    @property
    def cycle(self) -> float | None:
        """Seconds between the starts of two processes (only for a run that OOMs)."""
        if self.oom_r is None:
            return None
        return self.oom_r + self.LINGER_S + self.restart_after

    def locate(self, t: float) -> tuple[int, float] | None:
        """(cycle index, run time) of the process alive at session time t, or None."""
        since = t - self.first_start
        if since < 0:
            return None
        cycle = self.cycle
        k = 0 if cycle is None else int(since // cycle)
        r = since - (k * cycle if cycle else 0.0)
        if self.oom_r is not None and r > self.oom_r + self.LINGER_S:
            return None
        return k, r

    def pid(self, k: int) -> int:
        return 300 + (self.s.pid - 300 + 7919 * k) % 4_000_000

    def sample(
        self,
        session_start: float,
        t: float,
        prev_t: float,
        gpu_uuid: str | None,
        device_total: int,
        free_for_run: int,
    ) -> tuple[GpuProcess, AgentReport] | None:
        """The process and its agent report at session time t (epoch = session_start + t).

        ``free_for_run`` is the GPU memory left when this process holds
        nothing; it gives the free figure of an OOM event.
        """
        where = self.locate(t)
        if where is None:
            return None
        k, r = where
        s = self.s
        oomed = self.oom_r is not None and r >= self.oom_r
        r_mem = min(r, self.oom_r) if self.oom_r is not None else r
        n, allocated, reserved, grads, state = self._state(r_mem)
        prev_r = r - (t - prev_t)
        used = s.context + reserved
        stepping = r >= s.weights_loaded_at and not oomed
        if stepping:
            sm = max(0, min(100, s.sm + round(self.noise.jitter(s.channel + 4, int(t * 10), 4))))
        else:
            sm = 0 if oomed or r < s.context_s else 3
        start_time = session_start + self.first_start + (k * self.cycle if self.cycle else 0.0)
        info = ProcessInfo(
            pid=self.pid(k),
            start_time=start_time,
            user=s.user,
            name=s.name,
            cmdline=s.cmdline,
            ppid=s.ppid,
            status="running" if stepping else "sleeping",
            parent_alive=True,
        )
        proc = GpuProcess(pid=info.pid, used=used, kinds=("compute",), sm=sm, info=info, has_agent=True)

        gap = reserved - allocated
        if n >= 1 or r_mem >= s.weights_loaded_at:
            inactive = int(self._gap(r_mem) * s.inactive_share)
            inactive = min(inactive, gap)
        else:
            inactive = 0
        retries = 0
        if s.retries_from is not None and r_mem > s.retries_from:
            x = (r_mem - s.retries_from) / s.retries_every
            retries = int(x * (1.0 + x / 90.0))  # accelerates as the room fills up
        weights = min(s.weights, allocated)
        buckets = AgentBuckets(
            weights=weights,
            gradients=grads,
            optimizer_state=state,
            other_allocated=allocated - weights - grads - state,
            cached_free=gap,
            outside_pytorch=used - reserved,
        )
        blocks = 1200 + 2 * int(allocated // (64 * MiB))
        alloc_count = 900 + n * 1850 + (blocks if r_mem >= s.context_s else 0)
        device = AgentDevice(
            device=s.device,
            gpu_uuid=gpu_uuid,
            allocated=allocated,
            reserved=reserved,
            active=allocated,
            inactive_split=inactive,
            requested=allocated - allocated // 400,  # rounding to 512-byte blocks
            peak_allocated=self._peak_since(r_mem, prev_r, n, allocated),
            num_alloc_retries=retries,
            num_ooms=1 if oomed else 0,
            alloc_count=alloc_count,
            free_count=alloc_count - blocks,
            buckets=buckets,
        )

        events = step_events(self, prev_r, r_mem, start_time)
        if self.oom_r is not None and prev_r < self.oom_r <= r:
            events.append(
                oom_event(self, start_time, device_total, free_for_run - used, allocated, reserved, buckets)
            )
        report = AgentReport(
            pid=info.pid,
            start_time=start_time,
            hostname=self.hostname,
            time=session_start + t,
            step=n,
            devices=(device,),
            allocator_settings=dict(s.allocator_settings),
            events=tuple(events),
            phases_measured=1.0 if n else None,  # (slow steps: every one read)
            measured_input={"batch": s.batch, "seq": s.seq} if n else None,
            allocator=demo_allocator.allocator_item(
                session_start + t,
                n,
                s.device,
                allocated,
                reserved,
                inactive,
                expandable=s.allocator_settings.get("expandable_segments") is True,
            )
            if reserved
            else None,
        )
        return proc, report

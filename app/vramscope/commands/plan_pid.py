"""`vramscope plan --pid PID --batch N|Nx [--seq L] [--checkpointing] [--json]`:
what would fit, from what the running process measured (``--batch 2x``: twice
the micro-batch it measured).

Pulls the process's agent once (sources/agents/agent_pull.py), takes its busiest
device, predicts the peak with the change (core/planner/what_if.py) and
judges it against the GPU the process runs on: its capacity, and what is
free now plus what the process itself holds (from NVML; --gpu-memory
instead where given).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

NO_AGENT = 2  # the exit status when the process runs no agent, as for `vramscope sites`
TIMES = ("x", "×")

from vramscope.core.status import json_text


@dataclass(frozen=True)
class Times:
    """``--batch 2x``: a multiple of the micro-batch the process measured."""

    factor: float


def batch_option(text: str) -> int | Times:
    """--batch: a micro-batch ('16') or a multiple of the measured one ('2x', '0.5x')."""
    value = text.strip()
    many = value.endswith(TIMES)
    try:
        number = float(value[:-1]) if many else int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a micro-batch (16) nor a multiple of the measured one (2x)"
        ) from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return Times(number) if many else int(number)


def batch_for(given, measured_batch: int | None) -> int | None:
    """The micro-batch ``--batch`` asks for, given what the process measured."""
    from vramscope.core.planner.errors import PlanError

    if not isinstance(given, Times):
        return given
    if measured_batch is None:
        raise PlanError(
            "batch", "the process has not shown the micro-batch of a training forward yet: give --batch N"
        )
    batch = round(measured_batch * given.factor)
    if batch < 1:
        raise PlanError(
            "batch", f"{given.factor:g}x a micro-batch of {measured_batch} is less than one sample"
        )
    return batch


def change_from_args(args, measured_batch: int | None = None):
    from vramscope.core.planner.what_if import Change

    modules = tuple(
        m.strip() for m in (getattr(args, "checkpoint_modules", None) or "").split(",") if m.strip()
    )
    return Change(
        batch=batch_for(args.batch, measured_batch),
        seq=args.seq,
        checkpointing=bool(args.checkpointing or modules),
        checkpoint_modules=modules,
        bf16=args.precision in ("bf16", "fp16", "mixed"),
        optimizer_8bit=args.optimizer == "adam8bit",
        lora_rank=args.lora_rank,
        hidden=args.hidden,
        flash_attention=args.flash_attention,
    )


def measured_from_pulled(pulled):
    """Measured (core/planner/measured_run.py) of the pulled agent's busiest device."""
    from vramscope.core.planner.errors import PlanError
    from vramscope.core.planner.measured_run import busiest_device, measure

    if not pulled.samples:
        raise PlanError("agent", "the agent has sent no sample yet")
    sample = max(pulled.samples, key=lambda s: s.t)
    dev = busiest_device(sample.devices)
    if dev is None:
        raise PlanError("agent", "the agent has no breakdown yet (no model or optimizer known)")
    name = dev.device
    modules = [m for m in pulled.modules if m.get("device") == name]
    return measure(
        name,
        dev.buckets.as_dict(),
        steps=[s.event_data() for s in pulled.steps[-32:]],
        input_shape=sample.input,
        models=sample.models,
        modules=modules[-1] if modules else None,
        step=sample.step,
    ), dev


def targets_for(pid: int, dev, given):
    """([Target], outside PyTorch or None) from --gpu-memory, else the GPU the process is on."""
    from vramscope.core.planner.what_if import Target

    if given:
        return [Target(name, cap, None) for name, cap in given], None
    from vramscope.sources.all_gpus import AllGpusSource

    source = AllGpusSource()
    try:
        frame = source.sample(time.time())
    finally:
        source.close()
    for gpu in frame.gpus:
        for proc in gpu.processes:
            if proc.pid == pid:
                free = None if gpu.free is None else gpu.free + (proc.used or 0)
                reserved = dev.reserved
                outside = (
                    max(0, proc.used - reserved)
                    if isinstance(reserved, int) and proc.used is not None
                    else None
                )
                return [Target(f"{gpu.label}: {gpu.name}", gpu.total, free, proc.used)], outside
    return [Target(f"{g.label}: {g.name}", g.total, g.free) for g in frame.gpus if g.total], None


def run(args) -> int:
    from dataclasses import replace

    from vramscope.core.planner.errors import PlanError
    from vramscope.core.planner.what_if import predict
    from vramscope.core.planner.what_if_text import render_text
    from vramscope.core.status.terminal_text import say
    from vramscope.sources.agents.agent_pull import pull

    try:
        pulled = pull(args.pid)
    except (OSError, ConnectionError) as exc:
        say(sys.stderr, f"vramscope plan: --pid {args.pid}: {exc}")
        return NO_AGENT
    try:
        measured, dev = measured_from_pulled(pulled)
        targets, outside = targets_for(args.pid, dev, args.gpu_memory)
        if outside is not None:
            measured = replace(measured, outside_pytorch=outside)
        what = predict(measured, change_from_args(args, measured.batch), targets)
    except PlanError as exc:
        say(sys.stderr, f"vramscope plan: {exc.for_cli()}")
        return 2
    if args.json:
        print(json_text.dumps(dict(what.to_json(), pid=args.pid), indent=2))
    else:
        say(sys.stdout, render_text(what), lines=True)
    return 0

"""Words of the agent panel: buckets, phases, the OOM, the allocator settings,
and the header of a process (script, GPU, host, how long it ran). Qt-free."""

from __future__ import annotations

import time

import numpy as np

from vramscope.agent.protocol import BUCKET_MEANING, Phase
from vramscope.core.agent_figures.agent_keys import series_key
from vramscope.core.processes.process_names import short_name
from vramscope.core.detectors.agentmap import slice_for_device
from vramscope.core.samples import BUCKET_LABELS, AgentReport, Frame, bare_uuid
from vramscope.core.units import fmt_bytes, fmt_duration

# (field, label), in stacking order; colours: theme.Scheme.BUCKET_COLOURS
BUCKETS = tuple(BUCKET_LABELS.items())


def bucket_help() -> str:
    """What each bucket counts (the device view's help)."""
    return "\n".join(f"{BUCKET_LABELS[b]}: {BUCKET_MEANING[b]}" for b in BUCKET_MEANING)


PHASES = (  # (phase, words, symbol): the step phases the agent reads (agent/steps/phases.py)
    (Phase.FORWARD, "end of forward (activations held)", "t1"),
    (Phase.BACKWARD, "after backward", "d"),
    (Phase.OPTIMIZER, "after optimizer step", "s"),
    (Phase.EVAL, "end of an evaluation (no_grad)", "o"),
)
PHASE_ABBR = {Phase.FORWARD: "fwd", Phase.BACKWARD: "bwd", Phase.OPTIMIZER: "opt", Phase.EVAL: "eval"}
PHASE_IN = {
    Phase.FORWARD: "in forward",
    Phase.BACKWARD: "in backward",
    Phase.OPTIMIZER: "in the optimizer step",
    Phase.EVAL: "in an evaluation",
}


def peak_title(phase: str, exact: bool) -> str:
    """A bar column at a step's real peak: "peak (bwd)"; "≥ peak (bwd)" where the figure
    is only a lower bound (the allocator's all-time counter did not rise)."""
    return f"{'' if exact else '≥ '}peak ({PHASE_ABBR[phase]})"


def end_title(phase: str) -> str:
    """A bar column at a phase's end reading (no phase peaks known): "fwd end" -- not a peak."""
    return f"{PHASE_ABBR[phase]} end"


def peak_words(peak: float, bound: float | None) -> str:
    """A peak in words: exact, or a lower bound with its upper one."""
    if bound is None:
        return fmt_bytes(peak)
    return (
        f"at least {fmt_bytes(peak)} (at most {fmt_bytes(bound)}: the allocator's all-time peak did not rise)"
    )


def agent_key(report: AgentReport, device: str, metric: str) -> tuple:
    """The store key of one of this report's series (sources/agents/agent_client.py writes them)."""
    return series_key(report.pid, report.start_time, device, metric)


def last_value(values) -> float | None:
    finite = values[np.isfinite(values)] if len(values) else values
    return float(finite[-1]) if len(finite) else None


def phase_text(
    latest: dict[str, float | None],
    loaded: float | None,
    peaks: dict[str, tuple[float, float | None]] | None = None,
    share: float | None = None,
) -> str:
    """The last measured step's phases in words, its real peak and where it was
    (``peaks``: phase -> (peak, upper bound or None: exact)), and the share of steps
    whose phases were read."""
    known = {p: v for p, v in latest.items() if v is not None}
    if not known:
        return ""
    words = {p: w for p, w, _ in PHASES}
    parts = []
    if loaded is not None:
        parts.append(f"after loading {fmt_bytes(loaded)}")
    parts += [f"{words[p]} {fmt_bytes(known[p])}" for p, *_ in PHASES if p in known]
    text = "Phases of the last measured step: " + " · ".join(parts) + ". "
    if peaks:
        top = max(peaks, key=lambda p: peaks[p][0])
        peak, bound = peaks[top]
        text += f"Step peak {PHASE_IN[top]}: {peak_words(peak, bound)}"
    else:
        top = max(known, key=lambda p: known[p])
        rest = [v for p, v in known.items() if p != top]
        text += f"Highest phase end: {words[top]} (the step's peak, within a phase, is not read here)"
        if rest:
            text += f", {fmt_bytes(known[top] - max(rest))} above the next"
    if top == Phase.FORWARD:
        text += " -- activations dominate (checkpointing or a smaller micro-batch lowers it)"
    elif top == Phase.BACKWARD:
        text += (
            " -- gradients made while activations are held (checkpointing or a smaller micro-batch lowers it)"
        )
    elif top == Phase.OPTIMIZER:
        text += " -- optimizer state and its temporaries (8-bit optimizer, foreach=False or ZeRO sharding lowers it)"
    text += "."
    if share is not None:
        text += f" Phases read on {share:.0%} of steps (the rest skipped to keep the agent's cost in budget)."
    return text


def settings_text(settings: dict) -> str:
    if not settings:
        return "allocator settings: not reported"
    backend = settings.get("backend") or "n/a"
    exp = settings.get("expandable_segments")
    exp_txt = "n/a" if exp is None else ("on" if exp else "off")
    split = settings.get("max_split_size")
    split_txt = "unlimited" if split is None else fmt_bytes(split)
    return f"allocator: {backend} · expandable_segments: {exp_txt} · max_split_size: {split_txt}"


def oom_text(event) -> str:
    d = event.data
    when = time.strftime("%H:%M:%S", time.localtime(event.time))
    parts = [f"OOM at {when} on {d.get('device') or 'a CUDA device'}:"]
    asked = d.get("requested")
    parts.append(f"asked {fmt_bytes(asked)}" if asked is not None else "request size not reported")
    if d.get("device_free") is not None:
        parts.append(f"free {fmt_bytes(d.get('device_free'))} of {fmt_bytes(d.get('device_total'))}")
    b = d.get("buckets") or {}
    if b:
        held = ", ".join(
            f"{label} {fmt_bytes(b.get(field))}" for field, label in BUCKETS if b.get(field) is not None
        )
        parts.append("held then: " + held)
    blocks = d.get("largest_blocks") or []
    if blocks:
        parts.append("largest live blocks: " + ", ".join(fmt_bytes(x.get("size")) for x in blocks[:5]))
    if d.get("snapshot_path"):
        parts.append(f"memory_viz snapshot: {d['snapshot_path']}")
    return " · ".join(parts[:1]) + " " + "; ".join(parts[1:])


def script_of(report: AgentReport, frame: Frame | None) -> str | None:
    """What the process runs ('train.py'), from the frame's process list."""
    if frame is None:
        return None
    for _gpu, proc in frame.all_processes():
        if proc.identity == report.identity:
            return short_name(proc.info)
    return None


def gpus_of(report: AgentReport, frame: Frame | None) -> list[str]:
    """Where the process runs, by its devices' UUIDs, else where NVML lists it:
    "GPU 0", or "GPU 0 MIG 3g.40gb" on a MIG slice ("lab2 GPU 0" on another machine)."""
    if frame is None:
        return []
    found: set[tuple[int, str]] = set()
    for dev in report.devices:
        on_slice = slice_for_device(frame, dev)
        if on_slice is not None:
            gpu, mig = on_slice
            found.add((gpu.index, f"{gpu.label} MIG {mig.profile or mig.uuid}"))
            continue
        uuid = bare_uuid(dev.gpu_uuid)
        found |= {(g.index, g.label) for g in frame.gpus if uuid is not None and bare_uuid(g.uuid) == uuid}
    if not found:
        for gpu, proc in frame.all_processes():
            if proc.identity == report.identity:
                mig = gpu.slice_of(proc)
                found.add((gpu.index, gpu.label + (f" MIG {mig.profile}" if mig else "")))
    return [text for _i, text in sorted(found)]


def header_text(report: AgentReport, frame: Frame | None, now: float) -> str:
    """'train.py · PID 4242 · GPU 0 · workstation · step 310 · running 8 min'; an
    ended run says how long it ran and when it was last seen."""
    bits = [script_of(report, frame) or "process", f"PID {report.pid}"]
    gpus = gpus_of(report, frame)
    if gpus:
        bits.append(", ".join(gpus))
    if report.rank is not None:
        bits.append(f"rank {report.rank}/{report.world_size}" if report.world_size else f"rank {report.rank}")
    if report.hostname:
        bits.append(report.hostname)
    bits.append(f"step {report.step}" if report.step is not None else "no steps yet")
    last = report.time if report.time is not None else now
    if report.connected:
        if report.start_time:
            bits.append(f"running {fmt_duration(now - report.start_time)}")
        return " · ".join(bits)
    ran = f"ran {fmt_duration(last - report.start_time)}, " if report.start_time else ""
    seen = time.strftime("%H:%M", time.localtime(last))
    why = f" ({report.problem})" if report.problem else ""
    return " · ".join(bits) + f" — ended: {ran}last seen {seen}{why}"

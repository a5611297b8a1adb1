"""Near-OOM and OOM.

"Surviving GPU OOM": the OOM message reports only the allocation that failed
last, "almost never the culprit"; the one correct first step is the
breakdown of what uses how much, and the fix follows from it, in order of
least damage. Near-OOM: free memory under a threshold, or the trend of used
memory reaching capacity within a horizon. OOM: the agent's observer fired;
shown as critical with the breakdown at that instant.

The trend is the sum of the growing processes' trends (growth.py: each the
robust slope of its current regime), so an ended warm-up ramp stops projecting
within a minute of flattening and a job starting is a step, not a trend. Inference
servers' preallocated pools are left out (a server at
--gpu-memory-utilization 0.95 leaves little free by design). The alert names
the growing process(es), else the largest, and its fix fits that process:
under the agent, an inference server, a notebook, or a plain script.
"""

from __future__ import annotations

from vramscope.agent.oom.oom_fixes import covering
from vramscope.agent.protocol import EventKind
from vramscope.core.agent_figures import oom_context
from vramscope.core.detectors.advice import (
    batch_text,
    cache_leads,
    fixed_cost_text,
    growing_server_fix,
    serves_requests,
)
from vramscope.core.detectors.agentmap import cuda_devices, gpu_for_device
from vramscope.core.detectors.alert import CRITICAL, WARNING, Alert, AlertKind
from vramscope.core.detectors.growth import GrowthRule, rate_text
from vramscope.core.detectors.naming import (
    AGENT,
    KERNEL,
    SERVER,
    TRAINING,
    process_kind,
    process_name,
)
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.processes.process_names import process_label
from vramscope.core.samples import ALL_BUCKETS, BUCKET_LABELS, BUCKET_NAMES, Frame, GpuSample
from vramscope.core.processes.servers import server_of
from vramscope.core.units import fmt_bytes, fmt_duration


GENERIC_ORDER = (
    "Get the breakdown first (run the script under `vramscope run -- python train.py` for "
    "PyTorch's buckets). Then, in order of least damage: if activations dominate, gradient "
    "checkpointing, then a smaller micro-batch with gradient accumulation; if the fixed cost "
    "(weights, gradients, optimizer state) does, an 8-bit optimizer, then ZeRO/FSDP sharding, "
    "then LoRA; if reserved and allocated have drifted apart, "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. Also check the card for squatters."
)


def breakdown_lines(buckets: dict | None) -> list[str]:
    if not buckets:
        return []
    parts = [
        f"{BUCKET_LABELS[n]} {fmt_bytes(buckets.get(n))}" for n in ALL_BUCKETS if buckets.get(n) is not None
    ]
    return [", ".join(parts)] if parts else []


UNDER_AGENT_ORDER = (
    "Look at its buckets in the agent panel, then, in order of least damage: if activations "
    "dominate, gradient checkpointing, then a smaller micro-batch with gradient accumulation; "
    "if the fixed cost (weights, gradients, optimizer state) does, an 8-bit optimizer, then "
    "ZeRO/FSDP sharding, then LoRA; if reserved and allocated have drifted apart, "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
)


MAX_FIXES_NAMED = 3  # covering fixes an OOM alert names (the post-mortem has them all)


def decision_order(buckets: dict | None, under_agent: bool = False, cmdline=None) -> str:
    """The usual remedies in order of least damage (advice.py), pointed at the bucket
    that dominates and at the process's own batch-size option."""
    batch = batch_text(cmdline)
    if not buckets or all(buckets.get(n) is None for n in BUCKET_NAMES):
        base = UNDER_AGENT_ORDER if under_agent else GENERIC_ORDER
        return f"{batch} {base}" if batch else base
    w = buckets.get("weights") or 0
    g = buckets.get("gradients") or 0
    o = buckets.get("optimizer_state") or 0
    act = buckets.get("other_allocated") or 0
    fixed = w + g + o
    tips = []
    lead = cache_leads(buckets)
    if lead:
        tips.append(lead)
    if g == 0 and o == 0 and w > 0:  # inference: no gradients, no optimizer state
        tips.append(
            f"No gradients or optimizer state: this is inference. Weights are {fmt_bytes(w)}; "
            "what else fills the card is usually the KV cache: cap the context "
            "(--max-model-len) and concurrent sequences (--max-num-seqs), or an fp8 KV cache; "
            "if loading alone fills it, change weight precision (INT8/INT4) or model size."
        )
    elif fixed >= act:
        tips.append(fixed_cost_text(w, g, o))
    else:
        tips.append(
            f"Activations dominate ({fmt_bytes(act)}, the only bucket that moves): "
            + (batch + " Then " if batch else "")
            + "gradient checkpointing"
            + (
                ""
                if batch
                else ", then a smaller micro-batch with gradient accumulation "
                "(divide the loss by the accumulation steps)"
            )
            + "."
        )
    cache = buckets.get("cached_free") or 0
    reserved = fixed + act + cache
    if not lead and reserved and cache >= 0.25 * reserved:
        tips.append(
            f"Reserved and allocated have drifted apart ({fmt_bytes(cache)} cached but "
            "free): set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
        )
    return " ".join(tips)


def server_bytes(frame: Frame, gpu: GpuSample) -> int:
    """What inference servers' preallocated pools hold on this GPU."""
    return sum(p.used or 0 for p in gpu.processes if server_of(frame, p) is not None)


def fix_for(kind: str, buckets: dict | None, frame: Frame, gpu: GpuSample, proc) -> str:
    """The near-OOM fix for the process that fills the card, in its own terms."""
    info = proc.info if proc is not None else None
    cmdline = info.cmdline if info is not None else None
    if kind == SERVER:
        found = server_of(frame, proc)
        hint = found[0].shrink_hint if found else "give its pool a smaller fraction of the card"
        return (
            f"{process_label(proc)} is an inference server: its pool is sized at start-up, "
            f"so to make room {hint}. Also check the card for squatters."
        )
    if kind == KERNEL:
        return (
            "It is a Jupyter kernel: `del` the tensors you no longer need and call "
            "torch.cuda.empty_cache() in the notebook, or restart the kernel. " + decision_order(buckets)
        )
    if kind == TRAINING and serves_requests(info):
        return growing_server_fix(info)
    return decision_order(buckets, under_agent=(kind == AGENT), cmdline=cmdline)


class NearOomRule:
    def __init__(self, growth: GrowthRule | None = None):
        self._growth = growth
        self._ooms: dict = {}  # (identity, device) -> Alert

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        alerts = []
        for gpu in frame.gpus:
            if gpu.error:
                continue
            alert = self._near(frame, gpu, settings)
            if alert is not None:
                alerts.append(alert)
        for report in frame.agents:
            for ev in report.events:
                if ev.kind == EventKind.OOM:
                    alert = self._oom_alert(frame, report, ev)
                    self._ooms[alert.key] = alert
        keep = settings.event_keep_minutes * 60
        for key in [k for k, a in self._ooms.items() if a.since < now - keep]:
            del self._ooms[key]
        alerts.extend(self._ooms.values())
        return alerts

    def _near(self, frame, gpu, settings) -> Alert | None:
        if gpu.total is None or gpu.used is None:
            return None
        free = gpu.free if gpu.free is not None else gpu.total - gpu.used
        pools = server_bytes(frame, gpu)
        # a server's pool leaves little free on purpose: low free alone is no alarm then
        low = free < settings.near_oom_free_bytes and free + pools < settings.near_oom_free_bytes
        # the trend is the sum of the growing processes' (growth.py): a job starting or
        # ending is a step, not a trend, and a server's pool is by design
        growers = sorted(
            (
                g
                for g in (self._growth.growing if self._growth else ())
                if g.gpu == gpu.index and g.kind != SERVER
            ),
            key=lambda g: -g.trend.slope,
        )
        slope = sum(g.trend.slope for g in growers) or None
        eta = max(0.0, free / slope) if slope else None
        if eta is not None and eta > settings.near_oom_horizon_minutes * 60:
            eta = None
        if not low and eta is None:
            return None
        evidence = [
            f"{gpu.label}: {fmt_bytes(gpu.used)} used of {fmt_bytes(gpu.total)}, {fmt_bytes(free)} free"
        ]
        if pools:
            evidence.append(
                f"inference servers' preallocated pools: {fmt_bytes(pools)} "
                "(by design; left out of the trend)"
            )
        if eta is not None:
            evidence.append(
                f"its growing processes add {rate_text(slope)} together: full in about {fmt_duration(eta)}"
            )
        for g in growers:
            evidence.append(
                f"growing: {process_label(g.proc)} {rate_text(g.trend.slope)} "
                f"for {fmt_duration(g.trend.span)} (robust trend of its current regime)"
            )
        top = sorted((p for p in gpu.processes if p.used), key=lambda p: -p.used)[:3]
        if top:
            evidence.append("largest: " + ", ".join(f"{process_label(p)} {fmt_bytes(p.used)}" for p in top))
        # what filled it: the growing process, else the one that rose by a step lately
        # (a batch that got bigger, a model loaded), and the largest only when none did
        trending = {g.proc.pid for g in growers}  # already named as growing
        risers = sorted(
            (
                r
                for r in (self._growth.risen if self._growth else ())
                if r.gpu == gpu.index and r.proc.pid not in trending and server_of(frame, r.proc) is None
            ),
            key=lambda r: -r.rise,
        )
        for r in risers[:3]:
            evidence.append(
                f"rose: {process_label(r.proc)} +{fmt_bytes(r.rise)} in the last "
                f"{fmt_duration(frame.time - r.since)}"
            )
        riser = risers[0] if risers and not growers else None
        culprit = growers[0].proc if growers else (riser.proc if riser else (top[0] if top else None))
        kind = process_kind(frame, culprit) if culprit is not None else TRAINING
        buckets = None
        for report in frame.agents:
            for dev in cuda_devices(report):
                g = gpu_for_device(frame, report, dev)
                if g is not None and g.index == gpu.index and dev.buckets is not None:
                    b = dev.buckets.as_dict()
                    b["outside_pytorch"] = dev.buckets.outside_pytorch
                    if culprit is None or report.pid == culprit.pid:
                        buckets = b
                    evidence.extend(
                        f"{process_name(frame, report.pid, g)}: {line}" for line in breakdown_lines(b)
                    )
        what = (
            f"only {fmt_bytes(free)} free"
            if low
            else f"full in about {fmt_duration(eta)} at the current trend"
        )
        if growers:
            what += "; growing: " + ", ".join(
                f"{process_label(g.proc)} ({rate_text(g.trend.slope)})" for g in growers[:3]
            )
        elif riser is not None:
            what += (
                f"; grew: {process_label(riser.proc)} (+{fmt_bytes(riser.rise)} in "
                f"{fmt_duration(frame.time - riser.since)})"
            )
        elif culprit is not None:
            what += f"; largest: {process_label(culprit)} ({fmt_bytes(culprit.used)})"
        critical = free < settings.near_oom_critical_free_bytes or (
            eta is not None and eta <= settings.near_oom_critical_minutes * 60
        )
        return Alert(
            kind=AlertKind.NEAR_OOM,
            severity=CRITICAL if critical else WARNING,
            gpu=gpu.index,
            pid=None,
            start_time=None,
            since=None,
            message=f"{gpu.label} near out of memory: {what}",
            evidence=tuple(evidence),
            fix=fix_for(kind, buckets, frame, gpu, culprit),
            data={
                "free": free,
                "eta_seconds": eta,
                "slope_bytes_per_s": slope,
                "growing_pids": [g.proc.pid for g in growers],
                "culprit_pid": culprit.pid if culprit is not None else None,
                "culprit_kind": kind if culprit is not None else None,
            },
        )

    def _oom_alert(self, frame, report, ev) -> Alert:
        d = ev.data
        requested = d.get("requested")
        total = d.get("total", d.get("device_total"))
        free = d.get("free", d.get("device_free"))
        buckets = d.get("buckets") if isinstance(d.get("buckets"), dict) else None
        device = d.get("device")
        dev = None
        for candidate in cuda_devices(report):
            if device is None or candidate.device == device:
                dev = candidate
                break
        gpu = gpu_for_device(frame, report, dev if dev is not None else device)
        evidence = [
            f"a {fmt_bytes(requested)} allocation failed"
            + (f" with {fmt_bytes(free)} free of {fmt_bytes(total)}" if total is not None else "")
            + " -- that names only the last allocation"
        ]
        lines = breakdown_lines(buckets)
        evidence.extend("at that instant: " + line for line in lines)
        if d.get("allocated") is not None and d.get("reserved") is not None:
            evidence.append(f"allocated {fmt_bytes(d['allocated'])}, reserved {fmt_bytes(d['reserved'])}")
        blocks = _block_sizes(d.get("blocks"))
        if blocks:
            evidence.append("largest live blocks: " + ", ".join(fmt_bytes(b) for b in blocks[:5]))
        fix = (
            (_covering_fixes(d, report, device) or decision_order(buckets))
            + " Surviving step 1 proves nothing with variable-length "
            "data: run one dummy step at the maximum sequence length first."
        )
        return Alert(
            kind=AlertKind.OOM,
            severity=CRITICAL,
            gpu=gpu.index if gpu is not None else None,
            pid=report.pid,
            start_time=report.start_time,
            since=ev.time,
            message=(
                f"{process_name(frame, report.pid, gpu, device)}: CUDA out of memory (a "
                f"{fmt_bytes(requested)} allocation failed; the culprit is what was already "
                "there)"
            ),
            evidence=tuple(evidence),
            fix=fix,
            device=device,
            data={
                "requested": requested,
                "total": total,
                "free": free,
                "buckets": buckets,
                "message": d.get("message"),
            },
        )


def _covering_fixes(data: dict, report, device) -> str:
    """The post-mortem's fixes that cover the shortfall (agent/oom/oom_report.py), least
    damaging first -- the alert and the report name the same first fix; "" when the
    event says too little to know the shortfall, or nothing covers it (then the usual
    order, from the bucket that dominates)."""
    postmortem = oom_context.report_of(data, oom_context.module_dicts(report.modules, device))
    fixes = covering(postmortem["fixes"])
    if not fixes:
        return ""
    named = "; ".join(f"{f['fix']} (recovers {fmt_bytes(f['recovers'])})" for f in fixes[:MAX_FIXES_NAMED])
    return (
        f"Fixes that cover the {fmt_bytes(postmortem['shortfall'])} shortfall, least damaging "
        f"first: {named}. The OOM post-mortem lists every fix by what it recovers."
    )


def _block_sizes(blocks) -> list[int]:
    out = []
    for b in blocks or ():
        size = b.get("size") if isinstance(b, dict) else b
        if isinstance(size, (int, float)):
            out.append(int(size))
    return sorted(out, reverse=True)

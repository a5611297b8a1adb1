"""Near-OOM and OOM.

"Surviving GPU OOM": the OOM message reports only the allocation that failed
last, "almost never the culprit"; the one correct first step is the
breakdown of what uses how much, and the fix follows from it, in order of
least damage. Near-OOM: free memory under a threshold, or the trend of used
memory reaching capacity within a horizon. OOM: the agent's observer fired;
shown as critical with the breakdown at that instant.
"""

from __future__ import annotations

from collections import deque

from vramscope.core.detectors.agentmap import cuda_devices, gpu_for_device
from vramscope.core.detectors.alert import CRITICAL, WARNING, Alert
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.detectors.trend import robust_level, theil_sen
from vramscope.core.samples import BUCKET_NAMES, Frame
from vramscope.core.units import fmt_bytes, fmt_duration

BUCKET_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "other_allocated": "activations + temporaries",
    "cached_free": "cached but free (reserved - allocated)",
    "outside_pytorch": "outside PyTorch (CUDA context, other libraries)",
}

GENERIC_ORDER = (
    "Get the breakdown first (run the script under `vramscope run -- python train.py` for "
    "PyTorch's buckets). Then, in order of least damage: if activations dominate, gradient "
    "checkpointing, then a smaller micro-batch with gradient accumulation; if the fixed cost "
    "(weights, gradients, optimizer state) does, an 8-bit optimizer, then ZeRO/FSDP sharding, "
    "then LoRA; if reserved and allocated have drifted apart, "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. Also check the card for squatters.")


def breakdown_lines(buckets: dict | None) -> list[str]:
    if not buckets:
        return []
    parts = [f"{BUCKET_LABELS.get(n, n)} {fmt_bytes(buckets.get(n))}"
             for n in (*BUCKET_NAMES, "outside_pytorch") if buckets.get(n) is not None]
    return [", ".join(parts)] if parts else []


def decision_order(buckets: dict | None) -> str:
    """The usual remedies in order of least damage (smaller batch, activation
    checkpointing, mixed precision, sharded optimizer state -- ZeRO, Rajbhandari
    et al. 2020), pointed at the bucket that dominates."""
    if not buckets or all(buckets.get(n) is None for n in BUCKET_NAMES):
        return GENERIC_ORDER
    w = buckets.get("weights") or 0
    g = buckets.get("gradients") or 0
    o = buckets.get("optimizer_state") or 0
    act = buckets.get("other_allocated") or 0
    cache = buckets.get("cached_free") or 0
    fixed = w + g + o
    tips = []
    if g == 0 and o == 0 and w > 0:  # inference: no gradients, no optimizer state
        tips.append(
            f"No gradients or optimizer state: this is inference. Weights are {fmt_bytes(w)}; "
            "what else fills the card is usually the KV cache: cap the context "
            "(--max-model-len) and concurrent sequences (--max-num-seqs), or an fp8 KV cache; "
            "if loading alone fills it, change weight precision (INT8/INT4) or model size.")
    elif fixed >= act:
        tips.append(
            f"The fixed cost dominates (weights + gradients + optimizer state = {fmt_bytes(fixed)}; "
            "a smaller batch frees none of it): try an 8-bit optimizer first, then ZeRO/FSDP "
            "sharding, then LoRA. Plain DDP saves no memory.")
    else:
        tips.append(
            f"Activations dominate ({fmt_bytes(act)}, the only bucket that moves): gradient "
            "checkpointing first, then a smaller micro-batch with gradient accumulation "
            "(divide the loss by the accumulation steps).")
    reserved = fixed + act + cache
    if reserved and cache >= 0.25 * reserved:
        tips.append(f"Reserved and allocated have drifted apart ({fmt_bytes(cache)} cached but "
                    "free): set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.")
    return " ".join(tips)


class NearOomRule:
    def __init__(self):
        self._used: dict[int, deque] = {}
        self._ooms: dict = {}  # (identity, device) -> Alert

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        alerts = []
        for gpu in frame.gpus:
            hist = self._used.setdefault(gpu.index, deque())
            if gpu.used is not None and not gpu.error:
                hist.append((now, gpu.used))
            while hist and hist[0][0] < now - settings.near_oom_trend_minutes * 60:
                hist.popleft()
            alert = self._near(frame, gpu, hist, now, settings)
            if alert is not None:
                alerts.append(alert)
        for report in frame.agents:
            for ev in report.events:
                if ev.kind == "oom":
                    alert = self._oom_alert(frame, report, ev)
                    self._ooms[alert.key] = alert
        keep = settings.event_keep_minutes * 60
        for key in [k for k, a in self._ooms.items() if a.since < now - keep]:
            del self._ooms[key]
        alerts.extend(self._ooms.values())
        return alerts

    def _near(self, frame, gpu, hist, now, settings) -> Alert | None:
        if gpu.total is None or gpu.used is None:
            return None
        free = gpu.free if gpu.free is not None else gpu.total - gpu.used
        low = free < settings.near_oom_free_bytes
        eta = slope = None
        window = settings.near_oom_trend_minutes * 60
        if len(hist) >= settings.near_oom_min_points and hist[-1][0] - hist[0][0] >= 0.8 * window:
            ts = [t for t, _ in hist]
            us = [u for _, u in hist]
            slope, agreement = theil_sen(ts, us)
            if slope and slope > 0 and agreement >= 0.6:
                level = robust_level(ts, us, slope)
                eta = max(0.0, (gpu.total - level) / slope)
                if eta > settings.near_oom_horizon_minutes * 60:
                    eta = None
        if not low and eta is None:
            return None
        evidence = [f"{gpu.label}: {fmt_bytes(gpu.used)} used of {fmt_bytes(gpu.total)}, "
                    f"{fmt_bytes(free)} free"]
        if eta is not None:
            evidence.append(f"used grows {fmt_bytes(slope * 60)}/min (robust trend over "
                            f"{fmt_duration(hist[-1][0] - hist[0][0])}): full in about "
                            f"{fmt_duration(eta)}")
        top = sorted((p for p in gpu.processes if p.used), key=lambda p: -p.used)[:3]
        if top:
            evidence.append("largest: " + ", ".join(
                f"pid {p.pid} {fmt_bytes(p.used)}" for p in top))
        buckets = None
        for report in frame.agents:
            for dev in cuda_devices(report):
                g = gpu_for_device(frame, report, dev)
                if g is not None and g.index == gpu.index and dev.buckets is not None:
                    b = dev.buckets.as_dict()
                    b["outside_pytorch"] = dev.buckets.outside_pytorch
                    if buckets is None or sum(v or 0 for v in b.values()) > sum(v or 0 for v in buckets.values()):
                        buckets = b
                    evidence.extend(f"pid {report.pid} {dev.device}: {line}"
                                    for line in breakdown_lines(b))
        what = (f"only {fmt_bytes(free)} free" if low else
                f"full in about {fmt_duration(eta)} at the current trend")
        return Alert(
            kind="near_oom", severity=WARNING, gpu=gpu.index, pid=None, start_time=None,
            since=None, message=f"{gpu.label} near out of memory: {what}",
            evidence=tuple(evidence), fix=decision_order(buckets),
            data={"free": free, "eta_seconds": eta, "slope_bytes_per_s": slope},
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
        evidence = [f"a {fmt_bytes(requested)} allocation failed"
                    + (f" with {fmt_bytes(free)} free of {fmt_bytes(total)}" if total is not None else "")
                    + " -- that names only the last allocation"]
        lines = breakdown_lines(buckets)
        evidence.extend("at that instant: " + line for line in lines)
        if d.get("allocated") is not None and d.get("reserved") is not None:
            evidence.append(f"allocated {fmt_bytes(d['allocated'])}, reserved {fmt_bytes(d['reserved'])}")
        blocks = _block_sizes(d.get("blocks"))
        if blocks:
            evidence.append("largest live blocks: " + ", ".join(fmt_bytes(b) for b in blocks[:5]))
        fix = (decision_order(buckets) + " Surviving step 1 proves nothing with variable-length "
               "data: run one dummy step at the maximum sequence length first.")
        return Alert(
            kind="oom", severity=CRITICAL,
            gpu=gpu.index if gpu is not None else None, pid=report.pid,
            start_time=report.start_time, since=ev.time,
            message=(f"pid {report.pid} {device or ''}: CUDA out of memory (a {fmt_bytes(requested)} "
                     "allocation failed; the culprit is what was already there)"),
            evidence=tuple(evidence), fix=fix, device=device,
            data={"requested": requested, "total": total, "free": free, "buckets": buckets,
                  "message": d.get("message")},
        )


def _block_sizes(blocks) -> list[int]:
    out = []
    for b in blocks or ():
        size = b.get("size") if isinstance(b, dict) else b
        if isinstance(size, (int, float)):
            out.append(int(size))
    return sorted(out, reverse=True)

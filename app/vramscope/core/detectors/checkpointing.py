"""Checkpointing that does nothing: gradient checkpointing on with use_cache true.

Hugging Face transformers: gradient checkpointing and the KV cache do not go
together ("`use_cache=True` is incompatible with gradient checkpointing", the
warning its models print; huggingface.co/docs/transformers/perf_train_gpu_one),
so after model.gradient_checkpointing_enable() set model.config.use_cache =
False -- otherwise memory may not drop as expected. The agent reports it as a "checkpointing_use_cache" event.
"""

from __future__ import annotations

from vramscope.agent.protocol import EventKind
from vramscope.core.detectors.agentmap import device_named, gpu_for_device
from vramscope.core.detectors.alert import WARNING, Alert, AlertKind
from vramscope.core.detectors.naming import process_name
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.samples import Frame

CHECKPOINTING_FIX = (
    "Set model.config.use_cache = False after model.gradient_checkpointing_enable(). "
    "use_cache=True (the generation KV cache) is incompatible with checkpointing: it warns, "
    "carries on, and memory does not drop."
)


class CheckpointingRule:
    def __init__(self):
        self._seen: dict = {}  # identity -> (first time, data, last seen)

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        alerts = []
        for report in frame.agents:
            for ev in report.events:
                if ev.kind == EventKind.CHECKPOINTING_USE_CACHE:
                    first = self._seen.get(report.identity, (ev.time, None, now))[0]
                    self._seen[report.identity] = (first, dict(ev.data), now)
            entry = self._seen.get(report.identity)
            if entry is None:
                continue
            self._seen[report.identity] = (entry[0], entry[1], now)
            if not report.connected:
                continue
            data = entry[1] or {}
            model = data.get("model") or "a registered Hugging Face model"
            dev = device_named(report, data.get("device"))
            gpu = gpu_for_device(frame, report, dev)
            alerts.append(
                Alert(
                    kind=AlertKind.CHECKPOINTING_USE_CACHE,
                    severity=WARNING,
                    gpu=gpu.index if gpu is not None else None,
                    pid=report.pid,
                    start_time=report.start_time,
                    since=entry[0],
                    message=f"{process_name(frame, report.pid, gpu, dev.device if dev else None)}: gradient checkpointing is on but use_cache is true "
                    f"({model}) -- it saves nothing",
                    evidence=(f"{model}: gradient checkpointing enabled and config.use_cache = True",),
                    fix=CHECKPOINTING_FIX,
                    device=dev.device if dev is not None else None,
                    data={"model": data.get("model")},
                )
            )
        forget_stale(self._seen, now, settings, last_seen=lambda v: v[2])
        return alerts

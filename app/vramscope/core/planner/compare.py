"""Planned vs measured: a plan's buckets beside what the agent measured.

The agent measures per device: weights, gradients, optimizer_state (every
tensor in optimizer.state, so the fp32 master copy when an optimizer keeps
one), other_allocated (activations + temporaries), cached_free, and
outside_pytorch. The plan's buckets map onto those rows. On a CPU run the
host is the device, so the plan's host-RAM parts (PyTorch's Adam step
counters, offloaded state) count there too. "No data" stays None.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramscope.core.planner.plan import Plan


@dataclass(frozen=True, slots=True)
class CompareRow:
    label: str
    planned: int | None
    measured: int | None

    @property
    def difference(self) -> int | None:
        if self.planned is None or self.measured is None:
            return None
        return self.measured - self.planned


def measured_devices(report) -> tuple[str, ...]:
    """Devices of an AgentReport with buckets: GPUs first; the CPU only when alone."""
    devices = [d for d in getattr(report, "devices", ()) if d.buckets is not None]
    gpus = tuple(d.device for d in devices if not d.device.startswith("cpu"))
    return gpus or tuple(d.device for d in devices)


def compare(plan: Plan, report, device: str | None = None) -> tuple[CompareRow, ...]:
    """Rows of (label, planned bytes, measured bytes) for one device of the report."""
    devices = {d.device: d for d in getattr(report, "devices", ())}
    if device is None:
        names = measured_devices(report)
        device = names[0] if names else None
    dev = devices.get(device) if device is not None else None
    b = dev.buckets if dev is not None else None
    planned = plan.bucket_dict()
    host = dict(plan.host_buckets) if (device or "").startswith("cpu") else {}

    def plan_sum(*names: str) -> int | None:
        values = [planned[n] for n in names if n in planned] + [host[n] for n in names if n in host]
        return sum(values) if values else None

    def got(name: str) -> int | None:
        return getattr(b, name, None) if b is not None else None

    opt_label = "optimizer state" + (" (incl. fp32 master)" if "master_weights" in planned else "")
    moving = "kv_cache" if plan.mode == "infer" else "activations"
    rows = [
        CompareRow("weights", plan_sum("weights", "quantization_metadata"), got("weights")),
        # serving plans no gradients and no optimizer state: 0, not unknown
        CompareRow("gradients", plan_sum("gradients") if plan.mode == "train" else 0,
                   got("gradients")),
        CompareRow(opt_label, plan_sum("master_weights", "optimizer_state")
                   if plan.mode == "train" else 0, got("optimizer_state")),
        CompareRow("activations + temporaries" if moving == "activations"
                   else "KV cache + temporaries", plan_sum(moving), got("other_allocated")),
        CompareRow("cache / fragmentation", None, got("cached_free")),
        CompareRow("outside PyTorch (CUDA context...)", None, got("outside_pytorch")),
        CompareRow("allocated", plan.per_gpu_total + sum(host.values()),
                   dev.allocated if dev is not None else None),
    ]
    return tuple(rows)

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
    why: str = ""  # what makes the two differ, in words

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


def _why(name: str, planned: int | None, measured: int | None) -> str:
    if planned is None:
        return WHY_UNPLANNED.get(name, "not planned")
    if measured is None:
        return "the agent has not measured it yet"
    if planned == measured:
        return "the arithmetic and the allocator agree to the byte"
    return WHY.get(name, "")


# Why a measured bucket differs from its plan, bucket by bucket.
WHY = {
    "weights": "tensors the plan does not know (buffers, a second copy) or a different dtype than planned",
    "gradients": "gradients exist only between backward and zero_grad(set_to_none=True); a "
    "sample outside that window sees fewer",
    "optimizer": "optimizer state is created at the first step; before it there is none",
    "activations": "what is alive at the sampled instant: the plan is the peak of a "
    "micro-batch's saved activations (Korthikanti et al.), the sample may fall "
    "between steps or inside one",
    "allocated": "the sum of the rows above at the sampled instant",
    "peak": "the most the allocator held at once since attach: temporaries (matmul "
    "workspaces, the loss, communication buffers) come on top of the plan",
}
WHY_UNPLANNED = {
    "activations": "not planned: give the micro-batch and sequence length (training) or the "
    "context (serving) to plan it",
    "cache": "not planned: blocks PyTorch's caching allocator keeps reserved but free "
    "(PyTorch CUDA semantics, memory management)",
    "outside": "not planned: the CUDA context and memory outside PyTorch's allocator",
}


def compare(plan: Plan, report, device: str | None = None, peak: int | None = None) -> tuple[CompareRow, ...]:
    """Rows of (label, planned bytes, measured bytes, why) for one device of the report;
    ``peak`` is the most allocated the monitor has seen on that device."""
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
    planned_total = plan.per_gpu_total + sum(host.values())
    rows = [
        ("weights", "weights", plan_sum("weights", "quantization_metadata"), got("weights")),
        # serving plans no gradients and no optimizer state: 0, not unknown
        ("gradients", "gradients", plan_sum("gradients") if plan.mode == "train" else 0, got("gradients")),
        (
            "optimizer",
            opt_label,
            plan_sum("master_weights", "optimizer_state") if plan.mode == "train" else 0,
            got("optimizer_state"),
        ),
        (
            "activations",
            "activations + temporaries" if moving == "activations" else "KV cache + temporaries",
            plan_sum(moving),
            got("other_allocated"),
        ),
        ("cache", "cache / fragmentation", None, got("cached_free")),
        ("outside", "outside PyTorch (CUDA context...)", None, got("outside_pytorch")),
        ("allocated", "allocated", planned_total, dev.allocated if dev is not None else None),
        ("peak", "peak allocated (since attached)", planned_total, peak),
    ]
    return tuple(CompareRow(label, p, m, _why(key, p, m)) for key, label, p, m in rows)

"""What the agent's ring holds, built from raw figures (no tensors are read here).

The hooks on the training thread only append raw readings (agent/steps/steps.py,
agent/steps/phases.py); the agent thread turns them into step items here. A sample
item joins the allocator's figures and the tensor buckets measured at the
same instant (agent/measurer.py) into the five buckets per device.
"""

from __future__ import annotations

from vramscope.agent.tensors.buckets import GRADIENTS_UNKNOWN, NOT_ALLOCATOR, NOTHING_REGISTERED, full_buckets
from vramscope.agent.steps.phases import START
from vramscope.agent.protocol import PHASES, TENSOR_BUCKETS, Phase, SampleItem, StepItem
from vramscope.agent.allocator.peak_window import current_of, merge_peaks


def fold_phases(
    seen: list, name=str, wall_offset: float = 0.0
) -> tuple[dict | None, list[str], dict[str, float]]:
    """A step's raw phase readings [(phase, time, {device index: bytes or (bytes, the
    all-time peak)})] (``wall_offset`` turns their clock into wall time; a first START
    entry is the previous step's last reading) ->
    (device -> phase -> the highest reading of the step, or None where not
    measured; the phases in the order first seen; phase -> time of its last
    reading). Nothing read: (None, [], {})."""
    per: dict[str, dict[str, int]] = {}
    order: list[str] = []
    times: dict[str, float] = {}
    for phase, t, values in seen:
        if phase == START:
            continue
        for index, value in values.items():
            if value is None:
                continue
            value = current_of(value)
            d = per.get(index)
            if d is None:
                d = per[index] = {}
            if value >= d.get(phase, -1):
                d[phase] = value
        if phase not in order:
            order.append(phase)
        times[phase] = t + wall_offset
    if not per:
        return None, [], {}
    # (the training phases always, None where not read; an evaluation only where there was one)
    return (
        {name(i): {p: v.get(p) for p in PHASES if p is not Phase.EVAL or p in v} for i, v in per.items()},
        order,
        times,
    )


def phase_peaks(seen: list, name=str) -> dict | None:
    """Each phase's peak: the highest allocated between the reading before it and its
    own -- exact where the all-time counter rose in between, else at least the higher
    of the two readings and at most the counter. -> device -> phase -> [peak, upper
    bound or None: exact]; None where the provider gives no all-time peak."""
    out: dict = {}
    prev: dict = {}
    for phase, _t, values in seen:
        for index, value in values.items():
            if type(value) is not tuple:
                continue
            cur, top = value
            before = prev.get(index)
            prev[index] = value
            if phase == START:
                continue
            if before is None:  # nothing read since the last measured step: the counter bounds it
                stretch = (cur, top if top > cur else None)
            elif top > before[1]:  # the counter rose in this stretch: its peak, exactly
                stretch = (top, None)
            else:  # at least either end (and the counter after a user's reset), at most the counter
                low = max(cur, before[0], top if top < before[1] else cur)
                stretch = (low, before[1] if before[1] > low else None)
            d = out.setdefault(name(index), {})
            d[phase] = list(merge_peaks(tuple(d[phase]) if phase in d else None, *stretch))
    return out or None


def step_devices(stats, name=str) -> dict | None:
    """(allocated right after the step per device index, the rate-limited full read or
    None) -> device name -> {allocated_after, peak_allocated}."""
    if not stats:
        return None
    after, full = stats
    full = full or {}
    out = {}
    for index, value in (after or {}).items():
        device = name(index)
        value = current_of(value)
        out[device] = {
            "allocated_after": value,
            "peak_allocated": (full.get(device) or {}).get("peak_allocated"),
        }
    for name, fields in full.items():
        out.setdefault(
            name, {"allocated_after": fields.get("allocated"), "peak_allocated": fields.get("peak_allocated")}
        )
    return out or None


def step_item(record: tuple, name=str) -> StepItem:
    """A StepTracker record -> the ring's step item (``name``: device index -> name)."""
    count, t, duration, source, stats, seen, clock = record
    item = {
        "t": t,
        "step": count,
        "duration": duration,
        "source": source,
        "devices": step_devices(stats, name),
    }
    if seen is not None:
        phases, order, times = fold_phases(seen, name, t - clock)
        item["phases"] = phases  # device -> {forward, backward, optimizer}; None: not measured
        item["phase_order"] = order
        item["phase_times"] = times
        item["phase_peaks"] = phase_peaks(seen, name)  # device -> phase -> [peak, bound or None]
    return item


def device_buckets(
    tensors: dict | None,
    registered: bool,
    devices: dict,
    other_unknown: str | None = None,
    grads_unknown: str = GRADIENTS_UNKNOWN,
    state_unknown: str | None = None,
) -> list[tuple[str, dict, dict, str | None]]:
    """(device, allocator fields, five buckets, note) for every device the allocator or
    the tensors name; buckets None where nothing is registered; ``other_unknown`` /
    ``grads_unknown`` / ``state_unknown``: why activations / gradients / optimizer state
    are not known (agent/tensors/buckets.py)."""
    out = []
    names = list(devices)
    if tensors:
        names += [d for d in tensors if d not in devices]
    for name in names:
        fields = devices.get(name) or {}
        per = None
        if registered and tensors is not None:
            per = tensors.get(name) or dict.fromkeys(TENSOR_BUCKETS, 0)
        buckets, note = full_buckets(
            per, fields.get("allocated"), fields.get("reserved"), other_unknown, grads_unknown, state_unknown
        )
        if not registered and note is None:
            note = NOTHING_REGISTERED
        elif note is None and per is not None and fields.get("allocated") is None:
            note = NOT_ALLOCATOR  # (a device only the tensors name: no allocator figures to split)
        out.append((name, fields, buckets, note))
    return out


def sample_item(now: float, devices: dict, tensors, step: int, figures: dict) -> SampleItem:
    """The ring's sample item: the allocator's ``devices`` and the buckets of the ``tensors``
    measured at the same instant (agent/tensors/instant.py: ``tensors``, ``registered()``,
    ``notes``), at step ``step``; ``figures``: the rest of the sample -- settings, models,
    input, sharded and the agent's own figures (agent/core.py)."""
    out = []
    for name, fields, buckets, note in device_buckets(
        tensors.tensors, tensors.registered(), devices, *tensors.notes
    ):
        entry = {"device": name}
        entry.update(fields)
        entry["buckets"] = buckets
        if note is not None:
            entry["buckets_note"] = note
        out.append(entry)
    return {"t": now, "step": step, "devices": out, **figures}


def walked(owners) -> dict | None:
    """What a sample's tensors were measured from (the last walk)."""
    if owners is None:
        return None
    return {"models": owners.models, "optimizers": len(owners.optimizers), "params": len(owners.params)}


def buckets_now(tensors, devices: dict) -> dict:
    """device -> the five buckets of the ``tensors`` last measured (agent/tensors/instant.py)."""
    return {
        name: buckets
        for name, _f, buckets, _n in device_buckets(
            tensors.tensors or {}, tensors.registered(), devices, *tensors.notes
        )
    }

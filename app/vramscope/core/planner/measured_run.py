"""What a running process measured, as the what-if planner needs it.

From what the PyTorch agent sends (untrusted values: every field is
checked): per device the tensor buckets of the latest sample (weights,
gradients, optimizer state), the step's peak allocated from the step items'
phase peaks (CUDA: the allocator's counter), the micro-batch and sequence
length of the training forward (agent/tensors/input_shape.py), the models'
parameter counts and optimizer (agent/tensors/model_info.py) and -- where the agent
measured them -- the activations saved for backward per module (the
"modules" item: ``{"step", "device", "modules": [{"name", "parent",
"weights", "gradients", "optimizer_state", "activations", "shared",
"why"}]}``, bytes, null where not available).

The activations come from the per-module figures where they are there (the
bytes saved for backward, each storage once); otherwise from the step's
peak: peak - weights - gradients - optimizer state, i.e. activations +
temporaries at the peak. Beside the modules' figures the loss saves a tensor
the size of the model's output (agent/tensors/input_shape.py notes its bytes). A CPU run without per-module figures has no
allocator peak: its activations are not known, and said so.

A module's figure includes its submodules' where every listed parent holds
at least what its listed children hold together (a tree of totals); else the
figures are each module's own and add up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vramscope.agent.protocol import Bucket

ATTENTION = re.compile(r"attn|attention", re.IGNORECASE)  # a module name's last part
SOURCE_MODULES = "activations saved for backward, per module (the agent's hooks)"
SOURCE_PEAK = "the step's peak allocated - weights - gradients - optimizer state"
NO_ACTIVATIONS = (
    "activations not measured: the run has no allocator peak (CPU) and the agent "
    "sent no per-module activations"
)


@dataclass(frozen=True, slots=True)
class Measured:
    """One device of a measured run (bytes; None: not known)."""

    device: str
    step: int | None
    batch: int | None  # the micro-batch of the measured forwards
    seq: int | None  # their sequence length (None: the input has none)
    weights: int
    gradients: int
    optimizer_state: int
    activations: int | None  # saved for backward (per module), or the peak's rest
    temporaries: int | None  # the allocator peak above weights+grads+optimizer+activations
    attention: int  # of the activations: held in attention modules (may grow with seq^2)
    blocks: tuple[tuple[str, int], ...]  # repeated blocks (checkpointing): (name, activations)
    peak: int | None  # the step's peak allocated (allocator), None on CPU
    source: str  # where the activations figure came from
    params: int | None  # parameters (all models)
    trainable: int | None
    optimizer_class: str | None
    param_dtype: str | None  # the dtype most parameters hold ("float32")
    outside_pytorch: int | None = None  # CUDA context and other libraries (fixed)
    module_count: int = 0
    loss: int = 0  # with per-module figures: the loss's saved copy of the output (outside them)

    @property
    def fixed(self) -> int:
        return self.weights + self.gradients + self.optimizer_state

    @property
    def total(self) -> int | None:
        """The measured peak as the what-if models it."""
        if self.activations is None:
            return None
        return self.fixed + self.activations + self.loss + (self.temporaries or 0)


def _n(v) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > 1 << 62:
        return None
    return v


def _text(v, limit: int = 256) -> str | None:
    return v[:limit] if isinstance(v, str) else None


def module_rows(item) -> list[tuple[str, str | None, int]]:
    """[(name, parent, activations)] of a "modules" item (wire dicts) or of decoded
    figures with those attributes; rows whose activations are not known are left out."""
    rows = item.get("modules") if isinstance(item, dict) else item
    out = []
    for m in rows or ():
        get = m.get if isinstance(m, dict) else (lambda k, m=m: getattr(m, k, None))
        name, act = _text(get("name")), _n(get("activations"))
        if name is None or act is None:
            continue
        out.append((name, _text(get("parent")), act))
    return out


def _subtree(rows) -> dict[str, int]:
    """name -> activations of the module with its submodules (see the module doc). In a
    tree of totals a container that never runs itself (a ModuleList) may say 0: it
    holds what its children hold."""
    own = {n: a for n, _p, a in rows}
    children: dict[str, list[str]] = {}
    for n, p, _a in rows:
        if p in own and p != n:
            children.setdefault(p, []).append(n)

    def totals(inclusive: bool) -> dict[str, int]:
        memo: dict[str, int] = {}

        def total(n: str, depth: int = 0) -> int:
            if n not in memo:
                below = sum(total(c, depth + 1) for c in children.get(n, ())) if depth < 64 else 0
                memo[n] = max(own[n], below) if inclusive else own[n] + below
            return memo[n]

        return {n: total(n) for n in own}

    inc = totals(True)
    if all(own[p] >= sum(inc[c] for c in kids) for p, kids in children.items() if own[p]):
        return inc
    return totals(False)


def split_modules(rows) -> tuple[int, int, tuple[tuple[str, int], ...]]:
    """(activations of all modules, of attention modules, the repeated blocks) from
    module rows: the roots (no listed parent) add up; attention = modules whose name
    ends in attn/attention without such an ancestor; blocks = numbered siblings
    (``layers.0``, ``layers.1``...) of one parent, at the shallowest such level."""
    sub = _subtree(rows)
    parent = {n: p for n, p, _a in rows}
    total = sum(sub[n] for n, p, _a in rows if p not in sub)

    def has_attention_ancestor(n: str) -> bool:
        p, depth = parent.get(n), 0
        while p is not None and p in parent and depth < 64:
            if ATTENTION.search(p.rsplit(".", 1)[-1]):
                return True
            p, depth = parent.get(p), depth + 1
        return False

    attention = sum(
        sub[n] for n in sub if ATTENTION.search(n.rsplit(".", 1)[-1]) and not has_attention_ancestor(n)
    )
    numbered: dict[str | None, list[str]] = {}
    for n, p, _a in rows:
        if n.rsplit(".", 1)[-1].isdigit():
            numbered.setdefault(p, []).append(n)
    groups = [kids for kids in numbered.values() if len(kids) >= 2]
    blocks: tuple = ()
    if groups:
        shallow = min(groups, key=lambda kids: (kids[0].count("."), -len(kids)))
        blocks = tuple((n, sub[n]) for n in shallow)
    return total, min(attention, total), blocks


def step_peak(steps, device: str) -> int | None:
    """The highest peak allocated of ``device`` over step items (raw dicts or the
    monitor's STEP event data): each phase's peak, else the step's own figure."""
    best = None
    for s in steps or ():
        if not isinstance(s, dict):
            continue
        peaks = s.get("phase_peaks")
        per = peaks.get(device) if isinstance(peaks, dict) else None
        values = []
        if isinstance(per, dict):
            for v in per.values():
                if isinstance(v, (list, tuple)) and v:
                    values.append(_n(v[0]))
        devs = s.get("devices")
        d = devs.get(device) if isinstance(devs, dict) else None
        if isinstance(d, dict):
            values.append(_n(d.get("peak_allocated")))
        values = [v for v in values if v is not None]
        if values:
            best = max(values + ([best] if best is not None else []))
    return best


def _models_summary(models) -> tuple[int | None, int | None, str | None, str | None]:
    params = trainable = 0
    cls = dtype = None
    dtypes: dict[str, int] = {}
    good = [m for m in models or () if isinstance(m, dict) and _n(m.get("params"))]
    for m in good:
        params += m["params"]
        trainable += _n(m.get("trainable")) or 0
        opt = m.get("optimizer")
        if cls is None and isinstance(opt, dict):
            cls = _text(opt.get("class"), 64)
        for k, v in (m.get("dtypes") or {}).items() if isinstance(m.get("dtypes"), dict) else ():
            if _n(v):
                dtypes[str(k)[:32]] = dtypes.get(str(k)[:32], 0) + v
    if dtypes:
        dtype = max(dtypes, key=dtypes.get)
    return (params or None, trainable if good else None, cls, dtype)


def measure(
    device: str,
    buckets: dict | None,
    steps=(),
    input_shape: dict | None = None,
    models=(),
    modules=None,
    step: int | None = None,
    outside_pytorch: int | None = None,
) -> Measured:
    """A Measured from the agent's figures for ``device`` (see the module doc).
    ``modules``: the "modules" item (or its rows) of this device, or None."""
    b = buckets if isinstance(buckets, dict) else {}
    weights = _n(b.get(Bucket.WEIGHTS)) or 0
    gradients = _n(b.get(Bucket.GRADIENTS)) or 0
    optimizer_state = _n(b.get(Bucket.OPTIMIZER_STATE)) or 0
    params, trainable, cls, dtype = _models_summary(models)
    if trainable and params and weights:
        # a sample is true at its instant: after zero_grad(set_to_none=True) it holds none,
        # in the middle of a backward only the layers done so far -- the plan is for the
        # gradients the backward makes, one per trainable parameter (more where they are
        # kept in a wider dtype than the weights: the measured figure then stands)
        gradients = max(gradients, weights * trainable // params)
    shape = input_shape if isinstance(input_shape, dict) else {}
    batch, seq = _n(shape.get("batch")) or None, _n(shape.get("seq")) or None
    peak = step_peak(steps, device)
    rows = module_rows(modules) if modules is not None else []
    temporaries, loss = None, 0
    if rows:
        activations, attention, blocks = split_modules(rows)
        source = SOURCE_MODULES
        loss = _n(shape.get("output_bytes")) or 0
        if peak is not None:
            temporaries = max(0, peak - weights - gradients - optimizer_state - activations - loss)
    elif peak is not None:
        activations = max(0, peak - weights - gradients - optimizer_state)
        attention, blocks, source = 0, (), SOURCE_PEAK
    else:
        activations, attention, blocks, source = None, 0, (), NO_ACTIVATIONS
    return Measured(
        device=device,
        step=step,
        batch=batch,
        seq=seq,
        weights=weights,
        gradients=gradients,
        optimizer_state=optimizer_state,
        activations=activations,
        temporaries=temporaries,
        attention=attention,
        blocks=blocks,
        peak=peak,
        source=source,
        params=params,
        trainable=trainable,
        optimizer_class=cls,
        param_dtype=dtype,
        outside_pytorch=outside_pytorch,
        module_count=len(rows),
        loss=loss,
    )


def busiest_device(devices):
    """The device (AgentDevice) holding the most weights, gradients and optimizer
    state, a GPU before the CPU; None when no device has a breakdown."""
    devices = [d for d in devices or () if d.buckets is not None]
    if not devices:
        return None

    def held(d):
        b = d.buckets
        return (
            not d.device.startswith("cpu"),
            sum(v or 0 for v in (b.weights, b.gradients, b.optimizer_state)),
        )

    return max(devices, key=held)


def from_report(report, steps=()) -> Measured | None:
    """A Measured of an AgentReport's busiest device (a GPU before the CPU), with the
    step data the monitor kept (STEP events' data); None without buckets."""
    d = busiest_device(getattr(report, "devices", ()))
    if d is None:
        return None
    return measure(
        d.device,
        d.buckets.as_dict(),
        steps=steps,
        input_shape=getattr(report, "measured_input", None),
        models=report.models,
        modules=_modules_of(getattr(report, "modules", None), d.device),
        step=report.step,
        outside_pytorch=d.buckets.outside_pytorch,
    )


def _field(v, key: str):
    return v.get(key) if isinstance(v, dict) else getattr(v, key, None)


def _modules_of(figures, device: str):
    """The per-module figures of ``device``: items as sent ({"device", "modules"}) or
    the module rows themselves (each with its device, or all of one device)."""
    figures = list(figures or ())
    items = [f for f in figures if _field(f, "modules") is not None]
    if items:
        mine = [f for f in items if _field(f, "device") in (device, None)]
        return mine[-1] if mine else None
    rows = [f for f in figures if _field(f, "device") in (device, None)]
    return rows or None

"""The planner's third input: a live model, as the PyTorch agent reports it.

The agent (agent/model_info.py) reports per registered model its parameters
(unique tensors, tied ones counted once), the trainable ones, the bytes they
hold in their own dtypes and the optimizer that updates them. From that the
plan is made like with like: the parameter count, a frozen base when fewer
parameters are trainable than there are, the bytes per parameter as held
(no fp32 master copy: plain PyTorch keeps gradients and optimizer moments in
the parameter's dtype) and the optimizer's class -- so "planned vs measured"
compares the same thing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.model_shape import ModelShape, shape_from_params
from vramscope.core.planner.request import PlanRequest

SOURCE = "attached process (agent)"
_PRECISION_OF_DTYPE = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "int8": "int8",
    "uint8": "int8",
}


@dataclass(frozen=True, slots=True)
class LiveModel:
    names: tuple[str, ...]
    params: int
    tensors: int | None
    trainable: int
    trainable_tensors: int | None
    param_bytes: int
    trainable_bytes: int
    dtypes: tuple[tuple[str, int], ...]  # dtype -> parameters, largest first
    optimizer: str | None  # the planner's key (adam, adamw, sgd-momentum, ...); None: unknown
    optimizer_class: str | None
    notes: tuple[str, ...] = ()

    @property
    def frozen(self) -> int:
        return self.params - self.trainable

    @property
    def bytes_per_param(self) -> Fraction:
        return Fraction(self.param_bytes, self.params)

    @property
    def dtype_bytes(self) -> Fraction:
        """Bytes per trained parameter (the weighted mean over dtypes)."""
        if self.trainable:
            return Fraction(self.trainable_bytes, self.trainable)
        return self.bytes_per_param

    @property
    def frozen_dtype_bytes(self) -> Fraction | None:
        if not self.frozen:
            return None
        return Fraction(self.param_bytes - self.trainable_bytes, self.frozen)

    @property
    def precision(self) -> str:
        """The planner precision closest to what the parameters hold."""
        if len(self.dtypes) == 1 and self.dtypes[0][0] in _PRECISION_OF_DTYPE:
            return _PRECISION_OF_DTYPE[self.dtypes[0][0]]
        b = self.bytes_per_param
        return (
            "fp32" if b >= 3 else "bf16" if b >= Fraction(3, 2) else "int8" if b >= Fraction(3, 4) else "int4"
        )

    def describe(self) -> str:
        bpp = float(self.bytes_per_param)
        dtypes = ", ".join(d for d, _ in self.dtypes) or "no parameters"
        frozen = f", {self.frozen:,} frozen" if self.frozen else ""
        opt = self.optimizer_class or "no optimizer seen"
        return (
            f"{' + '.join(self.names)}: {self.params:,} parameters ({self.trainable:,} "
            f"trainable{frozen}), {dtypes} = {bpp:g} B/param, {opt}"
        )


def optimizer_key(entry) -> tuple[str | None, str | None]:
    """(planner optimizer key or None, a note) from the agent's optimizer entry."""
    if not isinstance(entry, dict) or not entry.get("class"):
        return None, None
    cls = str(entry["class"])
    low = cls.lower()
    note = None
    if "8bit" in low and "adam" in low:
        return "adam8bit", None
    if low in ("adam", "adamw"):
        if entry.get("amsgrad"):
            note = f"{cls} with amsgrad keeps a third moment (max of the second): not planned"
        elif entry.get("fused") or entry.get("capturable"):
            note = (
                f"{cls} fused/capturable keeps its step counters on the device "
                "(4 B per tensor), not in host RAM"
            )
        return low, note
    if low == "sgd":
        return ("sgd-momentum" if (entry.get("momentum") or 0) > 0 else "sgd"), None
    return None, (f"optimizer {cls} is not one the planner knows: the form's optimizer is used for its state")


def live_model(models) -> LiveModel:
    """One LiveModel from the agent's per-model dicts (several models add up)."""
    good = [m for m in (models or ()) if isinstance(m, dict) and _count(m.get("params"))]
    if not good:
        raise PlanError(
            "agent",
            "the attached process has reported no model yet: register one "
            "with agent.start(model=..., optimizer=...) or run it under "
            "vramscope run",
        )
    params = sum(_count(m["params"]) for m in good)
    trainable = sum(_count(m.get("trainable")) or 0 for m in good)
    param_bytes = sum(_count(m.get("param_bytes")) or 0 for m in good)
    trainable_bytes = sum(_count(m.get("trainable_bytes")) or 0 for m in good)
    if not param_bytes or trainable > params or trainable_bytes > param_bytes:
        raise PlanError(
            "agent",
            "the agent's model report is inconsistent (parameter bytes "
            "missing or more trainable than total): cannot plan from it",
        )
    tensors = _sum_or_none(m.get("tensors") for m in good)
    trainable_tensors = _sum_or_none(m.get("trainable_tensors") for m in good)
    dtypes: dict[str, int] = {}
    for m in good:
        for name, n in (m.get("dtypes") or {}).items():
            if _count(n):
                dtypes[str(name)] = dtypes.get(str(name), 0) + int(n)
    notes = []
    keyed = []
    for m in sorted(good, key=lambda m: -(_count(m.get("trainable")) or 0)):
        key, note = optimizer_key(m.get("optimizer"))
        if note:
            notes.append(note)
        if m.get("optimizer"):
            keyed.append((key, str(m["optimizer"].get("class"))))
    optimizer, cls = keyed[0] if keyed else (None, None)
    if len({k for k, _ in keyed}) > 1:
        notes.append(
            "the models have different optimizers: "
            + ", ".join(c for _, c in keyed)
            + f"; planned with {cls} for all"
        )
    if trainable and optimizer is None and not keyed:
        notes.append("no optimizer seen for the model yet: the form's optimizer is used")
    return LiveModel(
        names=tuple(str(m.get("name") or "model") for m in good),
        params=params,
        tensors=tensors,
        trainable=trainable,
        trainable_tensors=trainable_tensors,
        param_bytes=param_bytes,
        trainable_bytes=trainable_bytes,
        dtypes=tuple(sorted(dtypes.items(), key=lambda kv: -kv[1])),
        optimizer=optimizer,
        optimizer_class=cls,
        notes=tuple(dict.fromkeys(notes)),
    )


def live_shape(live: LiveModel, **layers) -> ModelShape:
    """The ModelShape of a live model (layer figures optional, as with a count)."""
    shape = shape_from_params(live.params, **layers)
    return replace(shape, tensors=live.tensors, source=SOURCE, notes=shape.notes + live.notes)


def live_request(live: LiveModel, base: PlanRequest | None = None, **layers) -> PlanRequest:
    """``base`` (the form's other choices) with the live model's count, frozen part,
    dtype bytes and optimizer filled in; the optimizer stays the form's when unknown."""
    base = base or PlanRequest(shape=shape_from_params(live.params))
    return replace(
        base,
        shape=live_shape(live, **layers),
        precision=live.precision,
        optimizer=live.optimizer or base.optimizer,
        grad_layout=16,
        lora_rank=None,
        lora_modules=(),
        trainable_params=live.trainable,
        trainable_tensors=live.trainable_tensors,
        dtype_bytes=live.dtype_bytes,
        frozen_dtype_bytes=live.frozen_dtype_bytes,
    )


def _count(v) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        return None
    return v


def _sum_or_none(values) -> int | None:
    values = list(values)
    if any(_count(v) is None for v in values):
        return None
    return sum(values)

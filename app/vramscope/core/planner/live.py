"""The planner's third input: a live model, as the PyTorch agent reports it.

The agent (agent/tensors/model_info.py) reports per registered model its parameters
(unique tensors, tied ones counted once), the trainable ones, the bytes they
hold in their own dtypes and the optimizer that updates them. From that the
plan is made like with like: the parameter count, a frozen base when fewer
parameters are trainable than there are, the bytes per parameter as held
(no fp32 master copy: plain PyTorch keeps gradients and optimizer moments in
the parameter's dtype) and the optimizer's class -- so "planned vs measured"
compares the same thing twice.

A sharded or replicated run (FSDP2, DDP, DeepSpeed ZeRO: the agent's
"sharded" item, agent/tensors/sharded.py) is planned as the run is laid out: over
its world size, with its scheme's sharding (FSDP2 = ZeRO stage 3), so the
plan is one rank's -- the same thing the rank's agent measures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from vramscope.agent.protocol import Scheme
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
    sharding: LiveSharding | None = None  # a sharded or replicated run (None: one process)
    local_params: int | None = None  # what this rank holds of ``params`` (a sharded run)

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
        text = (
            f"{' + '.join(self.names)}: {self.params:,} parameters ({self.trainable:,} "
            f"trainable{frozen}), {dtypes} = {bpp:g} B/param, {opt}"
        )
        sharding = self.sharding
        if sharding is not None:
            local = self.local_params
            held = f", {local:,} of them on this rank" if local is not None and local != self.params else ""
            text += f"\n{sharding.describe()}{held}"
        return text


@dataclass(frozen=True, slots=True)
class LiveSharding:
    """How the attached run lays its model out over its ranks (the agent's "sharded" item)."""

    scheme: str  # Scheme: FSDP2, DDP, ZeRO (another name: planned unsharded, said so)
    world_size: int | None  # None: the process group was not initialised when sampled
    zero_stage: int | None = None  # DeepSpeed's stage
    note: str | None = None  # the agent's own note (ZeRO's partitions not read)

    @property
    def stage(self) -> int | None:
        """The planner's ZeRO stage for this scheme (None: not one the planner shards)."""
        if self.scheme == Scheme.FSDP2:
            return 3
        if self.scheme == Scheme.DDP:
            return 0
        if self.scheme == Scheme.ZERO:
            return self.zero_stage
        return None

    @property
    def layout(self) -> tuple[int, int, bool] | None:
        """The plan's (ZeRO stage, GPUs, FSDP full shard) for this run; None: planned as
        the form says (a scheme the planner does not shard)."""
        stage = self.stage
        if stage is None:
            return None
        fsdp = self.scheme == Scheme.FSDP2  # (= stage 3, named FSDP in the plan's notes)
        return (0 if fsdp else stage), self.world_size or 1, fsdp

    def describe(self) -> str:
        """One line for the tab and the CLI: what the live plan plans."""
        n = self.world_size
        over = f" over {n} ranks" if n else " (world size not known: planned as 1 rank)"
        if self.scheme == Scheme.ZERO and self.zero_stage is None:
            return f"DeepSpeed ZeRO{over}, stage not known: planned unsharded"
        name = f"ZeRO stage {self.zero_stage}" if self.scheme == Scheme.ZERO else self.scheme
        if self.stage is None:
            return f"{name}{over}: a scheme the planner does not shard, planned unsharded"
        what = {
            0: "replicated: each rank holds the whole model",
            1: "each rank holds 1/N of the optimizer state",
            2: "each rank holds 1/N of the optimizer state and gradients",
            3: "each rank holds 1/N of the weights, gradients and optimizer state",
        }[self.stage]
        return f"{name}{over}, {what}: the plan is one rank's, as this rank measures"


def live_sharding(raw) -> LiveSharding | None:
    """LiveSharding from the agent's "sharded" item (None: a single-process run)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("scheme"), str):
        return None
    n = _count(raw.get("world_size"))
    stage = _count(raw.get("zero_stage"))
    note = raw.get("note")
    return LiveSharding(
        scheme=raw["scheme"],
        world_size=n or None,
        zero_stage=stage if stage is not None and stage <= 3 else None,
        note=note if isinstance(note, str) else None,
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


def live_model(models, sharded=None) -> LiveModel:
    """One LiveModel from the agent's per-model dicts (several models add up) and its
    "sharded" item (the run's scheme and world size; None: one process)."""
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
    sharding = live_sharding(sharded)
    if sharding is not None and sharding.note:
        notes.append(sharding.note)
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
        sharding=sharding,
        local_params=_sum_or_none(m.get("local_params") for m in good) if sharding else None,
    )


def live_shape(live: LiveModel, **layers) -> ModelShape:
    """The ModelShape of a live model (layer figures optional, as with a count)."""
    shape = shape_from_params(live.params, **layers)
    return replace(shape, tensors=live.tensors, source=SOURCE, notes=shape.notes + live.notes)


def live_request(live: LiveModel, base: PlanRequest | None = None, **layers) -> PlanRequest:
    """``base`` (the form's other choices) with the live model's count, frozen part,
    dtype bytes and optimizer filled in; the optimizer stays the form's when unknown.
    A sharded run's scheme and world size replace the form's ZeRO stage, GPUs and FSDP."""
    base = base or PlanRequest(shape=shape_from_params(live.params))
    layout = live.sharding.layout if live.sharding is not None else None
    if layout is not None:
        stage, gpus, fsdp = layout
        base = replace(base, zero_stage=stage, gpus=gpus, fsdp=fsdp)
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

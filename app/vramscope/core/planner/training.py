"""Training memory: bytes per parameter per bucket, ZeRO/FSDP sharding,
offload, LoRA, and activations.

Sources:
- fp32 + Adam: 4 weights + 4 gradients + 8 Adam moments = 16 B/param.
- mixed precision + Adam: 2 bf16 weights + 2 bf16 gradients + 4 fp32 master
  + 8 Adam = 16 B/param -- the ZeRO paper's accounting (Rajbhandari et al.
  2020: 2 + 2 + K with K = 12 bytes of "optimizer states" = master + moments).
- The Hugging Face layout with FP32 gradients: 2 + 4 + 8 + 4 = 18 B/param.
- 8-bit Adam (Dettmers et al.): the moments take 2 bytes instead of 8.
  SGD with momentum keeps one moment (4 B), plain SGD none.
- LoRA: frozen weights need no gradients and no optimizer state.
- ZeRO stage 1 shards the optimizer states over N GPUs, stage 2 the
  gradients too, stage 3 the parameters as well; FSDP (full shard) = stage 3;
  plain DDP divides nothing.
- Offload: optimizer state is only read at update time, so it can live in
  host RAM (ZeRO-Offload); the GPU keeps weights and gradients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.sizes import ceil_bytes

TRAIN_PRECISIONS = ("fp32", "mixed", "bf16", "fp16", "fp8", "int8", "int4")
OPTIMIZERS = ("adam", "adamw", "adam8bit", "sgd-momentum", "sgd")
GRAD_LAYOUTS = (16, 18)

# Bytes of optimizer state per trained parameter (the moments, fp32 unless 8-bit).
OPTIMIZER_BYTES = {
    "adam": Fraction(8),
    "adamw": Fraction(8),
    "adam8bit": Fraction(2),
    "sgd-momentum": Fraction(4),
    "sgd": Fraction(0),
}
OPTIMIZER_TEXT = {
    "adam": "Adam's two running statistics (first and second moments), fp32: 8 B",
    "adamw": "AdamW's two running statistics (first and second moments), fp32: 8 B",
    "adam8bit": "8-bit Adam: the two moments quantized block-wise, 8 bytes become 2",
    "sgd-momentum": "SGD with momentum keeps one moment, fp32: 4 B",
    "sgd": "plain SGD keeps no optimizer state: 0 B",
}
# PyTorch's Adam/AdamW keep a float32 `step` scalar per parameter tensor, on
# the CPU unless capturable/fused (torch/optim/adam.py, _init_group).
STEP_COUNTER_BYTES = 4


@dataclass(frozen=True, slots=True)
class StateLayout:
    """Bytes per trained parameter in each model-state bucket."""

    weights: Fraction
    gradients: Fraction
    master: Fraction
    optimizer: Fraction
    name: str

    @property
    def total(self) -> Fraction:
        return self.weights + self.gradients + self.master + self.optimizer

    def formula(self) -> str:
        parts = [self.weights, self.gradients] + ([self.master] if self.master else []) + [self.optimizer]
        return " + ".join(_num(p) for p in parts) + f" = {_num(self.total)} B/param"


def _num(x: Fraction) -> str:
    return str(int(x)) if x.denominator == 1 else f"{float(x):g}"


def state_layout(precision: str, optimizer: str, grad_layout: int = 16) -> StateLayout:
    """The ZeRO paper's per-parameter accounting for the trained parameters."""
    if optimizer not in OPTIMIZER_BYTES:
        raise PlanError("optimizer", f"unknown optimizer {optimizer!r}: choose from {', '.join(OPTIMIZERS)}")
    if grad_layout not in GRAD_LAYOUTS:
        raise PlanError(
            "grad_layout",
            "is 16 (bf16 gradients, ZeRO accounting) or 18 (fp32 gradients, the Hugging Face layout)",
        )
    opt = OPTIMIZER_BYTES[optimizer]
    if precision == "fp32":
        if grad_layout == 18:
            raise PlanError(
                "grad_layout",
                "the 18 B/param layout is a mixed-precision layout "
                "(bf16 weights, fp32 master and gradients): choose "
                "mixed precision",
            )
        return StateLayout(
            Fraction(4), Fraction(4), Fraction(0), opt, f"fp32 weights and gradients, {optimizer}"
        )
    if precision in ("mixed", "bf16", "fp16", "fp8", "int8", "int4"):
        half = "fp16" if precision == "fp16" else "bf16"
        if grad_layout == 18:
            return StateLayout(
                Fraction(2),
                Fraction(4),
                Fraction(4),
                opt,
                f"mixed precision, {half} weights + fp32 master + fp32 "
                f"gradients (Hugging Face layout), {optimizer}",
            )
        return StateLayout(
            Fraction(2),
            Fraction(2),
            Fraction(4),
            opt,
            f"mixed precision, {half} weights and gradients + fp32 master (ZeRO accounting), {optimizer}",
        )
    raise PlanError(
        "precision", f"unknown precision {precision!r}: choose from {', '.join(TRAIN_PRECISIONS)}"
    )


# PyTorch's own optimizers keep their moments in the parameter's dtype
# (torch.zeros_like(param) in torch/optim/adam.py and sgd.py's momentum_buffer).
NATIVE_MOMENTS = {"adam": 2, "adamw": 2, "sgd-momentum": 1, "sgd": 0}


def native_layout(dtype_bytes: Fraction, optimizer: str) -> StateLayout:
    """Plain PyTorch training of a model as it is held (a live model): weights,
    gradients and the optimizer's moments all in the parameters' own dtype(s),
    no fp32 master copy. For fp32 parameters this is the familiar 4 + 4 + 8."""
    if optimizer not in OPTIMIZER_BYTES:
        raise PlanError("optimizer", f"unknown optimizer {optimizer!r}: choose from {', '.join(OPTIMIZERS)}")
    b = Fraction(dtype_bytes)
    if b <= 0:
        raise PlanError("agent", "bytes per parameter must be positive")
    opt = OPTIMIZER_BYTES["adam8bit"] if optimizer == "adam8bit" else NATIVE_MOMENTS[optimizer] * b
    return StateLayout(
        b,
        b,
        Fraction(0),
        opt,
        f"as the model holds them: {_num(b)} B/param in the parameters' own dtype, "
        f"gradients and {optimizer} state alike, no fp32 master copy",
    )


@dataclass(frozen=True, slots=True)
class ModelStates:
    """Per-GPU bytes of the fixed cost, and what lives in host RAM instead."""

    weights: int
    gradients: int
    master: int
    optimizer: int
    host_optimizer: int  # offloaded master + moments, and PyTorch's step counters
    host_step_counters: int | None  # part of host_optimizer; None: tensor count unknown


def model_states(
    *,
    trained: int,
    frozen: int,
    layout: StateLayout,
    frozen_weight_bytes: Fraction,
    trained_tensors: int | None,
    optimizer: str,
    zero_stage: int = 0,
    gpus: int = 1,
    offload: bool = False,
    tensor_shards: bool = False,
) -> ModelStates:
    """Weights, gradients, master copy and optimizer state held by each GPU.

    ``trained`` parameters carry the whole layout; ``frozen`` ones (LoRA's
    base model) only their weights. ZeRO stage s over ``gpus`` divides: s >= 1
    the optimizer states (master + moments, the paper's K), s >= 2 the
    gradients, s = 3 the weights. Stage 0 (plain DDP) divides nothing.
    ``tensor_shards``: each GPU holds a shard of every tensor (PyTorch FSDP2's
    per-parameter DTensors), so each keeps a step counter per tensor, undivided."""
    if zero_stage not in (0, 1, 2, 3):
        raise PlanError("zero_stage", "the ZeRO stage is 0, 1, 2 or 3")
    if gpus < 1:
        raise PlanError("gpus", "must be at least 1")
    n_opt = gpus if zero_stage >= 1 else 1
    n_grad = gpus if zero_stage >= 2 else 1
    n_weight = gpus if zero_stage >= 3 else 1
    weights = ceil_bytes((trained * layout.weights + frozen * frozen_weight_bytes) / n_weight)
    gradients = ceil_bytes(trained * layout.gradients / n_grad)
    master = ceil_bytes(trained * layout.master / n_opt)
    opt = ceil_bytes(trained * layout.optimizer / n_opt)
    steps = None
    if optimizer in ("adam", "adamw") and trained_tensors is not None:
        steps = STEP_COUNTER_BYTES * (
            trained_tensors if tensor_shards else math.ceil(trained_tensors / n_opt)
        )
    host = steps or 0
    if offload:
        host += master + opt
        master = opt = 0
    return ModelStates(weights, gradients, master, opt, host, steps)


# --- activations ---------------------------------------------------------------

ACTIVATION_FORMULA = (
    "Korthikanti et al. 2022 (Reducing Activation Recomputation in Large "
    "Transformer Models): s·b·h·(34 + 5·a·s/h) bytes per layer with 16-bit "
    "activations"
)


@dataclass(frozen=True, slots=True)
class Activations:
    bytes: int
    per_layer: int
    formula: str


def activation_bytes(
    *,
    batch: int,
    seq: int,
    hidden: int,
    layers: int,
    heads: int,
    checkpointing: bool = False,
    flash_attention: bool = False,
    fp32: bool = False,
    active_mlp: int | None = None,
) -> Activations:
    """Activations saved for backward, per GPU (its micro-batch).

    Per layer: s·b·h·(34 + 5·a·s/h) bytes (Korthikanti et al. 2022, a GPT-style
    layer, 16-bit activations). Flash attention keeps no a·s² score matrices,
    so the quadratic 5·a·s²·b term goes and 34·s·b·h remains. Checkpointing
    with √n segments (Chen et al. 2016, Training Deep Nets with Sublinear
    Memory Cost): keep the 2·s·b·h input of each of k = ⌈√L⌉ segments and
    rebuild one segment (⌈L/k⌉ layers) at a time during backward.

    Mixture of experts (``active_mlp``: the MLP width a token passes through,
    k experts × their intermediate size plus any shared expert): of the 34,
    the MLP's 19 = 3·s·b·h around it + 4·s·b·(4h) for its two 16-bit
    intermediate tensors, so the MLP term becomes 3·s·b·h + 4·s·b·I_active --
    activations follow the active parameters, not the experts held."""
    for name, value in (
        ("batch", batch),
        ("seq", seq),
        ("hidden", hidden),
        ("layers", layers),
        ("heads", heads),
    ):
        if not isinstance(value, int) or value <= 0:
            raise PlanError(
                name if name in ("batch", "seq") else "shape", f"{name} must be a positive integer"
            )
    s, b, h, a, L = seq, batch, hidden, heads, layers
    linear = 34 * s * b * h
    moe = ""
    if active_mlp:
        linear = 18 * s * b * h + 4 * s * b * active_mlp
        moe = (
            f"; mixture of experts: the MLP term is 3·s·b·h + 4·s·b·I_active with "
            f"I_active = {active_mlp:,} (the experts a token passes through), so per layer "
            f"18·s·b·h + 4·s·b·{active_mlp:,}"
        )
    quadratic = 0 if flash_attention else 5 * a * s * s * b
    per_layer = linear + quadratic
    if flash_attention:
        formula = (
            f"{ACTIVATION_FORMULA}; flash attention removes the 5·a·s/h term: "
            f"34·s·b·h = 34×{s}×{b}×{h} B per layer"
        )
    else:
        formula = f"{ACTIVATION_FORMULA}: {s}×{b}×{h}×(34 + 5×{a}×{s}/{h}) B per layer"
    formula += moe
    if checkpointing:
        k = math.isqrt(L - 1) + 1 if L > 1 else 1  # ceil(sqrt(L))
        segment = -(-L // k)
        total = k * 2 * s * b * h + segment * per_layer
        formula += (
            f"; checkpointing with √n segments (Chen et al. 2016): {k} segment inputs "
            f"of 2·s·b·h plus one segment of {segment} layers rebuilt at a time"
        )
    else:
        total = L * per_layer
        formula += f"; × {L} layers"
    if fp32:
        total *= 2
        per_layer *= 2
        formula += "; fp32 activations: about twice the 16-bit figure"
    return Activations(total, per_layer, formula)

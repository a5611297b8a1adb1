"""What would fit: the measured run (core/planner/measured_run.py) scaled to
another micro-batch, sequence length, activation checkpointing, bf16
autocast, an 8-bit optimizer or LoRA.

Which part scales with what:

- weights, gradients, optimizer state: fixed (they depend on the parameters,
  not the data); LoRA trains adapters only, an 8-bit optimizer keeps 2 bytes
  of Adam state per parameter instead of 8 (Dettmers et al. 2022, "8-bit
  Optimizers via Block-wise Quantization");
- activations saved for backward and the step's temporaries: linear in the
  micro-batch and, for sequence models, in the sequence length -- except the
  attention scores, B x heads x L x L per attention layer, quadratic in L
  without flash / memory-efficient attention (Korthikanti et al. 2022,
  "Reducing Activation Recomputation in Large Transformer Models", eq. 1:
  sbh(34 + 5as/h)). One measurement does not split an attention module's
  bytes into its linear and its quadratic part, so a longer sequence gives a
  range: attention modules linear (flash) to wholly quadratic;
- activation checkpointing: a checkpointed block keeps only its input (2 of
  the 34 sbh of a transformer layer, same paper) and recomputes one block at
  a time in backward (the largest block's activations on top);
- bf16 autocast of an fp32 model: matmul outputs saved in bf16 (the
  activations about halved) and a bf16 copy of the weights kept for
  backward (PyTorch AMP docs, "autocast caches casts of parameters").

The verdict is judged against the GPU's capacity and against what is free
now plus what this process holds (it would be restarted with the change).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.measured_run import Measured

CHECKPOINT_KEEP = 2 / 34  # a checkpointed transformer layer keeps its input: 2 of 34 sbh bytes
AUTOCAST_ACTIVATIONS = 0.5  # fp32 -> bf16 saved tensors
ADAM_8BIT = 2 / 8  # bytes of state per parameter: 8-bit Adam vs fp32 Adam
ASPECT = 128  # hidden / layers of typical transformers (Kaplan et al. 2020), for LoRA's hidden size

BATCH, SEQ, SEQ2, FIXED = "batch", "batch x seq", "batch x seq^2 (attention, no flash)", "fixed"


@dataclass(frozen=True, slots=True)
class Change:
    batch: int | None = None  # None: as measured
    seq: int | None = None
    checkpointing: bool = False
    checkpoint_modules: tuple[str, ...] = ()  # () with checkpointing: the repeated blocks
    bf16: bool = False
    optimizer_8bit: bool = False
    lora_rank: int | None = None
    hidden: int | None = None  # for LoRA's adapter size (estimated from the count otherwise)
    flash_attention: bool = False  # the longer sequence's attention stays linear


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    now: int | None
    predicted: int | None
    high: int | None  # the upper end where the prediction is a range (seq^2), else == predicted
    scales: str  # BATCH, SEQ, SEQ2 or FIXED


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    capacity: int | None
    free_now: int | None  # free now (+ own: what the measured process holds, it would restart)
    own: int | None = None  # the measured process's own memory on it, counted in free_now


@dataclass(frozen=True, slots=True)
class WhatIf:
    measured: Measured
    change: Change
    parts: tuple[Part, ...]
    peak_now: int | None
    peak: int | None  # predicted peak (low end of a range)
    peak_high: int | None
    targets: tuple[Target, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def verdict(self, target: Target) -> tuple[bool | None, bool | None]:
        """(fits on the empty card, fits now); None where not known."""
        top = self.peak_high
        if top is None:
            return None, None
        empty = None if target.capacity is None else top <= target.capacity
        now = None if target.free_now is None else top <= target.free_now
        return empty, now

    def to_json(self) -> dict:
        m = self.measured
        return {
            "device": m.device,
            "measured_step": m.step,
            "measured": {
                "batch": m.batch,
                "seq": m.seq,
                "peak": m.peak,
                "source": m.source,
                "modules": m.module_count,
            },
            "change": {
                "batch": self.change.batch or m.batch,
                "seq": self.change.seq or m.seq,
                "checkpointing": self.change.checkpointing,
                "bf16": self.change.bf16,
                "optimizer_8bit": self.change.optimizer_8bit,
                "lora_rank": self.change.lora_rank,
            },
            "parts": [
                {"name": p.name, "now": p.now, "predicted": p.predicted, "high": p.high, "scales": p.scales}
                for p in self.parts
            ],
            "peak_now": self.peak_now,
            "peak": self.peak,
            "peak_high": self.peak_high,
            "targets": [
                {
                    "name": t.name,
                    "capacity": t.capacity,
                    "free_now": t.free_now,
                    "own": t.own,
                    "fits_empty": self.verdict(t)[0],
                    "fits_now": self.verdict(t)[1],
                }
                for t in self.targets
            ],
            "notes": list(self.notes),
        }


def _lora_fraction(m: Measured, change: Change, notes: list) -> float:
    hidden = change.hidden
    if hidden is None:
        params = m.trainable or m.params or 0
        hidden = max(64, round((params * ASPECT / 12) ** (1 / 3))) if params else 4096
        notes.append(
            f"LoRA: hidden size estimated at {hidden} from the parameter count (12 L h^2 "
            f"with h/L = {ASPECT}); give the hidden size for a closer figure"
        )
    return min(1.0, 2 * change.lora_rank / hidden)  # (in + out) r / (in out) for square linears


def predict(m: Measured, change: Change, targets=()) -> WhatIf:
    """The peak of ``m``'s run with ``change`` (PlanError where a needed figure is not
    measured)."""
    notes: list[str] = []
    kb = ks = 1.0
    if change.batch is not None and change.batch != m.batch:
        if m.batch is None:
            raise PlanError(
                "batch", "the attached process has not shown the micro-batch of a training forward yet"
            )
        kb = change.batch / m.batch
    if change.seq is not None and change.seq != m.seq:
        if m.seq is None:
            raise PlanError(
                "seq",
                "the measured run's input has no sequence dimension the agent "
                "recognised (token ids B x L or features B x L x D)",
            )
        ks = change.seq / m.seq
    w, g, o = m.weights, m.gradients, m.optimizer_state
    w2, g2, o2 = float(w), float(g), float(o)
    if change.lora_rank:
        f = _lora_fraction(m, change, notes)
        g2, o2 = g * f, o * f
        w2 = w + w * f
        notes.append(
            f"LoRA rank {change.lora_rank}: adapters of {f:.2%} of the weights; "
            "gradients and optimizer state only for them"
        )
    if change.optimizer_8bit:
        cls = (m.optimizer_class or "").lower()
        if cls in ("adam", "adamw"):
            o2 *= ADAM_8BIT
        else:
            notes.append(
                f"8-bit optimizer: planned from Adam's 2 B/parameter; the measured "
                f"optimizer is {m.optimizer_class or 'not known'}"
            )
            o2 = (m.trainable or 0) * 2 * (g2 / g if g else 1.0)
    parts = [
        Part("weights", w, round(w2), round(w2), FIXED),
        Part("gradients", g, round(g2), round(g2), FIXED),
        Part("optimizer state", o, round(o2), round(o2), FIXED),
    ]
    if m.activations is None:
        notes.append(m.source)
        parts.append(Part("activations", None, None, None, SEQ if m.seq else BATCH))
        return WhatIf(m, change, tuple(parts), None, None, None, tuple(targets), tuple(notes))
    act, attn = m.activations, m.attention
    seq_scale = SEQ if m.seq else BATCH
    linear = (act - attn) * kb * ks
    attn_low = attn * kb * ks
    attn_high = attn_low if change.flash_attention else attn * kb * ks * ks
    if ks != 1 and attn and not change.flash_attention:
        notes.append(
            "a longer sequence: attention modules' activations between linear (flash "
            "attention) and quadratic in the length -- the range shown"
        )
    if ks != 1 and not attn and m.seq:
        notes.append(
            "no attention module named in the measured figures: all activations "
            "taken as linear in the sequence length"
        )
    low, high = linear + attn_low, linear + attn_high
    if change.checkpointing:
        low, high = _checkpointed(m, change, kb * ks, low, high, notes)
    if change.bf16:
        if (m.param_dtype or "float32") == "float32":
            low, high = low * AUTOCAST_ACTIVATIONS, high * AUTOCAST_ACTIVATIONS
            parts.append(Part("bf16 weight copies (autocast)", 0, round(w * 0.5), round(w * 0.5), FIXED))
        else:
            notes.append(f"bf16 autocast: the parameters are {m.param_dtype} already; nothing changes")
    parts.append(
        Part(
            "activations",
            act,
            round(low),
            round(high),
            SEQ2 if attn and ks != 1 and not change.flash_attention else seq_scale,
        )
    )
    if m.loss:
        parts.append(
            Part(
                "loss (a copy of the output)",
                m.loss,
                round(m.loss * kb * ks),
                round(m.loss * kb * ks),
                seq_scale,
            )
        )
    temps = m.temporaries or 0
    if m.temporaries is not None:
        t2 = (
            temps
            * kb
            * ks
            * (AUTOCAST_ACTIVATIONS if change.bf16 and (m.param_dtype or "float32") == "float32" else 1)
        )
        parts.append(Part("temporaries at the peak", temps, round(t2), round(t2), seq_scale))
    if m.outside_pytorch is not None:
        parts.append(
            Part(
                "outside PyTorch (CUDA context, libraries)",
                m.outside_pytorch,
                m.outside_pytorch,
                m.outside_pytorch,
                FIXED,
            )
        )
    peak_now = sum(p.now or 0 for p in parts)
    peak = sum(p.predicted or 0 for p in parts)
    peak_high = sum(p.high or 0 for p in parts)
    return WhatIf(m, change, tuple(parts), peak_now, peak, peak_high, tuple(targets), tuple(notes))


def _checkpointed(
    m: Measured, change: Change, k: float, low: float, high: float, notes: list
) -> tuple[float, float]:
    blocks = m.blocks
    if change.checkpoint_modules:
        wanted = set(change.checkpoint_modules)
        blocks = tuple(b for b in blocks if b[0] in wanted)
        if not blocks:
            notes.append(
                "checkpointing: none of the chosen modules has a measured activation "
                "figure; the repeated blocks are used"
            )
            blocks = m.blocks
    if blocks:
        held = sum(a for _n, a in blocks) * k
        biggest = max(a for _n, a in blocks) * k
        saved = held - held * CHECKPOINT_KEEP - biggest
        notes.append(
            f"checkpointing {len(blocks)} blocks ({blocks[0][0]} ...): each keeps its "
            "input; one is recomputed at a time in backward"
        )
    else:
        # no per-module figures: the whole of it, in layers estimated from the count
        layers = max(1, round(((m.params or 0) * ASPECT**2 / 12) ** (1 / 3) / ASPECT)) if m.params else 12
        saved = low - low * CHECKPOINT_KEEP - low / layers
        notes.append(
            f"checkpointing without per-module figures: every activation taken as "
            f"inside {layers} checkpointed layers (estimated from the parameter count)"
        )
    saved = max(0.0, saved)
    return low - saved, max(low - saved, high - saved)

"""Quantised weights: what each format stores per weight matrix.

A quantised checkpoint keeps its linear layers' weights packed plus the
scales (and zeros, indices) to unpack them; embeddings, the output head,
norms and biases stay 16-bit. Per matrix of ``in`` × ``out`` weights:

- bitsandbytes 4-bit (NF4/FP4, QLoRA, Dettmers et al. 2023): 4 bits each plus
  one fp32 absmax per block of 64; with double quantisation the absmax is
  8-bit with one fp32 constant per 256 blocks (bitsandbytes docs,
  "4-bit quantization").
- bitsandbytes 8-bit (LLM.int8(), Dettmers et al. 2022): 1 byte each plus
  one fp32 scale per output row (SCB).
- GPTQ (Frantar et al. 2022, AutoGPTQ/GPTQModel layout): ``bits`` per weight
  in int32 words (qweight), zeros packed the same way and fp16 scales per
  group of ``group_size`` input rows (-1: one group), and an int32 group
  index per input row (g_idx).
- AWQ (Lin et al. 2023, AutoAWQ GEMM layout): packed qweight, packed zeros
  and fp16 scales per group; no g_idx.
- fp8 (e4m3, e.g. DeepSeek-V3): 1 byte each and one fp32 scale per
  ``weight_block_size`` block (per tensor when no block size is given).
- MXFP4 (OCP Microscaling Formats v1.0; gpt-oss ships its experts so): 4-bit
  e2m1 values and one 8-bit e8m0 scale per block of 32.

Formats whose packing the planner does not size (compressed-tensors, HQQ,
...) give an unsized scheme: the plan says so and weighs the weights at 16
bits, an upper bound, unless a precision is chosen.

``scheme_from_config(quantization_config)`` reads transformers'
``quantization_config``; ``scheme_for_precision("int4")`` is the
bitsandbytes default when the precision is chosen by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vramscope.core.planner.errors import PlanError

BNB_BLOCK = 64
BNB_DOUBLE_BLOCK = 256
MX_BLOCK = 32
UNSIZED = "unsized"


@dataclass(frozen=True, slots=True)
class QuantScheme:
    method: str  # "bnb-4bit", "bnb-8bit", "gptq", "awq", "fp8"
    bits: int
    group_size: int | None = None  # GPTQ/AWQ input rows per scale; -1 = whole column
    double_quant: bool = False
    block: tuple[int, int] | None = None  # fp8 weight_block_size (out, in)
    skip: tuple[str, ...] = ()  # module names left unquantised (besides the output head)
    from_config: bool = False

    name: str = ""  # the config's quant_method, for an unsized scheme

    @property
    def sized(self) -> bool:
        return self.method != UNSIZED

    @property
    def label(self) -> str:
        if not self.sized:
            return f"{self.name} (not sized)"
        if self.method == "mxfp4":
            return "MXFP4 (4-bit, one 8-bit scale per 32)"
        if self.method.startswith("bnb"):
            return f"bitsandbytes {self.bits}-bit" + (" (double quant)" if self.double_quant else "")
        if self.method in ("gptq", "awq"):
            group = "per column" if self.group_size == -1 else f"group {self.group_size}"
            return f"{self.method.upper()} {self.bits}-bit, {group}"
        block = f", {self.block[0]}×{self.block[1]} blocks" if self.block else ""
        return f"fp8{block}"

    def matrix_bytes(self, n_in: int, n_out: int) -> tuple[int, int]:
        """(packed weight bytes, metadata bytes) of one in × out matrix."""
        n = n_in * n_out
        packed = math.ceil(n * self.bits / 8)
        if self.method == "bnb-4bit":
            blocks = math.ceil(n / BNB_BLOCK)
            meta = (blocks + 4 * math.ceil(blocks / BNB_DOUBLE_BLOCK)) if self.double_quant else 4 * blocks
            return packed, meta
        if self.method == "bnb-8bit":
            return packed, 4 * n_out
        if self.method == "mxfp4":
            return packed, math.ceil(n / MX_BLOCK)
        if self.method in ("gptq", "awq"):
            group = n_in if self.group_size in (None, -1) else self.group_size
            groups = math.ceil(n_in / group)
            zeros = math.ceil(groups * n_out * self.bits / 8)
            scales = 2 * groups * n_out
            g_idx = 4 * n_in if self.method == "gptq" else 0
            return packed, zeros + scales + g_idx
        if self.block:  # fp8 with block scales
            bo, bi = self.block
            return packed, 4 * math.ceil(n_out / bo) * math.ceil(n_in / bi)
        return packed, 4


def scheme_for_precision(precision: str) -> QuantScheme | None:
    """The bitsandbytes scheme a hand-chosen int8/int4 means; fp8 per tensor; else None."""
    if precision == "int4":
        return QuantScheme("bnb-4bit", 4)
    if precision == "int8":
        return QuantScheme("bnb-8bit", 8)
    if precision == "fp8":
        return QuantScheme("fp8", 8)
    return None


def scheme_from_config(q) -> QuantScheme:
    """The scheme of a config.json ``quantization_config``; PlanError when not understood."""
    if not isinstance(q, dict):
        raise PlanError("config", "quantization_config should be a JSON object")
    method = str(q.get("quant_method") or "").lower()
    skip = tuple(
        str(m)
        for m in (q.get("modules_to_not_convert") or q.get("llm_int8_skip_modules") or ())
        if isinstance(m, str)
    )
    # BitsAndBytesConfig.to_dict() may carry only the private _load_in_4bit/_load_in_8bit
    four = q.get("load_in_4bit", q.get("_load_in_4bit"))
    eight = q.get("load_in_8bit", q.get("_load_in_8bit"))
    if method == "bitsandbytes" or four or eight:
        if four:
            return QuantScheme(
                "bnb-4bit",
                4,
                double_quant=bool(q.get("bnb_4bit_use_double_quant")),
                skip=skip,
                from_config=True,
            )
        if eight:
            return QuantScheme("bnb-8bit", 8, skip=skip, from_config=True)
        return QuantScheme(
            UNSIZED, 16, skip=skip, from_config=True, name="bitsandbytes without load_in_4bit/load_in_8bit"
        )
    if method == "mxfp4":
        return QuantScheme("mxfp4", 4, skip=skip, from_config=True)
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit", 4))
        group = q.get("group_size", q.get("q_group_size", 128))
        if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
            raise PlanError("config", f"quantization_config: {method} bits {bits!r} not understood")
        if not isinstance(group, int) or (group <= 0 and group != -1):
            raise PlanError("config", f"quantization_config: group_size {group!r} not understood")
        return QuantScheme(method, bits, group_size=group, skip=skip, from_config=True)
    if method in ("fp8", "fbgemm_fp8"):
        block = q.get("weight_block_size")
        if (
            isinstance(block, (list, tuple))
            and len(block) == 2
            and all(isinstance(b, int) and b > 0 for b in block)
        ):
            return QuantScheme("fp8", 8, block=(block[0], block[1]), skip=skip, from_config=True)
        return QuantScheme("fp8", 8, skip=skip, from_config=True)
    return QuantScheme(UNSIZED, 16, skip=skip, from_config=True, name=method or "(no quant_method)")


def skips(skip: tuple[str, ...], name: str, short: str) -> bool:
    """Whether a per-layer linear ``name`` ("self_attn.q_proj") is among the modules
    left unquantised: plain names ("lm_head", "q_proj") or patterns as gpt-oss writes
    them ("model.layers.*.self_attn")."""
    for s in skip:
        if not s:
            continue
        tail = s.rsplit(".*.", 1)[-1]
        if name == tail or short == tail or name.endswith("." + tail) or name.startswith(tail + "."):
            return True
    return False

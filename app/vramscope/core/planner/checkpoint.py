"""What a checkpoint holds, from its safetensors headers: elements per dtype.

A .safetensors file starts with an 8-byte little-endian header length and a
JSON header naming every tensor's dtype and shape
(https://huggingface.co/docs/safetensors/index#format). Reading only that
header gives the exact parameter count of a checkpoint without torch or
transformers and without reading the weights: locally from the Hugging Face
cache (bounded reads), or on the Hub through huggingface_hub's
``get_safetensors_metadata`` (HTTP range requests for the headers).
"""

from __future__ import annotations

import math
import pathlib
import struct
from dataclasses import replace

from vramscope.agent import json_limits
from vramscope.core.planner.model_shape import ModelShape

MAX_HEADER_BYTES = 100 << 20  # the safetensors library refuses headers above 100 MB
MAX_FILES = 2000
INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
# Bytes per element of each safetensors dtype
DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U64": 8,
    "U32": 4,
    "U16": 2,
    "U8": 1,
    "BOOL": 1,
}
_FLOATS = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")

Counts = tuple[tuple[str, int], ...]  # (safetensors dtype, elements), most first


def file_counts(path: pathlib.Path, into: dict[str, int]) -> bool:
    """Add one file's elements per dtype to ``into``; False when it is not readable
    safetensors."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                return False
            (size,) = struct.unpack("<Q", head)
            if size > MAX_HEADER_BYTES:
                return False
            header = json_limits.loads(fh.read(size))
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(header, dict):
        return False
    for name, entry in header.items():
        if name == "__metadata__" or not isinstance(entry, dict):
            continue
        dtype, shape = entry.get("dtype"), entry.get("shape")
        if (
            not isinstance(dtype, str)
            or not isinstance(shape, list)
            or not all(isinstance(d, int) and d >= 0 for d in shape)
        ):
            return False
        into[dtype] = into.get(dtype, 0) + math.prod(shape)
    return True


def local_counts(snapshot: pathlib.Path) -> Counts | None:
    """Elements per dtype of the safetensors files in a cached snapshot, or None when the
    checkpoint is not all there (an index naming shards not downloaded)."""
    try:
        # as huggingface_hub reads a repo: the index's shards, else model.safetensors (a
        # consolidated.safetensors beside them is the same weights in another layout)
        single = snapshot / SINGLE_NAME
        files = (
            [single]
            if single.is_file()
            else sorted(p for p in snapshot.glob("*.safetensors") if not p.name.startswith("consolidated"))[
                :MAX_FILES
            ]
        )
        index = snapshot / INDEX_NAME
        if index.is_file():
            with open(index, "rb") as fh:
                weight_map = json_limits.loads(fh.read(64 << 20)).get("weight_map")
            wanted = set(weight_map.values()) if isinstance(weight_map, dict) else set()
            files = [snapshot / name for name in sorted(wanted)]
            if not wanted or not all(f.is_file() for f in files):
                return None
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    if not files:
        return None
    counts: dict[str, int] = {}
    for f in files:
        if not file_counts(f, counts):
            return None
    return _sorted(counts)


def _sorted(counts: dict[str, int]) -> Counts:
    return tuple(sorted(counts.items(), key=lambda kv: -kv[1]))


def hub_counts(metadata) -> Counts | None:
    """Elements per dtype from huggingface_hub's SafetensorsRepoMetadata."""
    counts = getattr(metadata, "parameter_count", None)
    if not isinstance(counts, dict) or not counts:
        return None
    return _sorted({str(k): int(v) for k, v in counts.items()})


def stored_bytes(counts: Counts) -> int:
    return sum(n * DTYPE_BYTES.get(dtype, 1) for dtype, n in counts)


def describe(counts: Counts) -> str:
    return ", ".join(f"{n:,} {dtype}" for dtype, n in counts)


def with_checkpoint(shape: ModelShape, counts: Counts | None) -> ModelShape:
    """The shape with the checkpoint's own count: exact per dtype. A quantised checkpoint
    stores packed integers, not parameters: its count stays the config's, its stored
    bytes are noted."""
    if not counts:
        return shape
    total = sum(n for _, n in counts)
    notes = list(shape.notes)
    packed = shape.quantization is not None or any(d not in _FLOATS for d, _ in counts)
    if packed:
        notes.append(
            f"the checkpoint's safetensors headers: {describe(counts)} "
            f"({stored_bytes(counts):,} B stored, packed: the parameter count is the "
            "config's)"
        )
        return replace(shape, checkpoint=counts, notes=tuple(notes))
    if total != shape.params:
        notes.append(
            f"counted from the checkpoint's safetensors headers ({describe(counts)}); "
            f"the config alone gives {shape.params:,}"
        )
    else:
        notes.append(f"the checkpoint's safetensors headers agree: {describe(counts)}")
    return replace(
        shape,
        params=total,
        checkpoint=counts,
        counted_by=f"{shape.counted_by}; checkpoint headers"
        if total == shape.params
        else "the checkpoint's safetensors headers",
        notes=tuple(notes),
    )

"""The allocator's settings: ``PYTORCH_ALLOC_CONF`` (or the build's own reading of it)
and the allocator backend -- expandable segments, the split limit, native or
``cudaMallocAsync`` (PyTorch's "CUDA semantics" notes, "Optimizing memory usage
with PYTORCH_CUDA_ALLOC_CONF").
"""

from __future__ import annotations

import os


def parse_alloc_conf(text: str | None) -> dict[str, str]:
    """'expandable_segments:True,max_split_size_mb:128' -> {'expandable_segments': 'True', ...}."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        key, sep, value = part.partition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _truthy(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() in ("true", "1", "yes")


def read_allocator_settings(torch=None) -> dict:
    """expandable_segments, max_split_size (bytes, None = unlimited), backend, raw conf."""
    raw = None
    if torch is not None:
        getter = getattr(torch._C, "_accelerator_getAllocatorSettings", None)
        if getter is not None:
            try:
                raw = getter()
            except Exception:
                raw = None
    if not raw:
        raw = os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or ""
    conf = parse_alloc_conf(raw)
    backend = conf.get("backend")
    if torch is not None:
        try:
            backend = torch.cuda.get_allocator_backend()
        except Exception:
            pass
    split_mb = conf.get("max_split_size_mb")
    try:
        max_split = int(float(split_mb) * 1024 * 1024) if split_mb else None
    except ValueError:
        max_split = None
    return {
        "backend": backend or "native",
        "expandable_segments": _truthy(conf.get("expandable_segments")) or False,
        "max_split_size": max_split,  # None: unlimited (the default)
        "conf": raw,
    }

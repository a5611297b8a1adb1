"""Diagnostics: pure, Qt-free rules over frames (squatters, fragmentation, leaks,
eval with autograd, checkpointing with use_cache, near-OOM / OOM).

Names are imported lazily so that command modules can import the options
(``vramscope.core.detectors.thresholds``) without pulling in numpy.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Alert": "alert",
    "alerts_to_json": "alert",
    "sort_alerts": "alert",
    "KIND_TITLES": "alert",
    "INFO": "alert",
    "WARNING": "alert",
    "CRITICAL": "alert",
    "Diagnostics": "engine",
    "DiagnosticSettings": "settings",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 -- the names _EXPORTS maps, loaded lazily


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

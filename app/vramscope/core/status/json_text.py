"""JSON that every reader accepts: NaN and ±Infinity become null.

Python's json writes ``NaN`` / ``Infinity`` by default, which is not JSON
(RFC 8259 section 6: "Numeric values that cannot be represented ... such as
Infinity and NaN are not permitted"); jq, browsers and Perfetto refuse the
whole document. A reading that is not a number is "not available": null.
"""

from __future__ import annotations

import json
import math


def finite(value):
    """``value`` with every non-finite float (in dicts, lists, tuples) as None."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {k: finite(v) for k, v in value.items()}
    if kind in (list, tuple):
        return [finite(v) for v in value]
    return value


def dumps(value, **options) -> str:
    """json.dumps, with non-finite numbers as null (never NaN/Infinity)."""
    options.setdefault("default", str)
    try:
        return json.dumps(value, allow_nan=False, **options)  # the common case: one pass
    except ValueError:  # a NaN or an infinity somewhere: walk once to null them
        return json.dumps(finite(value), allow_nan=False, **options)

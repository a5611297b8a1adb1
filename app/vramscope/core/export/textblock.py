"""Render many rows of text at numpy speed.

A day of 8 GPUs x 50 processes is ~35 million values; formatting them one
by one in Python takes minutes. Here a row is a sequence of fields, each
field becomes a small uint8 matrix (one row per output line) plus a mask of
the bytes that are kept; the matrices are laid side by side and the kept
bytes, read row by row, are the text. Fields: literals, integers, numbers
with up to three decimals, and entries of a small table of byte strings.
"""

from __future__ import annotations

import numpy as np

_POW10 = 10 ** np.arange(19, -1, -1, dtype=np.int64)[1:]  # 10^18 .. 10^0 (19 entries)


class Field:
    __slots__ = ("mat", "keep")

    def __init__(self, mat: np.ndarray, keep: np.ndarray):
        self.mat, self.keep = mat, keep


def lit(text: bytes, n: int) -> Field:
    row = np.frombuffer(text, dtype=np.uint8)
    return Field(np.broadcast_to(row, (n, len(row))), np.broadcast_to(True, (n, len(row))))


_TRIPLES = np.frombuffer("".join(f"{i:03d}" for i in range(1000)).encode(), dtype=np.uint8).reshape(1000, 3)
_POW10F = 10.0 ** np.arange(0, 19)


def _digits(a: np.ndarray, width: int | None = None, pad: bool = False) -> Field:
    """Non-negative integers (< 2**53) -> decimal digits (zero-padded to ``width`` when ``pad``).

    Three digits at a time from a 1000-entry table, with float64 arithmetic
    (vectorised, unlike int64 division): for integers below 2**53
    ``floor(a / 1000**k)`` is exact, so every digit is.
    """
    n = len(a)
    top = int(a.max()) if n else 0
    w = max(1, len(str(top))) if width is None else width
    groups = (w + 2) // 3
    af = a if a.dtype == np.float64 else a.astype(np.float64)
    mat = np.empty((n, groups * 3), dtype=np.uint8)
    for k in range(groups):  # most significant triple first
        q = np.floor(af / 1000.0 ** (groups - 1 - k))
        mat[:, 3 * k : 3 * k + 3] = _TRIPLES[(q - 1000.0 * np.floor(q / 1000.0)).astype(np.intp)]
    mat = mat[:, groups * 3 - w :]
    if pad:
        keep = np.ones((n, w), dtype=bool)
    else:
        nd = np.maximum(1, np.searchsorted(_POW10F, af, side="right"))
        keep = np.arange(w)[None, :] >= (w - nd)[:, None]
    return Field(mat, keep)


def _integer_raw(values: np.ndarray, present: np.ndarray | None = None) -> Field:
    """int64 values; rows where ``present`` is False render as nothing."""
    v = np.asarray(values, dtype=np.int64)
    neg = v < 0
    d = _digits(np.abs(v))
    if neg.any():
        sign = np.full((len(v), 1), ord("-"), dtype=np.uint8)
        d = Field(np.concatenate((sign, d.mat), axis=1), np.concatenate((neg[:, None], d.keep), axis=1))
    if present is not None:
        d.keep = d.keep & present[:, None]
    return d


def _number_raw(
    values: np.ndarray, decimals: np.ndarray | int = 0, present: np.ndarray | None = None
) -> Field:
    v = np.asarray(values, dtype=np.float64)
    if present is None:
        present = ~np.isnan(v)
    else:
        present = present & ~np.isnan(v)
    v = np.where(present, v, 0.0)
    dec = np.broadcast_to(np.asarray(decimals, dtype=np.int64), v.shape)
    # round to each row's own number of decimals, then hold it in thousandths (floats:
    # exact for integers below 2**53, and no slow int64 division)
    scaled = np.round(v * 10.0**dec) * 10.0 ** (3 - dec)
    neg = scaled < 0
    scaled = np.abs(scaled)
    whole = np.floor(scaled / 1000.0)
    frac = scaled - 1000.0 * whole
    wf = _digits(whole)
    fmat = _TRIPLES[frac.astype(np.intp)]
    keepf = np.stack((frac != 0, np.fmod(frac, 100.0) != 0, np.fmod(frac, 10.0) != 0), axis=1)
    keepf &= np.arange(3)[None, :] < dec[:, None]
    dot = keepf[:, 0] | keepf[:, 1] | keepf[:, 2]
    n = len(v)
    sign = np.full((n, 1), ord("-"), dtype=np.uint8)
    mat = np.concatenate((sign, wf.mat, np.full((n, 1), ord("."), np.uint8), fmat), axis=1)
    keep = np.concatenate(((neg & present)[:, None], wf.keep, dot[:, None], keepf), axis=1)
    keep &= present[:, None]
    return Field(mat, keep)


def _fixed_raw(values_scaled: np.ndarray, decimals: int) -> Field:
    """Non-negative int64 holding value * 10**decimals -> "int.frac" with all decimals."""
    a = np.asarray(values_scaled, dtype=np.int64)
    whole, frac = _integer_raw(a // 10**decimals), _digits(a % 10**decimals, decimals, pad=True)
    n = len(a)
    dot = np.full((n, 1), ord("."), np.uint8)
    return Field(
        np.concatenate((whole.mat, dot, frac.mat), axis=1),
        np.concatenate((whole.keep, np.ones((n, 1), bool), frac.keep), axis=1),
    )


def integer(values: np.ndarray, present: np.ndarray | None = None) -> Field:
    """int64 values; rows where ``present`` is False render as nothing."""
    return _integer_raw(values, present)


def number(values: np.ndarray, decimals: np.ndarray | int = 0, present: np.ndarray | None = None) -> Field:
    """float values with up to 3 decimals (trailing zeros dropped); per-row ``decimals``."""
    return _number_raw(values, decimals, present)


def fixed(values_scaled: np.ndarray, decimals: int) -> Field:
    """Non-negative int64 holding value * 10**decimals -> "int.frac" with all decimals."""
    return _fixed_raw(values_scaled, decimals)


def join(fields: list[Field]) -> Field:
    """Fields side by side, as one field (render it once, then ``take`` rows of it)."""
    mat = np.concatenate([f.mat for f in fields], axis=1)
    keep = np.concatenate([np.broadcast_to(f.keep, f.mat.shape) for f in fields], axis=1)
    return Field(mat, keep)


def take(field: Field, index: np.ndarray) -> Field:
    return Field(field.mat[index], np.broadcast_to(field.keep, field.mat.shape)[index])


def table(index: np.ndarray, entries: list[bytes]) -> Field:
    """Row i renders ``entries[index[i]]``."""
    w = max((len(e) for e in entries), default=0) or 1
    mat = np.zeros((len(entries), w), dtype=np.uint8)
    keep = np.zeros((len(entries), w), dtype=bool)
    for i, e in enumerate(entries):
        mat[i, : len(e)] = np.frombuffer(e, dtype=np.uint8)
        keep[i, : len(e)] = True
    idx = np.asarray(index, dtype=np.int64)
    return Field(mat[idx], keep[idx])


def render(fields: list[Field]) -> tuple[bytes, np.ndarray]:
    """The text of all rows and the byte offset where each row ends."""
    if not fields or not len(fields[0].mat):
        return b"", np.empty(0, np.int64)
    mat = np.concatenate([f.mat for f in fields], axis=1)
    keep = np.concatenate([np.broadcast_to(f.keep, f.mat.shape) for f in fields], axis=1)
    ends = np.cumsum(keep.sum(axis=1))
    return mat[keep].tobytes(), ends

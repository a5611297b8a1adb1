"""Numbers read from the kernel's text files (DRM fdinfo, sysfs, KFD), bounded.

Those files are written by drivers -- and, in a staged or hostile tree, by
anyone: a 40-digit KiB figure or a 4,000-digit hwmon value must not become
10^43 bytes on screen, an ``OverflowError`` in a division, or a value the
stream's int64 wire cannot carry. A figure beyond any real card is
*implausible*: it is left out (None) and said so, never kept, never clamped
into a plausible-looking number.
"""

from __future__ import annotations

INT64_MAX = (1 << 63) - 1
MAX_BYTES = 1 << 50  # 1 PiB: beyond the memory of any card or unified-memory machine
MAX_DIGITS = 19  # int64's 9.2e18 has 19 digits: a longer figure is never converted
IMPLAUSIBLE = "implausible"  # the word the reasons use
_DIGITS = {10: "0123456789", 16: "0123456789abcdefABCDEF"}


class ImplausibleFigure(ValueError):
    """A number beyond what its file can really hold."""

    def __init__(self, digits: str):
        super().__init__(
            f"a {len(digits)}-digit value" if len(digits) > MAX_DIGITS else f"the value {digits}"
        )


def bounded_int(
    digits: str, scale: int = 1, limit: int = INT64_MAX, base: int = 10, signed: bool = False
) -> int:
    """``int(digits, base) * scale`` where that is at most ``limit``; ImplausibleFigure
    beyond it (before converting a long digit string); ValueError for no number (and
    for a negative one unless ``signed``: sizes, counts and percentages never are)."""
    text = digits.strip()
    if not signed and text.startswith("-"):
        raise ValueError(text[:40])
    body = text[1:] if text[:1] in "+-" else text
    if base == 16 and body[:2].lower() == "0x":
        body = body[2:]
    if len(body.lstrip("0")) > MAX_DIGITS:
        if not set(body) <= set(_DIGITS[base]):
            raise ValueError(text[:40])
        raise ImplausibleFigure(body)
    value = int(text, base) * scale
    if abs(value) > limit:
        raise ImplausibleFigure(text)
    return value


def implausible_reason(what: str, exc: ImplausibleFigure) -> str:
    """One line for ``not_reported``: which figure and why it is not shown."""
    return f"{what} read {exc}: {IMPLAUSIBLE}, left out"

"""Text from strangers, made safe to print on a terminal (one helper for every
human-readable output; ``--json`` escapes through json.dumps already).

Command lines, GPU names, remote hosts' frames, ssh's stderr, Prometheus
labels and agents' strings are written by other users or machines. Written
raw, an ESC or 8-bit CSI (0x9b) drives the terminal (ECMA-48 control
functions), BEL rings, ``\\r`` / ``\\n`` overwrite or forge whole lines, and
the Unicode bidirectional controls (Unicode UAX #9: U+202A-202E embeddings
and overrides, U+2066-2069 isolates, U+200E/F and U+061C marks) reorder what
the reader sees ("Trojan Source", CVE-2021-42574). Each such character is
shown as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``); everything else,
including non-ASCII letters, is kept.

``visible(text)`` escapes a field (a newline in it is escaped too: one field
is one line); ``visible_lines(text)`` escapes a whole report but keeps its
own line breaks. Backslashes are not doubled, so both are idempotent.
"""

from __future__ import annotations

import re

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
LINE_SEPARATORS = "\u2028\u2029"
# C0 (U+0000-001F), DEL, C1 (U+0080-009F), the bidi controls and U+2028/9
_OTHERS = "\x7f-\x9f" + BIDI_CONTROLS + LINE_SEPARATORS
_FIELD = re.compile(f"[\x00-\x1f{_OTHERS}]")
_REPORT = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHERS}]")  # the same, but "\n"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text) -> str:
    """One field for a terminal line: every control and bidi character escaped."""
    if text is None:
        return ""
    text = text if isinstance(text, str) else str(text)
    return _FIELD.sub(_escape, text)


def visible_fields(value):
    """``value`` (decoded JSON: dicts, lists, strings, numbers) with every string in it
    escaped as ``visible`` does: a stranger's data made safe for any report built
    from it. Keys are kept (they are looked up, not shown)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: visible_fields(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_fields(v) for v in value]
    return value


def visible_lines(text: str) -> str:
    """A whole report: the same escapes, but its own newlines kept."""
    return _REPORT.sub(_escape, text)


def say(stream, text: str, flush: bool = True, lines: bool = False) -> None:
    """Write one message line to a terminal stream, escaped (a newline in it too);
    with ``lines`` a report whose own line breaks are kept."""
    stream.write((visible_lines(text) if lines else visible(text)) + "\n")
    if flush:
        stream.flush()

"""The agents' part of a stream delta (protocol version 3): per agent, only
the fields that changed.

An agent's report (``AgentReport``: its devices, models, modules, allocator
settings, recent events...) moves a little every second -- its time, its
step, the events new since the previous frame -- and is otherwise the same.
Version 2 sent every report whole in each delta's ``top`` whenever any of it
moved (~1.5 KB an agent a second); version 3 sends, in the delta's ``ag``,
the frame's agents in order, each as

    {"k": [pid, start_time], "s": {field: value...}?, "d": [field...]?}

``s`` the fields whose wire value changed (written as the codec writes them,
core/stream/codec.py), ``d`` those back to their default (the codec leaves a
default out of the wire), an agent not named gone; a new agent, or every agent
of a frame in which two share a key, travels whole as ``{"w": {...}}``. ``ag``
is left out when no agent changed, came or went. The reader
(``AgentsHeld``) rebuilds a changed report from the one it holds: the fields
not sent keep their values (the same objects).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from vramscope.core.samples import AgentReport
from vramscope.core.stream import codec
from vramscope.core.stream.protocol import Wire

AGENTS = "agents"  # the Frame field (and the wire key of a whole frame)
_KEY_FIELDS = ("pid", "start_time")


def _key(wire: Wire) -> tuple[object, object]:
    return (wire.get("pid"), wire.get("start_time"))


def diff(prev: dict[tuple[object, object], Wire] | None, now: list[Wire]) -> list[Wire] | None:
    """The ``ag`` entry from the previous frame's agents (key -> wire dict, in
    order; None: not known) to this frame's (their wire dicts); None when
    nothing changed, came or went."""
    keys = [_key(w) for w in now]
    if prev is None or len(set(keys)) != len(keys):
        return [{"w": w} for w in now]
    if keys == list(prev) and all(prev[k] is w or prev[k] == w for k, w in zip(keys, now)):
        return None
    out: list[Wire] = []
    for key, wire in zip(keys, now):
        was = prev.get(key)
        if was is None:
            out.append({"w": wire})
            continue
        entry: Wire = {"k": list(key)}
        changed = {name: value for name, value in wire.items() if name not in was or was[name] != value}
        if changed:
            entry["s"] = changed
        gone = [name for name in was if name not in wire]
        if gone:
            entry["d"] = gone
        out.append(entry)
    return out


def held_wires(now: list[Wire]) -> dict[tuple[object, object], Wire] | None:
    """What the writer keeps of this frame's agents for the next ``diff``."""
    keys = [_key(w) for w in now]
    if len(set(keys)) != len(keys):
        return None
    return dict(zip(keys, now))


_FIELDS = frozenset(codec._fields(AgentReport)[0])


class AgentsHeld:
    """The reader's side: the frame's agents, changed by each ``ag`` entry."""

    def __init__(self, reports: Iterable[AgentReport] = ()) -> None:
        self.reports = tuple(reports)

    def apply(self, entry: object) -> tuple[AgentReport, ...]:
        """The frame's agents after ``entry``; TypeError/ValueError when it does
        not fit (the caller drops what it holds)."""
        if type(entry) is not list or len(entry) > codec.MAX_ITEMS:
            raise TypeError("ag must be a list")
        held = {r.identity: r for r in self.reports}
        out = []
        for item in entry:
            if type(item) is not dict:
                raise TypeError("an agent's delta must be an object")
            if "w" in item:
                out.append(codec.from_wire(AgentReport, item["w"]))
                continue
            key = item.get("k")
            if type(key) is not list or len(key) != 2:
                raise TypeError("an agent's key must be [pid, start_time]")
            was = held.get(tuple(key))
            if was is None:
                raise ValueError("a delta of an agent not held")
            out.append(_changed(was, item.get("s", {}), item.get("d", [])))
        self.reports = tuple(out)
        return self.reports


def _changed(was: AgentReport, sent: object, defaulted: object) -> AgentReport:
    if type(sent) is not dict or type(defaulted) is not list:
        raise TypeError("an agent's s must be an object, its d a list")
    names = [*sent, *defaulted]
    if not _FIELDS.issuperset(names) or any(n in _KEY_FIELDS for n in names):
        raise ValueError("an agent's delta names a field it cannot change")
    if not names:
        return was
    # the fields sent, checked as the codec checks a whole report; the rest are the defaults
    partial = codec.from_wire(AgentReport, {**sent, "pid": was.pid, "start_time": was.start_time})
    return dataclasses.replace(was, **{name: getattr(partial, name) for name in names})

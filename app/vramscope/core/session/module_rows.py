"""Per-module figures in a session file: their own table, so files without
them (and files written before they were recorded) are unchanged and open.

- ``agent_modules``  one row per agent process (``processes.id``), sampled
  step and module: its bytes (NULL = not available) and why. A step's rows
  are written once, when the monitor first sees that step's figures.
"""

from __future__ import annotations

import sqlite3

from vramscope.core.session.schema import present
from vramscope.core.agent_figures.module_figures import FIGURES, ModuleFigures

MODULE_DDL = f"""
CREATE TABLE IF NOT EXISTS agent_modules (t REAL NOT NULL, proc INTEGER NOT NULL,
    step INTEGER NOT NULL, name TEXT NOT NULL, parent TEXT, device TEXT,
    {", ".join(FIGURES)}, shared INTEGER, why TEXT,
    PRIMARY KEY (proc, step, name, device)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agent_modules_t ON agent_modules (t);
"""
_COLUMNS = ("t", "step", "name", "parent", "device", *FIGURES, "shared", "why")


class ModuleRows:
    """Writes an agent's modules when their sampled step is new (inside the writer's transaction)."""

    def __init__(self):
        self._written: dict[int, frozenset] = {}  # proc id -> the (device, step)s written last

    def write(self, db: sqlite3.Connection, t: float, proc_id: int, modules) -> None:
        steps = frozenset((m.device, m.measured_step) for m in modules)
        if not modules or self._written.get(proc_id) == steps:
            return
        self._written[proc_id] = steps
        db.executemany(
            f"INSERT OR REPLACE INTO agent_modules VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})",
            [
                (
                    t,
                    proc_id,
                    m.measured_step,
                    m.name,
                    m.parent,
                    m.device,
                    *(getattr(m, f) for f in FIGURES),
                    int(m.shared),
                    m.why,
                )
                for m in modules
            ],
        )

    def forget(self) -> None:
        """After a rollback: what was cached may not be in the file."""
        self._written.clear()


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _select(db: sqlite3.Connection) -> str:
    """_COLUMNS as this file has them (NULL for a figure added after it was written)."""
    return present({r[1] for r in db.execute("PRAGMA table_info(agent_modules)")}, _COLUMNS)


def modules_at(db: sqlite3.Connection, proc_id: int, t: float) -> tuple[ModuleFigures, ...]:
    """The latest modules an agent process had at time ``t`` (per device); () where the
    file has none, or its table cannot be read."""
    try:
        rows = db.execute(
            f"SELECT {_select(db)} FROM agent_modules WHERE proc = ? AND t <= ? "
            "AND t = (SELECT MAX(t) FROM agent_modules WHERE proc = ? AND t <= ?) ORDER BY name",
            (proc_id, t, proc_id, t),
        ).fetchall()
    except sqlite3.Error:
        return ()
    return tuple(_figures(r) for r in rows if isinstance(r[2], str) and _int(r[1]) is not None)


def all_modules(db: sqlite3.Connection, t0: float, t1: float) -> list[tuple[float, int, ModuleFigures]]:
    """(time, proc id, figures) of every module row written in [t0, t1), in time order."""
    try:
        rows = db.execute(
            f"SELECT proc, {_select(db)} FROM agent_modules WHERE t >= ? AND t < ? ORDER BY t, proc, step",
            (t0, t1),
        ).fetchall()
    except sqlite3.Error:
        return []
    return [(r[1], r[0], _figures(r[1:])) for r in rows if isinstance(r[3], str) and _int(r[2]) is not None]


def _figures(r) -> ModuleFigures:
    t, step, name, parent, device, *rest = r
    figures, (shared, why) = rest[: len(FIGURES)], rest[len(FIGURES) :]
    return ModuleFigures(
        name=name,
        parent=parent if isinstance(parent, str) else None,
        measured_step=step,
        device=device if isinstance(device, str) else None,
        shared=bool(shared),
        why=why if isinstance(why, str) else None,
        **{f: _int(v) for f, v in zip(FIGURES, figures)},
    )

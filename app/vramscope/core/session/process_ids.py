"""The ``processes`` table of a session file as it is written: one row per
(host, pid, start time), its facts (user, name, command, ...) merged in as
they become known, its id cached for the sample rows that name it."""

from __future__ import annotations

import sqlite3

from vramscope.core.session.schema import PROCESS_FACTS, json_column

WHERE_SEEN = object()  # id_of without a host: the host whose GPU last showed the process


class ProcessIds:
    """The ids of the processes written so far (inside the writer's transaction)."""

    def __init__(self):
        self._ids: dict[tuple, int] = {}  # (host, pid, start time) -> processes.id
        self._host: dict[tuple, str | None] = {}  # (pid, start time) -> host last seen on
        self._known: dict[int, tuple] = {}  # processes.id -> its facts as written

    def id_of(self, db: sqlite3.Connection, pid: int, start_time, info, t: float, host=WHERE_SEEN) -> int:
        """The processes.id of (host, pid, start time); ``host`` left out (an agent,
        an alert, an action) is the host whose GPU last showed the process."""
        if host is WHERE_SEEN:
            host = self._host.get((pid, start_time))
        else:
            self._host[(pid, start_time)] = host
        key = (host, pid, start_time)
        pid_id = self._ids.get(key)
        facts = None
        if info is not None:
            container = info.container.as_dict() if info.container is not None else None
            facts = (info.user, info.name, info.command, info.ppid, json_column(container), info.ns_pid)
        empty = (None,) * len(PROCESS_FACTS)
        if pid_id is None:
            f = facts or empty
            cur = db.execute(
                f"INSERT INTO processes (pid, start_time, {', '.join(PROCESS_FACTS)}, first_seen, "
                f"host) VALUES (?, ?, {', '.join('?' * len(PROCESS_FACTS))}, ?, ?)",
                (pid, start_time, *f, t, host),
            )
            pid_id = self._ids[key] = cur.lastrowid
            self._known[pid_id] = f
        elif facts is not None and self._known.get(pid_id) != facts:
            old = self._known.get(pid_id) or empty
            merged = tuple(n if n is not None else o for n, o in zip(facts, old))
            if merged != old:
                db.execute(
                    f"UPDATE processes SET {', '.join(c + '=?' for c in PROCESS_FACTS)} WHERE id=?",
                    (*merged, pid_id),
                )
            self._known[pid_id] = merged
        return pid_id

    def reload(self, db: sqlite3.Connection) -> None:
        """The ids cached for rows of a rolled-back transaction no longer exist:
        reload them from what the file holds."""
        self._ids.clear()
        self._host.clear()
        self._known.clear()
        try:
            for pid_id, host, pid, start, *facts in db.execute(
                f"SELECT id, host, pid, start_time, {', '.join(PROCESS_FACTS)} FROM processes"
            ):
                self._ids[(host, pid, start)] = pid_id
                self._host[(pid, start)] = host
                self._known[pid_id] = tuple(facts)
        except sqlite3.Error:
            pass  # nothing cached: the next frame inserts fresh rows (ids stay consistent)

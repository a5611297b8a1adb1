"""What a session file holds beside the GPU and process samples: the agents'
samples and details, their events (and inference servers'), the alerts
raised and the actions taken -- read through SalvagingReads, so damage
skips rows instead of failing the read."""

from __future__ import annotations

import math

from vramscope.core.session.columns import finite, index, loads, moment, text_or_none
from vramscope.core.session.salvage import SalvagingReads
from vramscope.core.session.schema import AGENT_COLUMNS, BUCKET_COLUMNS


class RecordedEvents:
    """The agent_samples, agent_info, events, alerts and actions tables."""

    def __init__(self, reads: SalvagingReads):
        self._reads = reads

    def agent_rows(self, t0: float = -math.inf, t1: float = math.inf) -> list[dict]:
        cols = ("t", "proc", "device", "gpu_uuid", "step") + AGENT_COLUMNS + BUCKET_COLUMNS
        rows = self._reads.ranged(
            f"SELECT {self._reads.select('agent_samples', cols, 'agent samples')} FROM agent_samples "
            "WHERE t >= ? AND t < ? ORDER BY t, proc, device",
            t0,
            t1,
            "agent samples",
        )
        rows = self._reads.valid(
            rows, lambda r: moment(r[0]) and index(r[1]) and isinstance(r[2], str), "agent samples"
        )
        numbers = AGENT_COLUMNS + BUCKET_COLUMNS
        return [
            {
                "t": r[0],
                "proc": r[1],
                "device": r[2],
                "gpu_uuid": text_or_none(r[3]),
                "step": r[4] if index(r[4]) else None,
                **{c: (int(v) if finite(v) else None) for c, v in zip(numbers, r[5:])},
            }
            for r in rows
        ]

    def agent_info(self) -> dict[int, dict]:
        out = {}
        for proc, host, rank, local_rank, world, settings in self._reads.query(
            "SELECT "
            + self._reads.select(
                "agent_info",
                ("proc", "hostname", "rank", "local_rank", "world_size", "allocator_settings"),
                "agent details",
            )
            + " FROM agent_info",
            (),
            "agent details",
        ):
            settings = loads(settings)
            out[proc] = {
                "hostname": text_or_none(host),
                "rank": rank if index(rank) else None,
                "local_rank": local_rank if index(local_rank) else None,
                "world_size": world if index(world) else None,
                "allocator_settings": settings if isinstance(settings, dict) else {},
            }
        return out

    def events(self, t0: float = -math.inf, t1: float = math.inf) -> list[dict]:
        rows = self._reads.ranged(
            "SELECT t, proc, kind, data FROM events WHERE t >= ? AND t < ? ORDER BY t, id",
            t0,
            t1,
            "agent events",
        )
        rows = self._reads.valid(rows, lambda r: moment(r[0]) and isinstance(r[2], str), "agent events")
        return [{"t": t, "proc": p, "kind": k, "data": _dict(loads(d))} for t, p, k, d in rows]

    def alerts(self) -> list[dict]:
        rows = self._reads.valid(
            self._reads.query(
                "SELECT t, kind, severity, gpu, proc, title, detail FROM alerts ORDER BY t, id", (), "alerts"
            ),
            lambda r: moment(r[0]) and isinstance(r[1], str),
            "alerts",
        )
        return [
            {"t": t, "kind": k, "severity": s, "gpu": g, "proc": p, "title": ti, "detail": _dict(loads(d))}
            for t, k, s, g, p, ti, d in rows
        ]

    def actions(self) -> list[dict]:
        rows = self._reads.valid(
            self._reads.query(
                "SELECT t, action, proc, pid, start_time, result, detail FROM actions ORDER BY t, id",
                (),
                "actions",
            ),
            lambda r: moment(r[0]) and isinstance(r[1], str),
            "actions",
        )
        return [
            {
                "t": t,
                "action": a,
                "proc": p,
                "pid": pid,
                "start_time": st,
                "result": r,
                "detail": _dict(loads(d)),
            }
            for t, a, p, pid, st, r, d in rows
        ]


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}

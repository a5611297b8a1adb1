"""Inference servers: explain the pool, show the traffic, never cry wolf.

A serving engine preallocates its KV cache at start-up (core/processes/servers.py has the
engines, the options that size the pool and their metrics), so a server holding
90 % of the card at 0 % SM is working as designed. This rule says so, once per
server and GPU, as INFO: what the pool is, the option that sized it, and --
where the server's local metrics endpoint answers -- KV-cache use and running /
waiting requests; an idle server says for how long.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramscope.core.detectors.alert import INFO, Alert, AlertKind
from vramscope.core.detectors.naming import proc_name
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.detectors.squatter import process_is_idle
from vramscope.core.samples import EXITED, Frame
from vramscope.core.processes.servers import ServerKind, ServerState, pool_text, server_of
from vramscope.core.units import fmt_bytes, fmt_duration

IDLE_SAID_AFTER = 60.0  # seconds without requests (or SM) before "idle for" is said


@dataclass
class _State:
    last_seen: float
    idle_since: float | None = None


def traffic_text(state: ServerState | None) -> str | None:
    """'2 running, 0 waiting, KV cache 41 %' from the metrics, None without them."""
    if state is None:
        return None
    parts = []
    if state.running is not None:
        parts.append(f"{state.running:.0f} running")
    if state.waiting is not None:
        parts.append(f"{state.waiting:.0f} waiting")
    if state.kv_cache_usage is not None:
        parts.append(f"KV cache {state.kv_cache_usage:.0%} used")
    return ", ".join(parts) or None


class ServerRule:
    def __init__(self):
        self._state: dict[tuple, _State] = {}

    def update(
        self, frame: Frame, settings: DiagnosticSettings, active_pids: frozenset[int] = frozenset()
    ) -> list[Alert]:
        now = frame.time
        groups: dict[tuple, list] = {}
        for gpu, proc in frame.all_processes():
            found = server_of(frame, proc)
            if found is None:
                continue
            if proc.info is not None and (proc.info.visibility == EXITED or proc.info.status == "zombie"):
                continue  # an exited server holding memory is the squatter rule's
            kind, state = found
            owner = state.pid if state is not None else proc.pid
            groups.setdefault((gpu.index, owner), []).append((gpu, proc, kind, state))
        alerts = []
        for key, members in groups.items():
            st = self._state.get(key)
            if st is None:
                st = self._state[key] = _State(last_seen=now)
            st.last_seen = now
            gpu, _, kind, state = members[0]
            busy = state.busy if state is not None else None
            if busy is None:  # no metrics: fall back on SM
                idles = [process_is_idle(p, gpu, settings, active_pids) for _, p, _, _ in members]
                busy = None if any(i is None for i in idles) else not all(idles)
            if busy is False:
                if st.idle_since is None:
                    st.idle_since = now
            else:
                st.idle_since = None
            alerts.append(self._explain(frame, members, kind, state, st, now))
        forget_stale(self._state, now, settings)
        return alerts

    def _explain(
        self, frame, members, kind: ServerKind, state: ServerState | None, st: _State, now: float
    ) -> Alert:
        gpu = members[0][0]
        procs = [p for _, p, _, _ in members]
        main = next(
            (p for p in procs if state is not None and p.pid == state.pid),
            max(procs, key=lambda p: p.used or 0),
        )
        used_known = [p.used for p in procs if p.used is not None]
        used = sum(used_known) if used_known else None
        cmdline = main.info.cmdline if main.info is not None else None
        pool = state.pool if state is not None and state.pool else pool_text(kind, cmdline)
        who = proc_name(main, gpu)
        idle_for = now - st.idle_since if st.idle_since is not None else None
        traffic = traffic_text(state)
        if idle_for is not None and idle_for >= IDLE_SAID_AFTER:
            what = f"idle for {fmt_duration(idle_for)}, holds {fmt_bytes(used)}"
        elif traffic:
            what = f"holds {fmt_bytes(used)}; {traffic}"
        else:
            what = f"holds {fmt_bytes(used)}, its preallocated pool"
        share = (
            f" ({used / gpu.total:.0%} of {fmt_bytes(gpu.total)})" if used is not None and gpu.total else ""
        )
        evidence = [
            f"{kind.title} server: {who}",
            f"holds {fmt_bytes(used)}{share}: {kind.pool}",
            f"sized by {pool}",
        ]
        if state is not None and state.pid not in [p.pid for p in procs]:
            evidence.append(
                f"its server process (launcher): pid {state.pid}"
                + (f", serving on port {state.port}" if state.port else "")
            )
        if len(procs) > 1:
            evidence.append(
                "its processes on this GPU: " + ", ".join(f"{p.pid} {fmt_bytes(p.used)}" for p in procs)
            )
        if state is not None and state.metrics_url:
            if traffic and state.metrics_error is None:
                evidence.append(f"{traffic} (from {state.metrics_url})")
            else:
                evidence.append(
                    f"metrics at {state.metrics_url}: "
                    f"{state.metrics_error or 'no KV-cache or request figures'}"
                )
        elif kind.metrics_path is None:
            evidence.append(f"{kind.title} publishes no Prometheus metrics; idleness is read from SM")
        if idle_for is not None:
            evidence.append(
                f"no requests{' and 0 % SM' if traffic is None else ''} for {fmt_duration(idle_for)}"
            )
        fix = (
            f"Nothing is wrong: {kind.title} keeps this pool whether or not requests arrive, "
            "so the card looks full by design and other processes get only what is left. "
            f"To leave more for others, {kind.shrink_hint}; if nobody uses the server any "
            "more, stop it."
        )
        return Alert(
            kind=AlertKind.INFERENCE_SERVER,
            severity=INFO,
            gpu=gpu.index,
            pid=main.pid,
            start_time=state.start_time if state is not None else main.identity[1],
            since=st.idle_since,
            message=f"{kind.title}: {who} {what}",
            evidence=tuple(evidence),
            fix=fix,
            frees=used,
            data={
                "server": kind.key,
                "pool": pool,
                "used": used,
                "idle_seconds": idle_for,
                "kv_cache_usage": state.kv_cache_usage if state else None,
                "running": state.running if state else None,
                "waiting": state.waiting if state else None,
                "pids": [p.pid for p in procs],
            },
        )

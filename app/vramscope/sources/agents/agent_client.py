"""The monitor's side of the agent socket: discover, connect, pull, report.

``AgentClient`` runs on the sampler thread (as an enricher) -- never on the
GUI thread. Each poll it scans the runtime directories for agent sockets,
handshakes with new ones, and pulls everything after its cursor, so a slow
or restarted monitor loses nothing the agent's ring still holds. When an
agent's process ends, its final dump (written at exit) is read instead.

Each report is attached to the GPU process it comes from by the handshake's
pid + start time (sources/agents/agent_matching.py). Agents in another PID
namespace are reported but matched to no process (their pids mean something
else here) -- unless a GPU process here has that PID inside that namespace
(NSpid and the handshake's PID namespace): then they are reported under its
host PID. Agents inside a GPU process's container are looked for through
/proc/<pid>/root (sources/agents/container_agents.py), or their directory is
shared with the host.

Pulled items update each agent's state (sources/agents/agent_state.py) and become
AgentReport values on the frame and series in the store (the layout is
core/agent_figures/agent_series.py's, shared with the demo and with reopened sessions). An agent that speaks another protocol version is not
dropped: it is reported with the mismatch as its error, so the window and
``vramscope status`` say why its figures are missing.
"""

from __future__ import annotations

import logging
import os
import stat
import time

from vramscope.agent import protocol

from vramscope.agent.serving import paths
from vramscope.agent.protocol import Op
from vramscope.core.agent_figures.agent_keys import series_key as agent_key  # noqa: F401 (the store key, for callers)
from vramscope.core.safe_io import bounded_read
from vramscope.core.samples import AgentReport, Frame
from vramscope.sources.agents import agent_dir_listing, agent_input, container_agents
from vramscope.sources.agents.agent_connection import AgentConnection, VersionRefused, exchange, mismatch_text
from vramscope.sources.agents.agent_matching import attached
from vramscope.sources.agents.agent_reports import report_of
from vramscope.sources.agents.agent_state import AgentState, ingest

log = logging.getLogger(__name__)

MAX_PULLS_PER_POLL = 16
PASS_BUDGET = 1.0  # seconds one pass waits on all agents together (connects, replies)
QUIET_PAUSE, QUIET_PAUSE_MAX = 2.0, 30.0  # a socket that said nothing: tried again after
STALE_SWEEP_EVERY = 30.0


class AgentClient:
    """Discovers agents and turns what they send into AgentReports (an enricher)."""

    def __init__(
        self,
        store=None,
        dirs: list[str] | None = None,
        timeout: float = PASS_BUDGET,
        keep_ended: float = 600.0,
        final_max_age: float = 3600.0,
        clock=time.time,
    ):
        self.store = store
        self._dirs = dirs
        self.timeout = timeout  # seconds per pass, all agents together
        self._quiet: dict[str, tuple[float, float]] = {}  # socket path -> (retry at, pause)
        self._owners: dict[str, int] = {}  # socket path -> the uid that must listen there
        self.keep_ended = keep_ended
        self.final_max_age = final_max_age
        self._clock = clock
        self._agents: dict[tuple, AgentState] = {}  # (pid, start_ticks) -> state
        self._finals_seen: set[str] = set()
        self._last_sweep = 0.0
        self._pidns = paths.pid_namespace()
        self.errors = 0
        self._in_containers: dict[tuple, int] = {}  # (pid inside, its namespace) -> host pid
        self._listings = agent_dir_listing.Listings()

    # -- the enricher ---------------------------------------------------------------------
    def __call__(self, frame: Frame) -> Frame:
        self.poll(frame)
        return self.enrich(frame)

    def close(self) -> None:
        for a in self._agents.values():
            if a.conn is not None:
                a.conn.close()
                a.conn = None

    def dirs(self) -> list[str]:
        return list(self._dirs) if self._dirs is not None else paths.candidate_dirs()

    # -- polling -----------------------------------------------------------------------------
    def poll(self, frame: Frame | None = None) -> None:
        """``frame``: the pass being enriched; its processes in containers are looked
        inside for agents too. Waits on agents at most ``timeout`` seconds in all."""
        now = self._clock()
        deadline = time.monotonic() + self.timeout
        sockets, finals = self._scan(frame, now)
        live = {
            key: path
            for key, path in sockets.items()
            if (state := self._agents.get(key)) is None or state.ended_at is None
        }
        connected = [
            self._agents[key] for key in live if key in self._agents and self._agents[key].conn is not None
        ]
        dropped = self._pull_rounds(connected, deadline, retry=True)
        fresh = self._handshake(
            [
                key
                for key in live
                if key in dropped or key not in self._agents or self._agents[key].conn is None
            ],
            live,
            deadline,
        )
        self._pull_rounds(fresh, deadline)
        for key, state in list(self._agents.items()):
            if state.ended_at is None and key not in sockets:
                if key in finals:
                    self._read_final(key, finals[key])
                if state.conn is not None:
                    state.conn.close()
                    state.conn = None
                state.ended_at = now
            if state.ended_at is not None and now - state.ended_at > self.keep_ended:
                del self._agents[key]
        for key, path in finals.items():
            if key not in self._agents and path not in self._finals_seen and key not in sockets:
                try:
                    if now - os.lstat(path).st_mtime <= self.final_max_age:
                        self._read_final(key, path)
                except OSError:
                    pass
                self._finals_seen.add(path)

    def _scan(self, frame: Frame | None, now: float) -> tuple[dict, dict]:
        """({key: socket path}, {key: final dump path}) in every directory agents use:
        only sockets and regular files by those names (never through a link)."""
        sockets: dict[tuple, str] = {}
        finals: dict[tuple, str] = {}
        self._owners = {}
        contained = container_agents.contained_processes(frame)
        self._in_containers = {
            (ns_pid, container_agents.namespace_of(hp)): hp for hp, ns_pid in contained.items()
        }
        here = [(d, None, None) for d in self.dirs()]
        inside = [
            (d, owner, container_agents.pids_inside(hp, contained))
            for hp in contained
            for d, owner in container_agents.agent_dirs(hp)
        ]
        sweep = now - self._last_sweep > STALE_SWEEP_EVERY
        for directory, owner, admitted in here + inside:
            try:
                if owner is None:
                    paths.secure_dir(directory, create=False)
                elif not container_agents.dir_is_private(directory, owner):
                    continue
                # our own directories: read again only when changed (sources/agents/agent_dir_listing.py)
                entries = (
                    self._listings.read(directory) if owner is None else agent_dir_listing.read(directory)
                )
            except OSError:
                continue  # missing, or not ours: never read from it
            for pid, ticks, suffix, path, mode in entries:
                if admitted is not None and pid not in admitted:
                    continue  # seen through a container's root, but not one of its processes
                if suffix == paths.SOCKET_SUFFIX and stat.S_ISSOCK(mode):
                    sockets[(pid, ticks)] = path
                    self._owners[path] = os.getuid() if owner is None else owner
                elif suffix == paths.FINAL_SUFFIX and stat.S_ISREG(mode):
                    finals[(pid, ticks)] = path
            if owner is None and sweep:
                paths.remove_stale(directory)
        if sweep:
            self._last_sweep = now
        return sockets, finals

    def _handshake(self, keys: list, where: dict, deadline: float) -> list[AgentState]:
        """Connect to these agents and say hello to all of them at once; the states
        that answered, connected."""
        now = time.monotonic()
        conns = []
        for key in keys:
            path = where[key]
            if self._quiet.get(path, (0.0, 0.0))[0] > now:
                continue  # it accepted and said nothing lately: not every pass
            try:
                conns.append((key, path, AgentConnection(path, self._owners.get(path))))
            except Exception as exc:  # noqa: BLE001 - one bad agent never stops the others
                self._refused(key, path, exc, silent=isinstance(exc, TimeoutError))
        if not conns:
            return []  # (no selector for nobody)
        request = {
            "op": Op.HELLO,
            "protocol": protocol.PROTOCOL_VERSION,
            "supported": sorted(protocol.SUPPORTED_VERSIONS),
        }
        # half of what is left: a pass with silent sockets still has time to pull from
        # the agents that did answer
        until = min(deadline, now + max(0.0, deadline - now) / 2)
        replies = exchange([(conn, request) for _, _, conn in conns], until)
        fresh = []
        for (key, path, conn), reply in zip(conns, replies):
            try:
                if isinstance(reply, Exception):
                    raise reply
                hello = self._accept_hello(reply)
            except Exception as exc:  # noqa: BLE001
                conn.close()
                self._refused(key, path, exc, silent=isinstance(exc, TimeoutError))
                continue
            self._quiet.pop(path, None)
            state = self._agents.get(key)
            if state is None or state.hello.start_ticks != hello.start_ticks:
                state = self._agents[key] = AgentState(path=path, hello=hello)
            elif state.conn is not None:
                state.conn.close()
            state.conn = conn
            state.error = None
            fresh.append(state)
        return fresh

    @staticmethod
    def _accept_hello(reply: dict) -> agent_input.Hello:
        if reply.get("ok") is not True:
            supported = reply.get("supported")
            if isinstance(supported, list) and protocol.PROTOCOL_VERSION not in supported:
                raise VersionRefused(mismatch_text(", ".join(str(v)[:8] for v in supported[:8])))
            raise ConnectionError(agent_input.text(reply.get("error")) or "handshake refused")
        try:
            return agent_input.hello(reply)
        except ValueError as exc:
            raise ConnectionError(f"a handshake vramscope cannot use: {exc}") from None

    def _refused(self, key: tuple, path: str, exc: Exception, silent: bool = False) -> None:
        """An agent that could not be reached or answered nothing usable this pass.
        ``silent``: it never answered its handshake (tried again after a growing pause)."""
        self.errors += 1
        log.debug("agent %s: %s", path, exc)
        if isinstance(exc, ConnectionRefusedError) and self._owners.get(path) == os.getuid():
            paths.remove_if_dead(path, *key)  # gone without clean-up (os._exit): not listed again
        if silent:
            pause = min(QUIET_PAUSE_MAX, max(QUIET_PAUSE, self._quiet.get(path, (0.0, 0.0))[1] * 2))
            self._quiet[path] = (time.monotonic() + pause, pause)
        state = self._agents.get(key)
        if state is None and isinstance(exc, VersionRefused):
            # shown, not dropped: the window and `status` say why there are no figures
            state = self._agents[key] = AgentState(
                path=path,
                hello=agent_input.Hello(
                    pid=key[0], start_ticks=key[1], start_time=paths.start_time_from_ticks(key[1])
                ),
            )
        if state is not None:
            state.error = str(exc) if isinstance(exc, VersionRefused) else f"{type(exc).__name__}: {exc}"
            if state.conn is not None:
                state.conn.close()
                state.conn = None

    def _pull_rounds(self, states: list[AgentState], deadline: float, retry: bool = False) -> set:
        """Pull from all these agents at once, again from those that have more (up to
        MAX_PULLS_PER_POLL rounds). With ``retry``, the keys of agents whose idle
        connection was dropped (the agent drops connections idle for a few seconds,
        agent/serving/server.py) are returned to be reconnected in this pass."""
        dropped = set()
        active = list(states)
        for round_ in range(MAX_PULLS_PER_POLL):
            if not active:
                break
            for state in active:
                if state.host_pid is None:  # in another PID namespace: its PID here, once on a GPU
                    where = (state.hello.pid, state.hello.pid_namespace)
                    state.host_pid = self._in_containers.get(where)
            replies = exchange(
                [(state.conn, {"op": Op.PULL, "cursor": state.cursor}) for state in active], deadline
            )
            more = []
            for state, reply in zip(active, replies):
                key = next(k for k, s in self._agents.items() if s is state)
                if isinstance(reply, Exception):
                    if retry and round_ == 0 and not isinstance(reply, TimeoutError):
                        state.conn.close()
                        state.conn = None
                        dropped.add(key)
                    else:
                        self._refused(key, state.path, reply)
                    continue
                if reply.get("ok") is not True:
                    self._refused(
                        key,
                        state.path,
                        ConnectionError(agent_input.text(reply.get("error")) or "pull refused"),
                    )
                    continue
                if reply.get("dropped") is True:
                    state.dropped = True
                items = reply.get("items")
                ingest(state, items if isinstance(items, list) else [], self.store)
                cursor = agent_input.integer(reply.get("cursor"))
                if cursor is not None and cursor >= state.cursor:
                    state.cursor = cursor
                if reply.get("more") is True:
                    more.append(state)
            active = more
        return dropped

    def _read_final(self, key: tuple, path: str) -> None:
        self._finals_seen.add(path)
        try:
            data = bounded_read.read_json(path, paths.FINAL_MAX_BYTES)
            hello, items = agent_input.hello(data["hello"]), data["items"]
            if not isinstance(items, list):
                raise TypeError("items are not a list")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.errors += 1
            log.debug("final dump %s unreadable: %s", path, exc)
            return
        state = self._agents.get(key)
        if state is None:
            state = self._agents[key] = AgentState(path=None, hello=hello)
        fresh = [
            it
            for it in items
            if isinstance(it, dict)
            and agent_input.integer(it.get("seq")) is not None
            and it["seq"] > state.cursor
        ]
        ingest(state, fresh, self.store)
        if fresh:
            state.cursor = max(it["seq"] for it in fresh)
        state.ended_at = self._clock()

    # -- reports and matching -----------------------------------------------------------------------
    def reports(self) -> list[AgentReport]:
        out = []
        for state in self._agents.values():
            out.append(report_of(state))
            state.new_events = []
            state.peaks = {}
            state.since_report.clear()
        return out

    def enrich(self, frame: Frame) -> Frame:
        """The frame with this pass's agent reports, each attached to its process
        (sources/agents/agent_matching.py)."""
        reports = self.reports()
        if not reports:
            return frame
        return attached(frame, reports, list(self._agents.values()), self._pidns, self.store)

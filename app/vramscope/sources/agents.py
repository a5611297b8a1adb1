"""The monitor's side of the agent socket: discover, connect, pull, report.

``AgentClient`` runs on the sampler thread (as an enricher) -- never on the
GUI thread. Each poll it scans the runtime directories for agent sockets,
handshakes with new ones, and pulls everything after its cursor, so a slow
or restarted monitor loses nothing the agent's ring still holds. When an
agent's process ends, its final dump (written at exit) is read instead.

Identity is the handshake's pid + start time, checked against the process
NVML reports (psutil's start time, or /proc when there is none); a process
is marked as an agent process only on that match -- never "the first
socket found". Agents in another PID namespace are reported but matched to
no process (their pids mean something else here) -- unless a GPU process
here has that PID inside that namespace (NSpid and the handshake's PID
namespace): then they are reported under its host PID. Agents inside a GPU
process's container are looked for through /proc/<pid>/root
(sources/container_agents.py), or their directory is shared with the host.

Pulled samples become AgentReport values on the frame and series in the
store (the layout is core/agent_series.py's, shared with the demo and with
reopened sessions). An agent that speaks another protocol version is not
dropped: it is reported with the mismatch as its error, so the window and
``vramscope status`` say why its figures are missing.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import time

from vramscope.agent import paths, protocol
from vramscope.agent.protocol import AGENT_BUCKETS, DEVICE_METRICS, PEAK_BOUND, PHASES_MEASURED, Bucket, EventKind, ItemKind, Op
from vramscope.agent.protocol import series_key as agent_key  # noqa: F401 (the store key, for callers)
from vramscope.core import agent_series
from vramscope.sources import container_agents
from vramscope.sources.agent_connection import AgentConnection, VersionRefused  # noqa: F401
from vramscope.core.samples import (
    AGENT_ENDED, AgentBuckets, AgentDevice, AgentEvent, AgentReport, Frame, bare_uuid,
)

log = logging.getLogger(__name__)

RECENT_EVENTS = 50
MAX_PULLS_PER_POLL = 16
START_TIME_TOLERANCE = 0.05  # seconds; both sides compute btime + ticks / CLK_TCK
STALE_SWEEP_EVERY = 30.0


def _norm_uuid(uuid: str | None) -> str | None:
    return bare_uuid(uuid)


@dataclasses.dataclass
class _Agent:
    path: str | None
    hello: dict
    cursor: int = 0
    conn: AgentConnection | None = None
    latest: dict | None = None  # the newest sample item
    step: int | None = None
    new_events: list = dataclasses.field(default_factory=list)
    recent: collections.deque = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=RECENT_EVENTS))
    dropped: bool = False
    ended_at: float | None = None
    error: str | None = None
    bad_items: int = 0
    host_pid: int | None = None  # its PID here, when it lives in another PID namespace

    @property
    def pid(self) -> int:
        if self.host_pid is not None:
            return self.host_pid
        return int(self.hello.get("pid", -1))

    @property
    def start_time(self) -> float | None:
        return self.hello.get("start_time")


class AgentClient:
    """Discovers agents and turns what they send into AgentReports (an enricher)."""

    def __init__(self, store=None, dirs: list[str] | None = None, timeout: float = 0.5,
                 keep_ended: float = 600.0, final_max_age: float = 3600.0, clock=time.time):
        self.store = store
        self._dirs = dirs
        self.timeout = timeout
        self.keep_ended = keep_ended
        self.final_max_age = final_max_age
        self._clock = clock
        self._agents: dict[tuple, _Agent] = {}  # (pid, start_ticks) -> state
        self._finals_seen: set[str] = set()
        self._last_sweep = 0.0
        self._pidns = paths.pid_namespace()
        self.errors = 0
        self._in_containers: dict[tuple, int] = {}  # (pid inside, its namespace) -> host pid

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
        inside for agents too."""
        now = self._clock()
        sockets: dict[tuple, str] = {}
        finals: dict[tuple, str] = {}
        contained = container_agents.contained_processes(frame)
        self._in_containers = {(ns_pid, container_agents.namespace_of(hp)): hp
                               for hp, ns_pid in contained.items()}
        here = [(d, None) for d in self.dirs()]
        inside = [d for hp in contained for d in container_agents.agent_dirs(hp)]
        for directory, owner in here + inside:
            try:
                if owner is None:
                    paths.secure_dir(directory, create=False)
                elif not container_agents.dir_is_private(directory, owner):
                    continue
                entries = list(os.scandir(directory))
            except OSError:
                continue  # missing, or not ours: never read from it
            for entry in entries:
                parsed = paths.parse_name(entry.name)
                if parsed is None:
                    continue
                pid, ticks, suffix = parsed
                (sockets if suffix == paths.SOCKET_SUFFIX else finals)[(pid, ticks)] = entry.path
            if owner is None and now - self._last_sweep > STALE_SWEEP_EVERY:
                paths.remove_stale(directory)
        if now - self._last_sweep > STALE_SWEEP_EVERY:
            self._last_sweep = now
        for key, path in sockets.items():
            state = self._agents.get(key)
            if state is not None and state.ended_at is not None:
                continue
            try:
                self._service(key, path, state)
            except Exception as exc:  # one bad agent never stops the others
                self.errors += 1
                log.debug("agent %s: %s", path, exc)
                state = self._agents.get(key)
                if state is None and isinstance(exc, VersionRefused):
                    # shown, not dropped: the window and `status` say why there are no figures
                    state = self._agents[key] = _Agent(path=path, hello={
                        "pid": key[0], "start_ticks": key[1],
                        "start_time": paths.start_time_from_ticks(key[1])})
                if state is not None:
                    state.error = str(exc) if isinstance(exc, VersionRefused) else f"{type(exc).__name__}: {exc}"
                    if state.conn is not None:
                        state.conn.close()
                        state.conn = None
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
                    if now - os.stat(path).st_mtime <= self.final_max_age:
                        self._read_final(key, path)
                except OSError:
                    pass
                self._finals_seen.add(path)

    def _service(self, key: tuple, path: str, state: _Agent | None) -> None:
        if state is not None and state.conn is not None:
            try:
                self._pull(state)
                return
            except (ConnectionError, OSError):
                # the agent drops connections idle for a few seconds (agent/server.py):
                # at a long sampling interval, pull again on a fresh one
                state.conn.close()
                state.conn = None
        if state is None or state.conn is None:
            conn = AgentConnection(path, self.timeout)
            try:
                hello = conn.request({"op": Op.HELLO, "protocol": protocol.PROTOCOL_VERSION,
                                      "supported": sorted(protocol.SUPPORTED_VERSIONS)})
            except Exception:
                conn.close()
                raise
            if not hello.get("ok"):
                conn.close()
                if "supported" in hello and protocol.PROTOCOL_VERSION not in (hello.get("supported") or ()):
                    raise VersionRefused(protocol.mismatch_text(
                        ", ".join(str(v) for v in hello["supported"])))
                raise ConnectionError(hello.get("error", "handshake refused"))
            if state is None or state.hello.get("start_ticks") != hello.get("start_ticks"):
                state = self._agents[key] = _Agent(path=path, hello=hello)
            state.conn = conn
            state.error = None
        self._pull(state)

    def _pull(self, state: _Agent) -> None:
        if state.host_pid is None:  # in another PID namespace: its PID here, once it is on a GPU
            where = (hello_pid(state), state.hello.get("pid_namespace"))
            state.host_pid = self._in_containers.get(where)
        for _ in range(MAX_PULLS_PER_POLL):
            reply = state.conn.request({"op": Op.PULL, "cursor": state.cursor})
            if not reply.get("ok"):
                raise ConnectionError(reply.get("error", "pull refused"))
            if reply.get("dropped"):
                state.dropped = True
            self._ingest(state, reply.get("items") or [])
            cursor = reply.get("cursor")
            if isinstance(cursor, int) and cursor >= state.cursor:
                state.cursor = cursor
            if not reply.get("more"):
                break

    def _read_final(self, key: tuple, path: str) -> None:
        self._finals_seen.add(path)
        try:
            with open(path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
            hello, items = data["hello"], data["items"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.errors += 1
            log.debug("final dump %s unreadable: %s", path, exc)
            return
        state = self._agents.get(key)
        if state is None:
            state = self._agents[key] = _Agent(path=None, hello=hello)
        fresh = [it for it in items if isinstance(it, dict) and isinstance(it.get("seq"), int)
                 and it["seq"] > state.cursor]
        self._ingest(state, fresh)
        if fresh:
            state.cursor = max(it["seq"] for it in fresh)
        state.ended_at = self._clock()

    # -- items -> state + store ---------------------------------------------------------------
    def _ingest(self, state: _Agent, items: list) -> None:
        for item in items:
            try:
                kind = item.get("kind")
                if kind == ItemKind.SAMPLE:
                    self._ingest_sample(state, item)
                elif kind == ItemKind.STEP:
                    self._ingest_step(state, item)
                elif kind == ItemKind.EVENT:
                    ev = AgentEvent(kind=str(item["event"]), time=float(item["t"]),
                                    data=dict(item.get("data") or {}))
                    state.new_events.append(ev)
                    state.recent.append(ev)
                    self._record(agent_series.event_points(state.pid, state.start_time, ev.kind, ev.time,
                                                           ev.data))
            except (KeyError, TypeError, ValueError, AttributeError):
                state.bad_items += 1

    def _ingest_sample(self, state: _Agent, item: dict) -> None:
        t = float(item["t"])
        if state.latest is None or t >= float(state.latest.get("t", 0)):
            state.latest = item
        if isinstance(item.get("step"), int):
            state.step = max(state.step or 0, item["step"])
        self._record(agent_series.sample_points(state.pid, state.start_time, t, item.get("devices") or ()))

    def _ingest_step(self, state: _Agent, item: dict) -> None:
        t = float(item["t"])
        step = int(item["step"])
        state.step = max(state.step or 0, step)
        devices = item.get("devices") or {}
        first = devices[sorted(devices)[0]] if devices else {}
        phases = item.get("phases") if isinstance(item.get("phases"), dict) else None
        times = item.get("phase_times") if isinstance(item.get("phase_times"), dict) else {}
        ev = AgentEvent(kind=EventKind.STEP, time=t, data={
            "step": step, "duration": item.get("duration"), "devices": devices or None,
            # the first device's figures, flat (None where the step was not measured)
            "peak_allocated": first.get("peak_allocated"), "allocated_after": first.get("allocated_after"),
            # device -> {"forward", "backward", "optimizer"}: allocated bytes at each phase's end
            "phases": phases, "phase_order": list(item.get("phase_order") or ()),
            "phase_times": dict(times),
            # device -> phase -> [peak, upper bound or None: exact] (agent/sampling.py)
            "phase_peaks": item.get("phase_peaks") if isinstance(item.get("phase_peaks"), dict) else None})
        state.new_events.append(ev)
        self._record(agent_series.step_points(state.pid, state.start_time, t, ev.data))

    def _record(self, points) -> None:
        if self.store is not None:
            agent_series.record(self.store, points)

    # -- reports and matching -----------------------------------------------------------------------
    def reports(self) -> list[AgentReport]:
        out = []
        for state in self._agents.values():
            out.append(_report(state))
            state.new_events = []
        return out

    def enrich(self, frame: Frame) -> Frame:
        reports = self.reports()
        if not reports:
            return frame
        matches: dict[tuple[int, int], AgentReport] = {}  # (gpu index, pid) -> report
        for report in reports:
            if self._same_namespace(report):  # identity is exact: an ended run matches nothing
                for gpu in frame.gpus:
                    for proc in gpu.processes:
                        if self._is_process(report, proc):
                            matches[(gpu.index, proc.pid)] = report
        gpus = []
        final_reports = {id(r): r for r in reports}
        for gpu in frame.gpus:
            procs = []
            changed = False
            for proc in gpu.processes:
                report = matches.get((gpu.index, proc.pid))
                if report is not None:
                    proc = dataclasses.replace(proc, has_agent=True)
                    changed = True
                    r = final_reports[id(report)]
                    final_reports[id(report)] = _with_outside(r, gpu, proc, frame.gpus)
                procs.append(proc)
            gpus.append(dataclasses.replace(gpu, processes=tuple(procs)) if changed else gpu)
        reports = [final_reports[id(r)] for r in reports]
        for r in reports:  # outside PyTorch is the monitor's bucket: at the frame's time
            self._record(agent_series.sample_points(r.pid, r.start_time, frame.time, [
                {"device": d.device, "buckets": {Bucket.OUTSIDE_PYTORCH: d.buckets.outside_pytorch}}
                for d in r.devices if d.buckets is not None and d.buckets.outside_pytorch is not None]))
        return dataclasses.replace(frame, gpus=tuple(gpus), agents=tuple(reports))

    def _same_namespace(self, report: AgentReport) -> bool:
        state = self._find(report)
        if state is not None and state.host_pid is not None:
            return True  # mapped to its host PID already
        ns = state.hello.get("pid_namespace") if state else None
        return ns is None or self._pidns is None or ns == self._pidns

    def _find(self, report: AgentReport) -> _Agent | None:
        for state in self._agents.values():
            if state.pid == report.pid and state.start_time == report.start_time:
                return state
        return None

    def _is_process(self, report: AgentReport, proc) -> bool:
        if proc.pid != report.pid:
            return False
        start = proc.info.start_time if proc.info is not None else None
        if start is not None and report.start_time is not None:
            return abs(start - report.start_time) < START_TIME_TOLERANCE
        state = self._find(report)  # no psutil start time: ask /proc directly
        ticks = state.hello.get("start_ticks") if state else None
        return ticks is not None and paths.start_ticks(proc.pid) == ticks


def hello_pid(state: _Agent) -> int:
    """The PID the agent gave (inside its own namespace)."""
    return int(state.hello.get("pid", -1))


def _report(state: _Agent) -> AgentReport:
    hello = state.hello
    sample = state.latest or {}
    devices = []
    for dev in sample.get("devices") or ():
        b = dev.get("buckets")
        note = dev.get("buckets_note")
        buckets = AgentBuckets(**{k: _int(b.get(k)) for k in AGENT_BUCKETS},
                               note=note if isinstance(note, str) else None) if isinstance(b, dict) else None
        devices.append(AgentDevice(
            device=str(dev.get("device")), gpu_uuid=dev.get("uuid"),
            allocated=_int(dev.get("allocated")), reserved=_int(dev.get("reserved")),
            active=_int(dev.get("active")), inactive_split=_int(dev.get("inactive_split")),
            requested=_int(dev.get("requested")), peak_allocated=_int(dev.get("peak_allocated")),
            peak_allocated_bound=_int(dev.get(PEAK_BOUND)),
            num_alloc_retries=_int(dev.get("num_alloc_retries")), num_ooms=_int(dev.get("num_ooms")),
            alloc_count=_int(dev.get("alloc_count")), free_count=_int(dev.get("free_count")),
            buckets=buckets, total=_int(dev.get("total"))))
    error = state.error
    if error is None and state.ended_at is not None:
        error = AGENT_ENDED
    return AgentReport(
        pid=state.pid, start_time=state.start_time, hostname=hello.get("hostname"),
        time=sample.get("t"), rank=hello.get("rank"), local_rank=hello.get("local_rank"),
        world_size=hello.get("world_size"), step=state.step, devices=tuple(devices),
        allocator_settings=dict(sample.get("settings") or {}), events=tuple(state.new_events),
        connected=state.ended_at is None and state.conn is not None, error=error,
        recent_events=tuple(state.recent), dropped=state.dropped,
        models=tuple(m for m in (sample.get("models") or ()) if isinstance(m, dict)),
        phases_measured=_share((sample.get("agent") or {}).get(PHASES_MEASURED)))


def _share(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 else None


def _int(v) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _with_outside(report: AgentReport, gpu, proc, all_gpus) -> AgentReport:
    """outside PyTorch = NVML process memory - reserved, on the device that is this GPU."""
    cuda = [d for d in report.devices if d.device.startswith("cuda")]
    target = None
    # the device is this GPU, or the MIG slice of it the process runs on
    here = {_norm_uuid(gpu.uuid), _norm_uuid(proc.mig_uuid)} - {None}
    for d in cuda:
        if _norm_uuid(d.gpu_uuid) in here:
            target = d
    if target is None and len(cuda) == 1:
        known = {_norm_uuid(u) for g in all_gpus for u in (g.uuid, *(s.uuid for s in g.slices)) if u}
        if _norm_uuid(cuda[0].gpu_uuid) not in known:  # torch gave no usable uuid: one device, one GPU
            on = [g for g in all_gpus if any(p.pid == proc.pid for p in g.processes)]
            if len(on) == 1:
                target = cuda[0]
    if target is None or proc.used is None or target.reserved is None or target.buckets is None:
        return report
    outside = max(0, proc.used - target.reserved)
    new_dev = dataclasses.replace(target, buckets=dataclasses.replace(target.buckets, outside_pytorch=outside))
    return dataclasses.replace(report, devices=tuple(new_dev if d is target else d for d in report.devices))


def _device_fields(d: AgentDevice) -> dict:
    """An AgentDevice in the wire format of a sample's device (a CPU device's unknown
    allocator figures are left out: they are not gaps, the CPU has no allocator)."""
    out: dict = {"device": d.device}
    for metric in DEVICE_METRICS:
        value = getattr(d, metric)
        if value is not None or d.device.startswith("cuda"):
            out[metric] = value
    if d.buckets is not None:
        out["buckets"] = d.buckets.as_dict()
    return out


def record_reports(store, frame: Frame) -> Frame:
    """Series for sources whose frames already carry AgentReports (demo, replayed sessions).

    The live client records every pulled sample at its own time; a source
    that only has the latest report per frame records it at the frame's time
    here (steps and OOMs from the report's new events), through the same
    module (core/agent_series.py), so the agent panel reads one layout
    whatever the source.
    """
    for r in frame.agents:
        agent_series.record(store, agent_series.sample_points(
            r.pid, r.start_time, frame.time, [_device_fields(d) for d in r.devices]))
        for ev in r.events:
            agent_series.record(store, agent_series.event_points(r.pid, r.start_time, ev.kind, ev.time,
                                                                 ev.data))
    return frame

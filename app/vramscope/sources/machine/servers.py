"""Inference servers on this machine: found from the command line, the process
tree and the listening port; their local Prometheus metrics read off the
sampling thread.

An enricher (Frame -> Frame) for every front end: each GPU process whose own
command line, or an ancestor's (a launcher with engine/worker children), names
a serving engine (core/processes/servers.py) -- or that listens on a port whose
``/metrics`` speaks an engine's metric names -- becomes part of a
``ServerState`` on ``frame.servers``. Metrics are fetched from 127.0.0.1 only
(never another address), with a short timeout, on one worker thread; a frame
never waits for them. KV-cache use and running/waiting requests are recorded
as store series (``server_key``), so the window and sessions keep them.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import urllib.parse
from concurrent.futures import Future

import psutil

from vramscope.core.flow.background import DaemonWorker
from vramscope.core.safe_io.bounded_http import HttpError, get
from vramscope.core.processes.process_text import capped_cmdline
from vramscope.core.samples import REMOTE_SOURCES, VISIBLE, Frame, ProcessIdentity
from vramscope.core.processes.servers import (
    BY_PORT,
    SERVER_KINDS,
    SERVER_SERIES,
    ServerKind,
    ServerState,
    listen_port,
    pool_text,
    read_metrics,
    recognise,
    server_key,
)

log = logging.getLogger(__name__)

SCRAPE_PERIOD = 2.0  # seconds between metric reads of one server
TIMEOUT = 0.5  # seconds for a whole HTTP request (a trickling port is cut there)
MAX_BYTES = 4 << 20  # a metrics page larger than this is cut
ANCESTOR_DEPTH = 4  # how far up the process tree a launcher is looked for
LOOPBACK = ("127.0.0.1", "::1", "0.0.0.0", "::", "")  # addresses reachable as localhost
METRIC_PREFIXES = {
    "vllm:": "vllm",
    "sglang:": "sglang",
    "tgi_": "tgi",
    "llamacpp:": "llama.cpp",
    "nv_trt_llm_": "triton",
    "nv_inference_": "triton",
}


@dataclasses.dataclass
class _Server:
    pid: int
    start_time: float | None
    kind: ServerKind
    cmdline: tuple[str, ...] | None
    pids: set = dataclasses.field(default_factory=set)
    port: int | None = None  # where /metrics answered (or the one to try)
    url: str | None = None
    values: dict = dataclasses.field(default_factory=dict)
    error: str | None = None
    answered: float | None = None


def fetch_text(url: str, timeout: float = TIMEOUT) -> str:
    """GET a metrics page from localhost (refuses anything else), within
    ``timeout`` seconds in all and MAX_BYTES (core/safe_io/bounded_http.py)."""
    host = urllib.parse.urlparse(url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"only localhost is read, not {host}")
    reply = get(url, deadline=timeout, max_bytes=MAX_BYTES)
    if reply.status != 200:
        raise HttpError(f"HTTP {reply.status}")
    return reply.body.decode("utf-8", "replace")


def parse_metrics(kind: ServerKind, text: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    return read_metrics(kind, text_string_to_metric_families(text))


def kind_from_metrics(text: str) -> ServerKind | None:
    by_key = {k.key: k for k in SERVER_KINDS}
    for line in text.splitlines()[:2000]:
        name = line.split(" ", 2)[2] if line.startswith("# ") and len(line.split(" ", 2)) > 2 else line
        for prefix, key in METRIC_PREFIXES.items():
            if name.startswith(prefix):
                return by_key[key]
    return None


def listening_ports(pid: int) -> list[tuple[str, int]]:
    """(address, port) this process listens on over TCP; [] when not readable."""
    try:
        proc = psutil.Process(pid)
        conns = (
            proc.net_connections(kind="tcp")
            if hasattr(proc, "net_connections")
            else proc.connections(kind="tcp")
        )
    except (psutil.Error, OSError):
        return []
    return sorted({(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN and c.laddr})


class ServerEnricher:
    def __init__(
        self,
        store=None,
        fetch=fetch_text,
        ports=listening_ports,
        period: float = SCRAPE_PERIOD,
        clock=time.monotonic,
    ):
        self.store = store
        self._fetch = fetch
        self._ports = ports
        self._period = period
        self._clock = clock
        # GPU process -> (server pid, start time, kind, cmdline), None when it is no server
        self._owner: dict[ProcessIdentity, tuple | None] = {}
        self._found: dict[ProcessIdentity, tuple] = {}  # what port probes found (worker thread)
        self._servers: dict[tuple, _Server] = {}
        self._pool: DaemonWorker | None = None
        self._pending: Future | None = None
        self._last_scrape = -float("inf")
        self._probed: set[ProcessIdentity] = set()
        self.ancestor_reads = 0  # ancestors' command lines read, for tests and benches

    # -- the sampler thread -----------------------------------------------------------
    def __call__(self, frame: Frame) -> Frame:
        if frame.simulated or frame.source in REMOTE_SOURCES or not frame.gpus:
            return frame
        seen: dict[tuple, _Server] = {}
        unknown = []
        walked: dict = {}  # this pass's ancestors, read once
        for _, proc in frame.all_processes():  # new ones: a psutil walk
            info = proc.info
            if info is None or info.visibility != VISIBLE:
                continue
            spec = self._spec(proc.identity, info, walked)
            if spec is None:
                unknown.append(proc.identity)
                continue
            key = spec[:2]
            srv = self._servers.get(key)
            if srv is None:
                srv = self._servers[key] = _Server(*spec)
            if key not in seen:
                srv.pids = set()
                seen[key] = srv
            srv.pids.add(proc.pid)
        for key in [k for k in self._servers if k not in seen]:
            del self._servers[key]
        live = {p.identity for _, p in frame.all_processes()}
        for ident in [i for i in self._owner if i not in live]:
            del self._owner[ident]
        self._probed &= live
        now = self._clock()
        if (self._pending is None or self._pending.done()) and now - self._last_scrape >= self._period:
            todo = list(seen.values())
            probe = [i for i in unknown if i not in self._probed]
            if todo or probe:
                self._last_scrape = now
                self._pending = self._executor().submit(self._work, todo, probe)
        states = tuple(self._state(s) for s in seen.values())
        if self.store is not None:
            for s in states:
                for metric in SERVER_SERIES:
                    self.store.record(server_key(s.pid, s.start_time, metric), frame.time, getattr(s, metric))
        return dataclasses.replace(frame, servers=states) if states else frame

    def _spec(self, ident: ProcessIdentity, info, walked: dict) -> tuple | None:
        if ident in self._found:
            self._owner[ident] = self._found.pop(ident)
        if ident not in self._owner:
            pid, start = ident
            kind = recognise(info.cmdline, info.name)
            self._owner[ident] = (pid, start, kind, info.cmdline) if kind else self._ancestor(pid, walked)
        return self._owner[ident]

    def _ancestor(self, pid: int, walked: dict):
        """The serving engine among ``pid``'s ANCESTOR_DEPTH ancestors, or None.
        ``walked`` (one pass's) keeps what each ancestor led to, by (pid, levels
        left): a thousand workers of one launcher read the launcher once."""
        path = []
        found = None
        try:
            proc = psutil.Process(pid)
            for level in range(ANCESTOR_DEPTH):
                proc = proc.parent()
                if proc is None or proc.pid <= 1:
                    break
                step = (proc.pid, ANCESTOR_DEPTH - level)
                if step in walked:
                    found = walked[step]
                    break
                path.append(step)
                self.ancestor_reads += 1
                with proc.oneshot():
                    cmd = capped_cmdline(proc.cmdline()) or ()
                    kind = recognise(cmd, proc.name())
                    if kind is not None:
                        found = proc.pid, proc.create_time(), kind, cmd
                        break
        except (psutil.Error, OSError):
            return None
        walked.update(dict.fromkeys(path, found))
        return found

    def _state(self, s: _Server) -> ServerState:
        v = s.values
        return ServerState(
            pid=s.pid,
            start_time=s.start_time,
            kind=s.kind.key,
            pids=tuple(sorted(s.pids)),
            port=s.port,
            pool=pool_text(s.kind, s.cmdline),
            metrics_url=s.url,
            kv_cache_usage=v.get("kv_cache_usage"),
            running=v.get("running"),
            waiting=v.get("waiting"),
            metrics_time=s.answered,
            metrics_error=s.error,
        )

    # -- the worker thread ------------------------------------------------------------
    def _executor(self) -> DaemonWorker:
        if self._pool is None:  # a daemon thread: a slow port never holds up exit
            self._pool = DaemonWorker("vramscope-servers")
        return self._pool

    def _work(self, servers: list[_Server], probe: list[ProcessIdentity]) -> None:
        for s in servers:
            try:
                self._scrape(s)
            except Exception as exc:  # a server must never break sampling
                s.error = f"could not read metrics: {exc}"
        for ident in probe:  # each a psutil read of its sockets
            self._probed.add(ident)
            try:
                self._probe(ident)
            except Exception:
                log.debug("port probe of pid %s failed", ident[0], exc_info=True)

    def _candidate_ports(self, s: _Server) -> list[int]:
        named = listen_port(s.cmdline, s.kind)
        ports = []
        for pid in [s.pid, *sorted(s.pids)]:
            for addr, port in self._ports(pid):
                if addr in LOOPBACK and port not in ports:
                    ports.append(port)
        if named in ports:
            ports.remove(named)
            ports.insert(0, named)
        elif named is not None and not ports:
            ports.append(named)
        return ports[:4]

    def _scrape(self, s: _Server) -> None:
        if s.kind.metrics_path is None:
            s.error = f"{s.kind.title} has no metrics endpoint"
            return
        ports = [s.port] if s.port is not None and s.error is None else self._candidate_ports(s)
        if not ports:
            s.error = "it listens on no local port"
            return
        last = None
        for port in ports:
            url = f"http://127.0.0.1:{port}{s.kind.metrics_path}"
            try:
                text = self._fetch(url)
            except Exception as exc:
                last = f"no answer ({exc.__class__.__name__}: {exc})"
                continue
            values = parse_metrics(s.kind, text)
            if all(v is None for v in values.values()):
                last = "no KV-cache or request metrics on the page" + (
                    " (SGLang needs --enable-metrics)" if s.kind.key == "sglang" else ""
                )
                continue
            s.port, s.url, s.values, s.error, s.answered = port, url, values, None, time.time()
            return
        s.url = s.url or f"http://127.0.0.1:{ports[0]}{s.kind.metrics_path}"
        s.values, s.error = {}, last

    def _probe(self, ident: ProcessIdentity) -> None:
        """A GPU process nobody recognised: a local port whose /metrics (or whose
        number) belongs to a serving engine makes it one."""
        pid, start = ident
        for addr, port in self._ports(pid)[:4]:
            if addr not in LOOPBACK:
                continue
            kind = None
            try:
                kind = kind_from_metrics(self._fetch(f"http://127.0.0.1:{port}/metrics"))
            except Exception:
                kind = BY_PORT.get(port) if port in (11434,) else None  # Ollama has no /metrics
            if kind is not None:
                self._found[ident] = (pid, start, kind, None)
                return

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

"""Several machines as one source: `vramscope --host a --host b`.

Each host has its own ssh connection (sources/remote/host_stream.py); a sampling
pass waits (at most an interval and a second, or 4 s) until each connected host
has sent a frame since the previous pass, takes the newest of each and lays
their GPUs side by side: frames taken as they come, not an interval old (a pass
on a grid of its own fell just before each host's frame, a whole interval
late). Every GPU keeps its host and its own index on that host; ``index`` is
made unique here (and stable: a host that drops and comes back gets the
same numbers), so stores, series and tables need no host key. A host that is
down keeps its last GPUs, marked with the error, until it is back.
"""

from __future__ import annotations

import dataclasses
import time

from vramscope.core.end_process.actions import READ_ONLY_REFUSAL, ActionResult, ProcessActions, ProcessSummary
from vramscope.core.samples import PROMETHEUS_SOURCE, SSH_SOURCE, Frame, GpuSample, HostState
from vramscope.core.session.schema import META_HOST_GPU_BLOCK, META_HOSTS
from vramscope.core.stream.codec import from_wire
from vramscope.core.stream.settings_request import settings_message
from vramscope.sources.remote.host_stream import CONNECTED, HostView, RemoteHost

HOST_BLOCK = 64  # GPU indices per host (NVML numbers a machine's GPUs from 0)
# seconds a pass waits at most for the hosts' next frames: under the sampler's 5 s join at
# its stop (core/flow/sampler.py), so the pass under way ends with the command
PACE_WAIT = 4.0


class HostsSource:
    name = SSH_SOURCE
    simulated = False
    paced = True  # ``sample`` waits for the hosts' frames: the pipeline takes them as they come

    def __init__(
        self,
        targets,
        *,
        interval: float = 1.0,
        demo: bool = False,
        ssh: str | None = None,
        start: bool = True,
        **host_options,
    ):
        targets = list(dict.fromkeys(targets))  # a host named twice is watched once
        self.hosts = [RemoteHost(t, interval=interval, demo=demo, ssh=ssh, **host_options) for t in targets]
        self._position = {host.host: n for n, host in enumerate(self.hosts)}
        self.interval = interval
        self._taken: dict[str, int] = {}  # host -> its frames read at the previous pass
        self._owner: dict[tuple[int, float | None], RemoteHost] = {}
        if start:
            for host in self.hosts:
                host.start()

    def set_interval(self, seconds: float) -> None:
        """A new interval (the window's settings, through its sampler process): each
        host's stream takes it (one request; a host that does not know it goes on as it
        was), a host connected later is started with it, and the passes wait for it."""
        if seconds == self.interval:
            return
        self.interval = float(seconds)
        for host in self.hosts:
            host.interval = self.interval
            host.tell(settings_message(interval=self.interval))

    def global_index(self, host: str, index: int) -> int:
        return self._position[host] * HOST_BLOCK + index

    def _wait_for_frames(self) -> float:
        """Until every connected host has sent a frame since the previous pass, at
        most an interval and a second, or PACE_WAIT (a host that stops sending holds
        no pass longer); the seconds waited."""
        began = time.monotonic()
        deadline = began + min(self.interval + 1.0, PACE_WAIT)
        for host in self.hosts:
            after = self._taken.get(host.host)
            if after is not None and host.snapshot(take=False).state == CONNECTED:
                host.arrivals.wait_after(
                    after,
                    deadline - time.monotonic(),
                    lambda host=host: host.sending(),
                )
        for host in self.hosts:
            self._taken[host.host] = host.arrivals.count
        return time.monotonic() - began

    def sample(self, now: float) -> Frame:
        now += self._wait_for_frames()
        gpus: list[GpuSample] = []
        agents: list = []
        states: list[dict] = []
        owner: dict = {}
        simulated = False
        for host in self.hosts:
            view = host.snapshot()
            frame = view.frame
            error = view.error
            if frame is not None and frame.error and view.state == CONNECTED:
                error = frame.error  # e.g. no driver there
            states.append(
                HostState(
                    view.host,
                    view.state,
                    error,
                    view.retry_in,
                    view.remote_version,
                    len(frame.gpus) if frame else 0,
                    view.alerts,
                )
            )
            if frame is None:
                continue
            live = view.state == CONNECTED
            simulated = simulated or frame.simulated
            for gpu in frame.gpus:
                mine = gpu.host_index if gpu.host is not None else gpu.index
                if live:
                    marked = gpu
                else:  # the last GPUs seen, kept with the reason instead of figures
                    marked = GpuSample(
                        index=gpu.index,
                        name=gpu.name,
                        uuid=gpu.uuid,
                        pci_bus_id=gpu.pci_bus_id,
                        total=gpu.total,
                        error=view.error or view.state,
                    )
                gpus.append(
                    dataclasses.replace(
                        marked, index=self.global_index(view.host, mine), host=view.host, host_index=mine
                    )
                )
                for proc in marked.processes:
                    owner[proc.identity] = host
            if live:
                agents.extend(frame.agents)
        self._owner = owner
        error = None
        if not gpus:
            error = "; ".join(host.snapshot(take=False).describe() for host in self.hosts)
        return Frame(
            time=now,
            gpus=tuple(gpus),
            source=self.name,
            error=error,
            simulated=simulated,
            agents=tuple(agents),
            hosts=tuple(states),
        )

    def host_of(self, pid: int, start_time: float | None) -> RemoteHost | None:
        """The host whose frame last showed this process (pid + start time), else
        the one host showing that pid (its own checks then refuse a stale start time)."""
        host = self._owner.get((pid, start_time))
        if host is None:
            hosts = {h for (p, _), h in self._owner.items() if p == pid}
            host = hosts.pop() if len(hosts) == 1 else None
        return host

    def close(self) -> None:
        for host in self.hosts:
            host._closed.set()
        for host in self.hosts:
            host.close()


def split_by_host(frame: Frame, alerts=()) -> list[HostView]:
    """A multi-host frame as one view per host, each GPU back at its own index
    (what `status` prints per host); ``alerts`` (JSON dicts) go to the host of
    their GPU."""
    host_of_gpu = {g.index: g.host for g in frame.gpus}
    # grouped once (a fleet has tens of thousands of hosts: no scan per host)
    gpus_of: dict = {}
    for g in frame.gpus:
        gpus_of.setdefault(g.host, []).append(g)
    alerts_of: dict = {}
    for a in alerts:
        alerts_of.setdefault(host_of_gpu.get(a.get("gpu")), []).append(a)
    views = []
    for state in frame.hosts:
        gpus = tuple(
            dataclasses.replace(g, index=g.host_index, host=None, host_index=None)
            for g in gpus_of.get(state.host, ())
        )
        live = state.state == CONNECTED
        mine = tuple(alerts_of.get(state.host, ()))
        sub = dataclasses.replace(frame, gpus=gpus, hosts=(), agents=(), error=None if live else state.error)
        views.append(
            HostView(
                state.host,
                state.state,
                sub if gpus or live else None,
                tuple(state.alerts) + mine,
                state.error,
                state.retry_in,
                state.version,
            )
        )
    return views


def session_host_meta(source) -> dict:
    """Session meta for a recording of other machines: the hosts are part of it."""
    url = getattr(getattr(source, "client", None), "url", None)
    if getattr(source, "name", None) == PROMETHEUS_SOURCE and url:
        return {"host": f"fleet via {url}", "prometheus": url}
    if not isinstance(source, HostsSource):
        return {}
    names = [h.host for h in source.hosts]
    return {"host": ", ".join(names), META_HOSTS: names, META_HOST_GPU_BLOCK: HOST_BLOCK}


class HostActions(ProcessActions):
    """Ending a process on another machine: each call goes to that machine's
    `vramscope stream` over its own ssh channel, where core/end_process/actions.py makes
    the same checks as for a local process (own user, pid + start time right
    before the signal, SIGKILL only after SIGTERM) and keeps its audit log.
    ``--read-only`` refuses here, before anything is sent; every action and
    refusal is also logged here (and so reaches the session recorder)."""

    def __init__(self, source: HostsSource, read_only: bool = False, **options):
        super().__init__(read_only=read_only, **options)
        self.source = source

    def _named(self, host) -> str | None:
        """The host as the window names it in messages (None: this machine)."""
        return host.host

    def _host(self, pid: int, start_time: float | None):
        host = self.source.host_of(pid, start_time)
        if host is None:
            raise RuntimeError(f"pid {pid} is no longer on any watched host")
        return host

    def describe(self, pid, start_time, memory=None) -> ProcessSummary:
        try:
            host = self._host(pid, start_time)
            value = host.request("describe", pid, start_time, memory)
            if not isinstance(value, dict):
                raise TypeError(f"{host.host}: the answer is no description")
            try:  # the stream's schema (core/stream/codec.py): types checked
                summary = from_wire(
                    ProcessSummary, {f.name: value.get(f.name) for f in dataclasses.fields(ProcessSummary)}
                )
            except ValueError as exc:
                raise TypeError(f"{host.host}: {exc}") from None
            # as this window names it (the window's sampler process: as it named it)
            summary = dataclasses.replace(summary, host=self._named(host) or summary.host)
        except (RuntimeError, AttributeError, TypeError) as exc:
            summary = ProcessSummary.refused(pid, start_time, memory, str(exc))
        if self.read_only:
            summary = dataclasses.replace(summary, refusal=READ_ONLY_REFUSAL)
        return summary

    def is_alive(self, pid, start_time) -> bool:
        try:
            alive = self._host(pid, start_time).request("is_alive", pid, start_time)
        except RuntimeError:
            return True  # unknown: not claimed gone
        return alive is not False  # only a plain "false" says it is gone

    def wait_gone(self, pid, start_time, timeout: float) -> bool:
        deadline = self._mono() + timeout
        while self.is_alive(pid, start_time):  # one round trip each: poll gently
            if self._mono() >= deadline:
                return False
            time.sleep(0.25)
        return True

    def kill_allowed_in(self, pid, start_time):
        try:
            value = self._host(pid, start_time).request("kill_allowed_in", pid, start_time)
        except RuntimeError:
            return None
        return float(value) if type(value) in (int, float) else None  # seconds, or none

    def terminate(self, pid, start_time, memory=None) -> ActionResult:
        return self._remote_signal("terminate", "SIGTERM", pid, start_time, memory)

    def kill(self, pid, start_time, memory=None) -> ActionResult:
        return self._remote_signal("kill", "SIGKILL", pid, start_time, memory)

    def _remote_signal(self, op, action, pid, start_time, memory) -> ActionResult:
        if self.read_only:
            return self._refuse(action, pid, start_time, READ_ONLY_REFUSAL, memory)
        try:
            host = self._host(pid, start_time)
            value = host.request(op, pid, start_time, memory)
        except RuntimeError as exc:
            return self._refuse(action, pid, start_time, str(exc), memory)
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("message", ""), str)
            or not isinstance(value.get("connection_file"), (str, type(None)))
        ):
            return self._refuse(
                action,
                pid,
                start_time,
                f"{host.host}: an answer that does not fit the stream's schema",
                memory,
            )
        ok = value.get("ok") is True
        name = self._named(host)
        message = f"{name}: {value.get('message')}" if name else str(value.get("message"))
        if name:  # (this machine's sampler keeps this machine's audit log itself)
            self._audit(action, "sent" if ok else "refused", pid, start_time, memory, {"host": name}, message)
        return ActionResult(
            action=action,
            ok=ok,
            pid=pid,
            start_time=start_time,
            message=message,
            connection_file=value.get("connection_file"),
        )

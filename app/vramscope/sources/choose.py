"""Which source a front end samples, and the enrichers every front end applies.

Used by the window, `record` and `status` alike (core/flow/monitor.py takes both).
"""

from __future__ import annotations


# The busy demo starts this far into its script (sources/demo/busy_demo.py): train.py has
# loaded, stepped, measured its modules and caught its OOM (at 7 min, busy_oom.py),
# so every tab has something to show within seconds of opening.
DEMO_PARTWAY = 600.0


def open_source(args, demo_elapsed: float | None = None):
    """The source the options ask for: a fleet through Prometheus
    (--from-prometheus), other machines over ssh (--host), the simulated
    workstation or this machine's GPUs (NVML, DRM). ValueError for a URL that is not one.

    ``demo_elapsed``: start the demo's script that many seconds in (a one-shot
    `status --demo` shows the workstation busy, not at its first second); None:
    the busy demo DEMO_PARTWAY in, the plain one at its start (its story is the
    training run's first minutes).
    """
    if getattr(args, "from_prometheus", None):
        from vramscope.sources.remote.prometheus import PrometheusSource

        return PrometheusSource(args.from_prometheus)
    if getattr(args, "host", None):
        from vramscope.sources.remote.hosts import HostsSource

        return HostsSource(
            args.host, interval=getattr(args, "interval", None) or 1.0, demo=getattr(args, "demo", False)
        )
    if getattr(args, "demo", False):
        import time

        from vramscope.sources.demo.simulated import SimulatedSource

        busy = getattr(args, "busy", False)
        if demo_elapsed is None:
            demo_elapsed = DEMO_PARTWAY if busy else 0.0
        if busy:
            from vramscope.sources.demo.busy_demo import BusyWorkstation

            return BusyWorkstation(seed=getattr(args, "seed", 1), start_time=time.time() - demo_elapsed)
        return SimulatedSource(seed=getattr(args, "seed", 1), start_time=time.time() - demo_elapsed)
    from vramscope.sources.all_gpus import AllGpusSource

    return AllGpusSource()  # NVML, then AMD / Intel GPUs through DRM (sources/drm/drm_source.py)


def enrichers_for(store) -> list:
    """Frame -> Frame steps every front end (window, record, status) applies."""
    from vramscope.sources.machine.jupyter_kernels import JupyterEnricher
    from vramscope.sources.machine.servers import ServerEnricher

    return [AgentEnricher(store), ServerEnricher(store), JupyterEnricher()]


class AgentEnricher:
    """Agent data for every frame, whatever the source (it may be swapped live).

    A real frame gets the PyTorch agent client: it discovers agents, pulls
    their samples and matches each to its process by pid + start time. A
    frame that already carries agent reports (the demo, a replayed session,
    other machines' frames: their own vramscope was the agents' client there)
    gets their series recorded into the store instead, so every view reads
    one layout.
    """

    def __init__(self, store):
        self.store = store
        self._client = None
        self._seen: dict = {}  # agent -> its sample time recorded last (record_reports)

    def __call__(self, frame):
        from vramscope.core.samples import REMOTE_SOURCES
        from vramscope.sources.agents.agent_reports import record_reports
        from vramscope.sources.agents.agent_client import AgentClient

        if frame.simulated or frame.source in REMOTE_SOURCES:
            return record_reports(self.store, frame, self._seen)
        if self._client is None:
            self._client = AgentClient(store=self.store)
        return self._client(frame)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

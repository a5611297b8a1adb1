"""Which source a front end samples, and the enrichers every front end applies.

Used by the window, `record` and `status` alike (core/monitor.py takes both).
"""

from __future__ import annotations


def open_source(args, demo_elapsed: float = 0.0):
    """The source the options ask for: a fleet through Prometheus
    (--from-prometheus), other machines over ssh (--host), the simulated
    workstation or this machine's GPUs (NVML, DRM). ValueError for a URL that is not one.

    ``demo_elapsed``: start the demo's script that many seconds in (a one-shot
    `status --demo` shows the workstation busy, not at its first second).
    """
    if getattr(args, "from_prometheus", None):
        from vramscope.sources.prometheus import PrometheusSource

        return PrometheusSource(args.from_prometheus)
    if getattr(args, "host", None):
        from vramscope.sources.hosts import HostsSource

        return HostsSource(
            args.host, interval=getattr(args, "interval", None) or 1.0, demo=getattr(args, "demo", False)
        )
    if getattr(args, "demo", False):
        import time

        from vramscope.sources.simulated import SimulatedSource

        if getattr(args, "busy", False):
            from vramscope.sources.busy_demo import BusyWorkstation

            return BusyWorkstation(seed=getattr(args, "seed", 1), start_time=time.time() - demo_elapsed)
        return SimulatedSource(seed=getattr(args, "seed", 1), start_time=time.time() - demo_elapsed)
    from vramscope.sources.all_gpus import AllGpusSource

    return AllGpusSource()  # NVML, then AMD / Intel GPUs through DRM (sources/drm.py)


def enrichers_for(store) -> list:
    """Frame -> Frame steps every front end (window, record, status) applies."""
    from vramscope.sources.jupyter_kernels import JupyterEnricher
    from vramscope.sources.servers import ServerEnricher

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
        from vramscope.sources.agent_reports import record_reports
        from vramscope.sources.agents import AgentClient

        if frame.simulated or frame.source in REMOTE_SOURCES:
            return record_reports(self.store, frame, self._seen)
        if self._client is None:
            self._client = AgentClient(store=self.store)
        return self._client(frame)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

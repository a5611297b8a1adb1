"""The monitor every front end runs: one pipeline and what runs beside it.

    source -> enrichers -> store -> [labels] -> [diagnostics] -> [recorder] -> views

The window, `vramscope record` and `vramscope status` build it the same
way (``Monitor.build``); they differ only in what they add: the window a
recorder of real GPUs and its panels, `record` a recorder of one file,
`status` nothing. Qt-free; the enrichers (the agent client) come from the
caller, because core/ knows no source module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from vramscope.core.flow.pipeline import Pipeline
from vramscope.core.flow.sampler import DEFAULT_INTERVAL, Enricher
from vramscope.core.flow.source import Source
from vramscope.core.store.store import STAGE_DIAGNOSTICS, STAGE_RECORDER, Store

if TYPE_CHECKING:  # (imported where it is served: core/export/metrics.py needs prometheus_client)
    from vramscope.core.export.metrics import MetricsServer

log = logging.getLogger(__name__)

EnricherFactory = Callable[[Store], list[Enricher]]


class Monitor:
    def __init__(self, pipeline: Pipeline, engine, actions=None, read_only: bool = False):
        self.pipeline = pipeline
        self.engine = engine
        self.actions = actions
        self.read_only = read_only
        self.recorder = None
        self.metrics: MetricsServer | None = None
        self.metrics_error: str | None = None  # why metrics could not be served, if asked

    @classmethod
    def build(
        cls,
        source: Source,
        *,
        enrichers: EnricherFactory | None = None,
        interval: float = DEFAULT_INTERVAL,
        diagnostics=None,
        store: Store | None = None,
        read_only: bool = False,
        actions: bool = True,
        engine=None,
    ) -> Monitor:
        """A pipeline around ``source`` with the diagnostics engine at its stage.

        ``enrichers(store)`` gives the Frame -> Frame steps (sources/choose.py);
        ``diagnostics`` the rule settings; ``actions`` adds end-process actions;
        ``engine`` a Diagnostics made by the caller (the window's TakenAlerts).
        """
        from vramscope.core.detectors import Diagnostics

        store = store if store is not None else Store()
        pipeline = Pipeline(
            source, store, interval, list(enrichers(store)) if enrichers is not None else None
        )
        if engine is None:
            engine = Diagnostics(diagnostics)
        elif diagnostics is not None:
            engine.settings = diagnostics
        pipeline.subscribe(engine.feed, STAGE_DIAGNOSTICS)
        acts = None
        if actions:
            from vramscope.core.end_process.actions import ProcessActions

            acts = ProcessActions(read_only=read_only)
        return cls(pipeline, engine, acts, read_only=read_only)

    @property
    def store(self) -> Store:
        return self.pipeline.store

    def record(self, recorder) -> None:
        """Add a session recorder (core/session/recorder.py) after the diagnostics."""
        self.recorder = recorder
        self.pipeline.subscribe(recorder, STAGE_RECORDER)

    def serve_metrics(self, address: str, warn=None) -> None:
        """Serve the store for Prometheus at ``address``; raises OSError / ValueError."""
        from vramscope.core.export.metrics import serve_metrics

        self.metrics = serve_metrics(
            self.store, address, warn=warn or (lambda m: log.warning("prometheus: %s", m))
        )

    def close(self) -> None:
        """Stop sampling, then close the recorder (final commit) and the metrics server."""
        self.pipeline.close()
        if self.recorder is not None:
            self.store.listeners.unsubscribe(self.recorder)
            self.recorder.close()
        if self.metrics is not None:
            self.metrics.close()

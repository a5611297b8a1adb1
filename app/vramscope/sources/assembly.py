"""Where the window, `record`, `status` and `stream` get their monitor: one place.

Every front end samples through the same pipeline (core/flow/monitor.py) with the
same enrichers (sources/choose.py: process details, the PyTorch agent client,
containers, servers) and the same thresholds: the user's settings file
(core/settings/user_settings.py), with a command's own threshold options on top. So the
same machine raises the same alerts in the window, in `record`'s session, in
`status --json` and in `stream` (issue 28).
"""

from __future__ import annotations

from vramscope.core.flow.monitor import EnricherFactory, Monitor
from vramscope.core.flow.sampler import DEFAULT_INTERVAL
from vramscope.core.flow.source import Source
from vramscope.core.store.store import Store
from vramscope.sources.choose import enrichers_for


def build_monitor(
    source: Source,
    *,
    diagnostics=None,
    args=None,
    enrichers: EnricherFactory | None = enrichers_for,
    interval: float = DEFAULT_INTERVAL,
    store: Store | None = None,
    read_only: bool = False,
    actions: bool = False,
    engine=None,
) -> Monitor:
    """The monitor around ``source``. ``diagnostics``: the thresholds, when the caller
    has them already (the window's Settings, which its dialog updates); otherwise the
    settings file's, with ``args``' threshold options (``status --idle-minutes``) on
    top, followed while the command runs (core/settings/settings_follow.py)."""
    follow = diagnostics is None
    if follow:
        from vramscope.core.settings.user_settings import diagnostics_for

        diagnostics = diagnostics_for(args)
    monitor = Monitor.build(
        source,
        enrichers=enrichers,
        interval=interval,
        diagnostics=diagnostics,
        store=store,
        read_only=read_only,
        actions=actions,
        engine=engine,
    )
    if follow:  # thresholds saved while it runs (the settings dialog) apply from the next pass
        from vramscope.core.settings.settings_follow import FollowThresholds
        from vramscope.core.store.store import STAGE_LABELS

        monitor.pipeline.subscribe(FollowThresholds(monitor.engine, args=args), STAGE_LABELS)
    return monitor


def session_recorder(
    monitor: Monitor,
    source: Source,
    started_by: str,
    *,
    retention=None,
    directory=None,
    path=None,
    include_simulated: bool = False,
    meta: dict | None = None,
):
    """The session recorder of ``monitor`` (not opened): what every front end
    records with -- the monitor's alerts, its end-process actions where it has
    them, the file's header (the source, who started it, the hosts of a
    multi-host source, ``meta`` on top) and the retention of the directory."""
    from vramscope.core.session import RetentionPolicy
    from vramscope.core.session.recorder import SessionRecorder
    from vramscope.sources.remote.hosts import session_host_meta

    header = {"source": getattr(source, "name", "?"), "started_by": started_by, **session_host_meta(source)}
    return SessionRecorder(
        monitor.engine,
        getattr(monitor, "actions", None),
        meta={**header, **(meta or {})},
        retention=retention or RetentionPolicy(),
        directory=directory,
        path=path,
        include_simulated=include_simulated,
    )

"""Alerts and actions into the session file, beside the samples."""

from __future__ import annotations

from vramscope.core.samples import Frame


class AlertJournal:
    """A store listener (after the diagnostics engine): each alert is written once,
    when it first appears; each end-process action as it happens."""

    def __init__(self, engine, writer):
        self.engine = engine
        self.writer = writer
        self._written: set[tuple] = set()

    def __call__(self, frame: Frame) -> None:
        current = self.engine.alerts(include_hidden=True)
        for alert in current:
            if alert.key in self._written:
                continue
            self._written.add(alert.key)
            self.writer.add_alert(
                alert.since if alert.since is not None else frame.time,
                alert.kind,
                alert.message,
                severity=alert.severity,
                gpu=alert.gpu,
                pid=alert.pid,
                start_time=alert.start_time,
                detail={"evidence": list(alert.evidence), "fix": alert.fix, "device": alert.device},
            )
        # a condition that cleared and comes back later is a new alert
        self._written &= {a.key for a in current}

    def on_action(self, entry: dict) -> None:
        self.writer.add_action(
            entry["time"],
            entry["action"],
            pid=entry.get("pid"),
            start_time=entry.get("start_time"),
            result=entry.get("outcome"),
            detail={
                "message": entry.get("message"),
                "command": entry.get("command"),
                "memory_bytes": entry.get("memory_bytes"),
            },
        )

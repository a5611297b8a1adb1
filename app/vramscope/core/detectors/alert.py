"""One diagnostic finding: what, how bad, since when, the numbers, the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vramscope.agent.protocol import StrEnum
from vramscope.core.samples import ProcessIdentity, gpu_label

INFO = "info"
WARNING = "warning"
CRITICAL = "critical"
SEVERITIES = (INFO, WARNING, CRITICAL)
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


class AlertKind(StrEnum):
    """What a diagnostic rule found; the member order is the urgency within one severity
    (what threatens running work comes before what only holds memory)."""

    OOM = "oom"
    NEAR_OOM = "near_oom"
    LEAK = "leak"
    STALLED = "stalled"
    FRAGMENTATION = "fragmentation"
    GROWTH = "growth"
    GHOST = "ghost"
    EVAL_AUTOGRAD = "eval_autograd"
    CHECKPOINTING_USE_CACHE = "checkpointing_use_cache"
    UNATTRIBUTED_MEMORY = "unattributed_memory"
    SQUATTER = "squatter"
    INFERENCE_SERVER = "inference_server"
    IN_CONTAINER = "in_container"
    WSL = "wsl"
    USER_REQUEST = "user_request"  # the user asked to end a process (ui/window/panels.py), no rule


# kind -> short title used by lists and notifications
KIND_TITLES = {
    AlertKind.SQUATTER: "Squatter",
    AlertKind.STALLED: "Stalled run",
    AlertKind.INFERENCE_SERVER: "Inference server",
    AlertKind.GROWTH: "Growing memory",
    AlertKind.UNATTRIBUTED_MEMORY: "Memory without a visible owner",
    AlertKind.FRAGMENTATION: "Fragmentation",
    AlertKind.LEAK: "Leak",
    AlertKind.EVAL_AUTOGRAD: "Eval with autograd on",
    AlertKind.CHECKPOINTING_USE_CACHE: "Checkpointing that does nothing",
    AlertKind.NEAR_OOM: "Near out of memory",
    AlertKind.OOM: "Out of memory",
    AlertKind.GHOST: "Memory held for a process that no longer exists",
    AlertKind.IN_CONTAINER: "Running inside a container",
    AlertKind.WSL: "Running under WSL",
    AlertKind.USER_REQUEST: "End process",
}


def severity_rank(severity: str) -> int:
    return _RANK.get(severity, 0)


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str  # an AlertKind
    severity: str  # INFO / WARNING / CRITICAL
    gpu: int | None  # NVML index; None when not tied to one GPU
    pid: int | None
    start_time: float | None  # the process's start time (identity), None if unknown
    since: float | None  # when the condition began (epoch seconds)
    message: str  # one line: what and how much
    evidence: tuple[str, ...] = ()  # human lines with the numbers that prove it
    fix: str = ""  # what to do, traceable to a public source (PyTorch/NVML docs, papers)
    device: str | None = None  # agent device ("cuda:0") for PyTorch rules
    frees: int | None = None  # bytes that acting on it would free, None = unknown
    connection_file: str | None = None  # Jupyter kernel connection file
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # the GPU's machine and its index there, when not this one (--host, a fleet;
    # ``gpu`` is then the window's unique index): set by the engine
    host: str | None = None
    host_index: int | None = None

    @property
    def identity(self) -> ProcessIdentity | None:
        if self.pid is None:
            return None
        return (self.pid, self.start_time)

    @property
    def key(self) -> tuple:
        """Stable across frames while the same condition lasts (acknowledge, since)."""
        return (self.kind, self.gpu, self.pid, self.start_time, self.device)

    @property
    def title(self) -> str:
        return KIND_TITLES.get(self.kind, self.kind)

    @property
    def gpu_label(self) -> str | None:
        """ "GPU 0" / "lab2 GPU 0" (as the card is named); None when not tied to a GPU."""
        return None if self.gpu is None else gpu_label(self.gpu, self.host, self.host_index)


def machine_notice(
    kind: str, message: str, evidence: tuple[str, ...], fix: str, data: dict[str, Any]
) -> Alert:
    """An INFO alert about how this machine is watched (inside a container, under WSL):
    tied to no GPU, process or start, and acting on it frees nothing."""
    return Alert(
        kind=kind,
        severity=INFO,
        gpu=None,
        pid=None,
        start_time=None,
        since=None,
        message=message,
        evidence=evidence,
        fix=fix,
        frees=None,
        data=data,
    )


def alerts_to_json(alerts) -> list[dict[str, Any]]:
    """The ``"alerts"`` list of ``vramscope status --json``."""
    out = []
    for a in alerts:
        out.append(
            {
                "kind": a.kind,
                "severity": a.severity,
                **({} if a.host is None else {"host": a.host, "host_index": a.host_index}),
                "gpu": a.gpu,
                "pid": a.pid,
                "since": a.since,
                "message": a.message,
                "evidence": list(a.evidence),
                "fix": a.fix,
                "start_time": a.start_time,
                "device": a.device,
                "frees_bytes": a.frees,
                "connection_file": a.connection_file,
                "data": _jsonable(a.data),
            }
        )
    return out


def alert_from_json(data) -> Alert | None:
    """One ``alerts_to_json`` item back as an Alert (what a sampler process or an
    ssh host sent); None when it does not have an alert's shape."""
    if not isinstance(data, dict):
        return None

    def opt(name, kinds):
        value = data.get(name)
        return value if value is None or (type(value) in kinds) else _BAD

    kind, severity, message = data.get("kind"), data.get("severity"), data.get("message")
    fields = dict(
        gpu=opt("gpu", (int,)),
        pid=opt("pid", (int,)),
        start_time=opt("start_time", (int, float)),
        since=opt("since", (int, float)),
        device=opt("device", (str,)),
        frees=opt("frees_bytes", (int,)),
        connection_file=opt("connection_file", (str,)),
        host=opt("host", (str,)),
        host_index=opt("host_index", (int,)),
    )
    evidence, fix, extra = data.get("evidence", []), data.get("fix", ""), data.get("data", {})
    if (
        not isinstance(kind, str)
        or severity not in SEVERITIES
        or type(message) is not str
        or _BAD in fields.values()
        or type(fix) is not str
        or type(extra) is not dict
        or type(evidence) is not list
        or not all(type(e) is str for e in evidence)
    ):
        return None
    if fields["start_time"] is not None:
        fields["start_time"] = float(fields["start_time"])
    return Alert(
        kind=kind, severity=severity, message=message, evidence=tuple(evidence), fix=fix, data=extra, **fields
    )


_BAD = object()


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# within one severity, what threatens running work comes before what only holds memory
URGENCY_ORDER = tuple(AlertKind)
_URGENCY = {k: i for i, k in enumerate(URGENCY_ORDER)}
# the data fields that say how soon the card is full (near-OOM, leak, growth)
_SECONDS_LEFT = ("eta_seconds", "seconds_to_oom", "seconds_to_full")


def seconds_left(alert: Alert) -> float | None:
    """How soon what the alert warns of happens (the card full), None when it does not say."""
    for name in _SECONDS_LEFT:
        value = alert.data.get(name)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def urgency_key(alert: Alert) -> tuple:
    left = seconds_left(alert)
    return (
        -severity_rank(alert.severity),
        left if left is not None else float("inf"),
        _URGENCY.get(alert.kind, len(URGENCY_ORDER)),
        alert.since if alert.since is not None else float("inf"),
        alert.pid or 0,
    )


def sort_alerts(alerts):
    """In order of urgency: most severe first; then the soonest to fill the card
    (near-OOM "full in about 22 s" above an idle holder); then what threatens running
    work before what only holds memory; then the oldest condition."""
    return sorted(alerts, key=urgency_key)

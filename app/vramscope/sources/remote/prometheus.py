"""A fleet read back from a Prometheus server: `vramscope --from-prometheus URL`.

Each machine runs `vramscope record --prometheus` (core/export/metrics.py) or
NVIDIA's dcgm-exporter; Prometheus scrapes them; this source asks the
Prometheus HTTP API (https://prometheus.io/docs/prometheus/latest/querying/api/)
for the newest values of those metrics, one instant query per pass, and lays
the machines side by side like `--host` does: one host per ``instance``
label, GPU i of the n-th host at index n * HOST_BLOCK + i. A host whose
scrape fails (``up == 0``) keeps its last GPUs, marked. ``history`` reads
one host's memory over a time range (range queries) for the fleet overview.

dcgm-exporter's framebuffer fields are in MiB (DCGM field reference:
DCGM_FI_DEV_FB_USED / _FREE / _RESERVED); total is their sum.
"""

from __future__ import annotations

import math
import urllib.parse

from vramscope.core.safe_io.bounded_http import HttpError, Unreachable, get_json
from vramscope.core.export.metrics import GPU_GAUGES, PROCESS_MEMORY_METRIC, PROCESS_SM_METRIC
from vramscope.core.samples import (
    PROMETHEUS_SOURCE,
    Frame,
    GpuProcess,
    GpuSample,
    HostState,
    ProcessInfo,
)
from vramscope.core.processes.owner_labels import owners_from
from vramscope.sources.remote.fleet_owners import HostNames, dcgm_pod, pod_holders
from vramscope.sources.remote.hosts import HOST_BLOCK
from vramscope.sources.remote.host_stream import CONNECTED, DOWN

MiB = 1 << 20
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"
DCGM_FB_FREE = "DCGM_FI_DEV_FB_FREE"
DCGM_FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"
# dcgm-exporter field -> (GpuSample attribute, factor to vramscope's unit)
DCGM_FIELDS = {
    DCGM_FB_USED: ("used", MiB),
    DCGM_FB_FREE: ("free", MiB),
    DCGM_FB_RESERVED: ("reserved", MiB),
    "DCGM_FI_DEV_GPU_UTIL": ("util_gpu", 1),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature", 1),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1),
}
VRAMSCOPE_FIELDS = {name: (attr, 1) for attr, name, _ in GPU_GAUGES}
UP = "up"
MAX_BYTES = 512 << 20  # an answer: 100,000 series of a fleet are ~25 MB
MAX_LABEL = 1024  # characters of one label value kept (a GPU name, a process name)
INT_ATTRS = {"used", "total", "free", "reserved", "util_gpu", "util_memory", "temperature"}
FLEET_QUERY = '{__name__=~"%s"}' % "|".join(
    [*VRAMSCOPE_FIELDS, PROCESS_MEMORY_METRIC, PROCESS_SM_METRIC, *DCGM_FIELDS, UP]
)


class PrometheusError(Exception):
    """The server could not be asked, or it refused the query (one line)."""


class PrometheusClient:
    def __init__(self, url: str, timeout: float = 5.0):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not a Prometheus URL (http://HOST:9090): {url!r}")
        self.url = url.rstrip("/")
        self.timeout = timeout

    def query(self, promql: str) -> list[dict]:
        return self._get("/api/v1/query", {"query": promql})

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        return self._get(
            "/api/v1/query_range",
            {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{max(step, 0.001):g}"},
        )

    def _get(self, path: str, params: dict) -> list[dict]:
        """The answer's ``data.result`` list; PrometheusError (one line) for
        anything else. The whole request has ``timeout`` seconds and MAX_BYTES
        (core/safe_io/bounded_http.py); the body's shape is checked here, each series
        again where it is read."""
        address = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            status, body = get_json(address, deadline=self.timeout, max_bytes=MAX_BYTES)
        except Unreachable as exc:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {exc}") from None
        except HttpError as exc:
            raise PrometheusError(f"Prometheus at {self.url}: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("status"), str):
            raise PrometheusError(f"{self.url} did not answer like a Prometheus server (HTTP {status})")
        if body["status"] != "success":
            error = body.get("error")
            error = error[:300] if isinstance(error, str) else f"HTTP {status}"
            raise PrometheusError(f"Prometheus at {self.url} refused the query: {error}")
        data = body.get("data")
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, list):
            raise PrometheusError(f"{self.url} did not answer like a Prometheus server (no data.result list)")
        return result


def _number(text) -> float | None:
    """A sample value (the API sends numbers as strings); None for NaN, ±Inf,
    huge values (past 2**63: no byte count, percent or watt is) or anything else."""
    if (
        not isinstance(text, (str, int, float))
        or isinstance(text, bool)
        or (isinstance(text, str) and len(text) > 64)
    ):
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) or abs(value) >= 2.0**63 else value


def _series(item) -> tuple[dict, object] | None:
    """(labels, value) of one instant-vector entry, or None when it has another shape.
    Label values that are not strings are left out; long ones are cut."""
    if not isinstance(item, dict):
        return None
    labels, pair = item.get("metric"), item.get("value")
    if not isinstance(labels, dict):
        return None
    value = pair[1] if isinstance(pair, list) and len(pair) == 2 else None
    return {k: v[:MAX_LABEL] for k, v in labels.items() if isinstance(v, str)}, value


def _small_int(text) -> int | None:
    """A label's integer (gpu, pid): decimal digits within int64, else None."""
    if not isinstance(text, str) or not 0 < len(text) <= 19 or not text.isdigit() or not text.isascii():
        return None
    return int(text)


def _typed(attr: str, value: float | None):
    if value is None:
        return None
    return int(round(value)) if attr in INT_ATTRS else value


class PrometheusSource:
    name = PROMETHEUS_SOURCE
    simulated = False

    def __init__(self, url: str, timeout: float = 5.0):
        self.client = PrometheusClient(url, timeout)
        self._position: dict[str, int] = {}  # host -> its place, stable for the session
        self._last: dict[str, tuple[GpuSample, ...]] = {}
        self._hosts = HostNames()

    def position(self, instance: str) -> int:
        if instance not in self._position:
            self._position[instance] = len(self._position)
        return self._position[instance]

    def sample(self, now: float) -> Frame:
        try:
            vector = self.client.query(FLEET_QUERY)
        except PrometheusError as exc:
            return Frame(time=now, source=self.name, error=str(exc))
        return self.fleet_frame(vector, now)

    def fleet_frame(self, vector: list[dict], now: float) -> Frame:
        gpus: dict[str, dict[int, dict]] = {}
        procs: dict[tuple[str, int], dict[int, dict]] = {}
        up: dict[str, bool] = {}
        for item in vector:
            series = _series(item)
            if series is None:
                continue
            labels, raw = series
            name, instance = labels.get("__name__"), labels.get("instance")
            value = _number(raw)
            if not name or not instance:
                continue
            if name == UP:
                up[instance] = value == 1.0
                continue
            instance = self._hosts.host(instance, labels, name in DCGM_FIELDS)
            gpu = _small_int(labels.get("gpu"))
            if gpu is None or gpu >= HOST_BLOCK:
                continue
            if name in (PROCESS_MEMORY_METRIC, PROCESS_SM_METRIC):
                pid = _small_int(labels.get("pid"))
                if pid is None:
                    continue
                entry = procs.setdefault((instance, gpu), {}).setdefault(
                    pid, {"name": labels.get("process") or None, **owners_from(labels)}
                )
                entry["used" if name == PROCESS_MEMORY_METRIC else "sm"] = value
                continue
            field = VRAMSCOPE_FIELDS.get(name) or DCGM_FIELDS.get(name)
            if field is None:
                continue
            attr, factor = field
            g = gpus.setdefault(instance, {}).setdefault(gpu, {})
            g[attr] = _typed(attr, None if value is None else value * factor)
            g.setdefault("name", labels.get("name") or labels.get("modelName") or None)
            g.setdefault("uuid", labels.get("uuid") or labels.get("UUID") or None)
            g.setdefault("vendor", labels.get("vendor") or None)  # vramscope's own series
            g.setdefault("memory_kind", labels.get("memory") or None)
            if name in DCGM_FIELDS:
                g["_dcgm"] = True
                pod = dcgm_pod(labels)
                if pod is not None:
                    g.setdefault("_pods", set()).add(pod)
        out: list[GpuSample] = []
        states: list[HostState] = []
        for instance in sorted(set(gpus) | set(self._last)):
            self.position(instance)
        up = self._hosts.up_by_host(up)
        for instance in sorted(self._position, key=self._position.get):
            alive = up.get(instance, instance in gpus)
            if instance in gpus and alive:
                host_gpus = tuple(
                    self._gpu(instance, i, values, procs.get((instance, i), {}))
                    for i, values in sorted(gpus[instance].items())
                )
                self._last[instance] = host_gpus
                states.append(HostState(instance, CONNECTED, gpus=len(host_gpus)))
            else:
                host_gpus = tuple(
                    GpuSample(
                        index=g.index,
                        name=g.name,
                        uuid=g.uuid,
                        total=g.total,
                        host=g.host,
                        host_index=g.host_index,
                        error="Prometheus cannot scrape this host",
                    )
                    for g in self._last.get(instance, ())
                )
                states.append(
                    HostState(
                        instance,
                        DOWN,
                        error="Prometheus cannot scrape this host (up == 0)"
                        if not alive
                        else "no GPU metrics from it",
                        gpus=len(host_gpus),
                    )
                )
            out.extend(host_gpus)
        error = (
            None
            if out
            else (f"Prometheus at {self.client.url} has no vramscope or dcgm-exporter GPU metrics")
        )
        return Frame(time=now, gpus=tuple(out), source=self.name, error=error, hosts=tuple(states))

    def _gpu(self, instance: str, index: int, values: dict, procs: dict) -> GpuSample:
        values = dict(values)
        pods = values.pop("_pods", set())
        if values.pop("_dcgm", False) and values.get("total") is None:
            parts = [values.get(k) for k in ("used", "free", "reserved")]
            values["total"] = sum(parts) if None not in parts else None
        processes = tuple(
            GpuProcess(
                pid=pid,
                used=_typed("used", p.pop("used", None)),
                sm=_typed("util_gpu", p.pop("sm", None)),
                info=ProcessInfo(pid=pid, **p),
            )
            for pid, p in sorted(procs.items())
        )
        if pods and not processes:
            processes, values["not_reported"] = pod_holders(pods, values.get("used"))
        return GpuSample(
            index=self.position(instance) * HOST_BLOCK + index,
            host=instance,
            host_index=index,
            processes=processes,
            **values,
        )

    def history(self, instance: str, start: float, end: float, points: int = 300) -> dict:
        """{gpu: {"t": [...], "used": [...], "total": [...]}} for one host (bytes): the
        host an ``instance`` label names, or dcgm-exporter's ``Hostname``."""
        for sel in self._hosts.selectors(instance):
            out = self._history(sel, start, end, points)
            if out:
                return out
        return {}

    def _history(self, sel: str, start: float, end: float, points: int) -> dict:
        step = max(1.0, (end - start) / max(1, points))
        used_name = next(n for a, n, _ in GPU_GAUGES if a == "used")
        total_name = next(n for a, n, _ in GPU_GAUGES if a == "total")
        queries = {"used": (used_name + sel, 1), "total": (total_name + sel, 1)}
        out: dict[int, dict] = {}
        for key, (promql, factor) in queries.items():
            series = self.client.query_range(promql, start, end, step)
            if not series and key == "used":
                series, factor = self.client.query_range(DCGM_FB_USED + sel, start, end, step), MiB
            if not series and key == "total":
                series = self.client.query_range(
                    f"({DCGM_FB_USED}{sel} + {DCGM_FB_FREE}{sel} + {DCGM_FB_RESERVED}{sel})", start, end, step
                )
                factor = MiB
            for s in series:
                if (
                    not isinstance(s, dict)
                    or not isinstance(s.get("metric"), dict)
                    or not isinstance(s.get("values"), list)
                ):
                    continue
                gpu = _small_int(s["metric"].get("gpu"))
                if gpu is None:
                    continue
                pts = [
                    (_number(p[0]), _number(p[1])) for p in s["values"] if isinstance(p, list) and len(p) == 2
                ]
                pts = [(t, v) for t, v in pts if t is not None]
                entry = out.setdefault(gpu, {})
                entry.setdefault("t", [t for t, _ in pts])
                entry[key] = [None if v is None else v * factor for _, v in pts]
        return out

    def close(self) -> None:
        pass

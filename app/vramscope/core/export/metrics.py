"""Serve the current frame as Prometheus metrics (prometheus_client).

A custom collector reads ``store.latest`` at every scrape, so a scrape costs
nothing between scrapes and always shows the newest pass. Values that are
not available are left out (never exported as 0). The server binds the
loopback address unless told otherwise; binding anything else is the
user's explicit choice and is warned about.
"""

from __future__ import annotations

import ipaddress
import logging

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from vramscope.core.agent_figures.device_fields import DEVICE_FIELDS
from vramscope.core.processes.owner_labels import OWNER_LABELS, owner_values
from vramscope.core.samples import ALL_BUCKETS, AgentReport, Frame
from vramscope.core.store.store import Store
from vramscope.core.processes.user_totals import user_totals

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"

# (GpuSample attribute, metric name, help): read back by sources/remote/prometheus.py
GPU_GAUGES = (
    (
        "used",
        "vramscope_gpu_memory_used_bytes",
        "Device memory in use (NVML; sysfs for AMD, Intel; the system pool on unified memory)",
    ),
    ("total", "vramscope_gpu_memory_total_bytes", "Device memory capacity (NVML; sysfs for AMD, Intel)"),
    ("free", "vramscope_gpu_memory_free_bytes", "Device memory free (NVML; sysfs for AMD, Intel)"),
    ("reserved", "vramscope_gpu_memory_reserved_bytes", "Driver/system reserved memory"),
    ("util_gpu", "vramscope_gpu_utilization_percent", "GPU (SM) utilisation"),
    ("util_memory", "vramscope_gpu_memory_utilization_percent", "Memory controller utilisation"),
    ("temperature", "vramscope_gpu_temperature_celsius", "GPU temperature"),
    ("power_w", "vramscope_gpu_power_watts", "Power draw"),
)
# labels PROCESS_LABELS: gpu, pid, process, mig and who it belongs to (core/processes/owner_labels.py)
PROCESS_MEMORY_METRIC = "vramscope_process_memory_used_bytes"
PROCESS_SM_METRIC = "vramscope_process_sm_utilization_percent"
PROCESS_LABELS = ["gpu", "pid", "process", "mig", *OWNER_LABELS]
_MIG_GAUGES = (
    ("used", "vramscope_mig_memory_used_bytes", "Device memory in use on a MIG slice (NVML)"),
    ("total", "vramscope_mig_memory_total_bytes", "Device memory of a MIG slice (NVML)"),
    ("free", "vramscope_mig_memory_free_bytes", "Device memory free on a MIG slice (NVML)"),
)


class StoreCollector(Collector):
    """Prometheus collector over a Store's newest frame."""

    def __init__(self, store: Store):
        self.store = store

    def collect(self):
        frame: Frame | None = self.store.latest
        if frame is None:
            return
        info = GaugeMetricFamily(
            "vramscope_frame_timestamp_seconds",
            "Time of the newest sampling pass",
            labels=["source", "simulated"],
        )
        info.add_metric([frame.source, "true" if frame.simulated else "false"], frame.time)
        yield info
        # vendor: NVIDIA / AMD / Intel; memory: "unified" for a board sharing system memory
        gpu_labels = ["gpu", "uuid", "name", "vendor", "memory"]
        fams = {attr: GaugeMetricFamily(name, doc, labels=gpu_labels) for attr, name, doc in GPU_GAUGES}
        # "mig": the MIG slice's UUID a process runs on, "" off MIG
        asleep = GaugeMetricFamily(
            "vramscope_gpu_asleep", "1 while the GPU is runtime-suspended (not queried)", labels=gpu_labels
        )
        fams["asleep"] = asleep
        proc = GaugeMetricFamily(
            PROCESS_MEMORY_METRIC,
            "Device memory used by a process on a GPU (NVML), with its user, container, pod and Slurm job",
            labels=PROCESS_LABELS,
        )
        proc_sm = GaugeMetricFamily(
            PROCESS_SM_METRIC, "SM utilisation of a process on a GPU", labels=PROCESS_LABELS
        )
        mig_labels = ["gpu", "mig", "profile", "gpu_instance", "compute_instance"]
        mig_fams = {attr: GaugeMetricFamily(name, doc, labels=mig_labels) for attr, name, doc in _MIG_GAUGES}
        for gpu in frame.gpus:
            for mig in gpu.slices:
                mlabels = [
                    str(gpu.index),
                    mig.uuid or "",
                    mig.profile or "",
                    _label(mig.gpu_instance_id),
                    _label(mig.compute_instance_id),
                ]
                for attr, _, _ in _MIG_GAUGES:
                    value = getattr(mig, attr)
                    if value is not None:
                        mig_fams[attr].add_metric(mlabels, float(value))
            labels = [str(gpu.index), gpu.uuid or "", gpu.name or "", gpu.vendor or "", gpu.memory_kind or ""]
            asleep.add_metric(labels, 1.0 if gpu.asleep else 0.0)
            for attr, _, _ in GPU_GAUGES:
                value = getattr(gpu, attr)
                if value is not None:
                    fams[attr].add_metric(labels, float(value))
            for p in gpu.processes:
                name = (p.info.name if p.info is not None else None) or ""
                plabels = [str(gpu.index), str(p.pid), name, p.mig_uuid or "", *owner_values(p.info)]
                if p.used is not None:
                    proc.add_metric(plabels, float(p.used))
                if p.sm is not None:
                    proc_sm.add_metric(plabels, float(p.sm))
        yield from fams.values()
        yield proc
        yield proc_sm
        yield from mig_fams.values()
        yield from _user_families(frame)
        agent_labels = ["pid", "device", "rank"]
        afams = {f.key: GaugeMetricFamily(f.metric, f.says, labels=agent_labels) for f in DEVICE_FIELDS}
        buckets = GaugeMetricFamily(
            "vramscope_agent_bucket_bytes",
            "Memory by bucket (weights, gradients, optimizer state, ...)",
            labels=agent_labels + ["bucket"],
        )
        for report in frame.agents:
            if not isinstance(report, AgentReport):
                continue
            for dev in report.devices:
                labels = [str(report.pid), dev.device, "" if report.rank is None else str(report.rank)]
                for f in DEVICE_FIELDS:
                    value = f.value(dev)
                    if value is not None:
                        afams[f.key].add_metric(labels, float(value))
                if dev.buckets is not None:
                    for bucket in ALL_BUCKETS:
                        value = getattr(dev.buckets, bucket)
                        if value is not None:
                            buckets.add_metric(labels + [bucket], float(value))
        yield from afams.values()
        yield buckets


def _label(value) -> str:
    return "" if value is None else str(value)


def _user_families(frame: Frame):
    """Device memory per user, per GPU and over the machine (processes with a figure)."""
    per_gpu = GaugeMetricFamily(
        "vramscope_user_memory_used_bytes",
        "Device memory used by one user's processes on a GPU (NVML)",
        labels=["gpu", "user"],
    )
    machine = GaugeMetricFamily(
        "vramscope_machine_user_memory_used_bytes",
        "Device memory used by one user's processes on all GPUs (NVML)",
        labels=["user"],
    )
    for total in user_totals(frame):
        if total.used is not None:
            machine.add_metric([total.label], float(total.used))
        for gpu, used in total.per_gpu:
            per_gpu.add_metric([str(gpu), total.label], float(used))
    yield per_gpu
    yield machine


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT``, ``:PORT`` or ``PORT`` -> (host, port); loopback by default."""
    text = text.strip()
    host, port = DEFAULT_HOST, text
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not text[end + 1 :].startswith(":"):
            raise ValueError(f"cannot read {text!r}: expected [ADDRESS]:PORT")
        host, port = text[1:end], text[end + 2 :]
    elif ":" in text:
        host, port = text.rsplit(":", 1)
        host = host or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"cannot read {text!r}: the port must be a number (HOST:PORT)") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"port {number} is out of range (0-65535)")
    return host, number


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class MetricsServer:
    """The HTTP endpoint; ``close()`` stops it."""

    def __init__(self, store: Store, host: str = DEFAULT_HOST, port: int = 0):
        self.host = host
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(StoreCollector(store))
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.port = self._server.server_address[1]

    @property
    def exposed(self) -> bool:
        return not is_loopback(self.host)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_metrics(store: Store, address: str = f"{DEFAULT_HOST}:9464", warn=None) -> MetricsServer:
    host, port = parse_address(address)
    if not is_loopback(host):
        message = f"serving metrics on {host}:{port}: reachable from other machines, not only from this one"
        (warn or log.warning)(message)
    return MetricsServer(store, host, port)

"""A fleet in the scheduler's words: dcgm-exporter's machines by node name and
its GPUs by the pod that holds them.

dcgm-exporter labels every series with ``Hostname`` (the node it runs on; in
Kubernetes its pod's node) and, with its Kubernetes pod mapping on, with the
``pod``, ``namespace`` and ``container`` the kubelet's pod-resources API says
hold the GPU (dcgm-exporter's README, "Kubernetes"). Scraped through a
Service or a ServiceMonitor, its ``instance`` is an exporter pod's IP:port,
which names no machine a user knows, so its machines are named by
``Hostname`` here (vramscope's own exporters keep their ``instance``).

The framebuffer figures are the GPU's, not a pod's: where one pod holds a GPU,
the GPU's memory is that pod's and it is shown as the pod's entry (pid 0: the
exporter names the pod, not its processes); where several share it
(time-slicing, MPS) the GPU's memory cannot be split among them, so they are
named, each with no figure of its own.
"""

from __future__ import annotations

from vramscope.core.processes.containers import CRI, container_label
from vramscope.core.samples import NOT_VISIBLE, Container, GpuProcess, ProcessInfo

HOSTNAME = "Hostname"
INSTANCE = "instance"
POD_PID = 0  # a pod named by dcgm-exporter: no process id is known
SHARED_WHY = "dcgm-exporter reports the GPU's memory as a whole; pods sharing it: "


class HostNames:
    """Which host each series is of, and how to ask Prometheus for that host again."""

    def __init__(self):
        self._label: dict[str, str] = {}  # host -> the label naming it (INSTANCE or HOSTNAME)
        self._instances: dict[str, set[str]] = {}  # instance -> the hosts its series named

    def host(self, instance: str, labels: dict[str, str], dcgm: bool) -> str:
        """The host a series is of: dcgm-exporter's ``Hostname`` where it gives one."""
        name = labels.get(HOSTNAME) if dcgm else None
        host, label = (name, HOSTNAME) if name else (instance, INSTANCE)
        self._label.setdefault(host, label)
        self._instances.setdefault(instance, set()).add(host)
        return host

    def up_by_host(self, up: dict[str, bool]) -> dict[str, bool]:
        """``up`` per instance -> per host (a host is up while every instance naming it is)."""
        out: dict[str, bool] = {}
        for instance, alive in up.items():
            for host in self._instances.get(instance, {instance}):
                out[host] = out.get(host, True) and alive
        return out

    def selectors(self, host: str) -> list[str]:
        """PromQL label matchers for one host's series: '{instance="..."}' or
        '{Hostname="..."}' as its series named it; both, in turn, for a host not seen yet."""
        text = host.replace("\\", "\\\\").replace('"', '\\"')
        labels = [self._label[host]] if host in self._label else [INSTANCE, HOSTNAME]
        return ['{%s="%s"}' % (label, text) for label in labels]


def dcgm_pod(labels: dict[str, str]) -> tuple[str, str | None, str | None] | None:
    """(pod, namespace, container) a dcgm-exporter series names, or None."""
    pod = labels.get("pod")
    if not pod:
        return None
    return pod, labels.get("namespace") or None, labels.get("container") or None


def pod_holders(pods: set, used: int | None) -> tuple[tuple[GpuProcess, ...], tuple[tuple[str, str], ...]]:
    """(processes, not_reported) of a dcgm-exporter GPU that pods hold: one pod -> its
    entry with the GPU's memory; several -> none, and why per-process memory is n/a."""
    containers = sorted(
        (Container(CRI, None, name=c, pod=p, namespace=ns) for p, ns, c in pods), key=container_label
    )
    if len(containers) == 1:
        info = ProcessInfo(pid=POD_PID, visibility=NOT_VISIBLE, container=containers[0])
        return (GpuProcess(pid=POD_PID, used=used, info=info),), ()
    why = SHARED_WHY + ", ".join(container_label(c) for c in containers)
    return (), (("process_memory", why),)

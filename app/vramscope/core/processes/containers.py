"""Which container a process lives in, from the text of /proc/<pid>/cgroup.

Pure parsing, no file access (sources/machine/containers.py reads the files). The
layouts recognised, cgroup v1 (``N:controller:/path``) and v2 (``0::/path``):

- Docker, cgroupfs driver: ``/docker/<id>``; systemd driver:
  ``/system.slice/docker-<id>.scope``;
- Podman: ``.../libpod-<id>.scope`` (systemd) or ``/libpod_parent/libpod-<id>``
  (cgroupfs); ``libpod-conmon-<id>.scope`` is its monitor, not the container;
- containerd / CRI: ``cri-containerd-<id>.scope``; CRI-O: ``crio-<id>.scope``;
- Kubernetes, cgroupfs driver: ``/kubepods/<qos>/pod<uid>/<id>``; systemd
  driver: ``/kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid
  with _>.slice/cri-containerd-<id>.scope`` (and the kind/containerd form
  ``...pod<uid>.slice:cri-containerd:<id>``);
- LXC: ``/lxc/<name>`` or ``/lxc.payload.<name>``.

The innermost container wins (a kind node is itself a Docker container
holding pods). References: the cgroup(7) and cgroups-v2 kernel docs; the
Kubernetes "cgroup drivers" and "Pod QoS" docs; ``docker run --cgroup-parent``.

``ns_pid`` comes from the ``NSpid:`` line of /proc/<pid>/status (proc(5)):
the PID in each nested PID namespace, outermost first.
"""

from __future__ import annotations

import dataclasses
import re

from vramscope.core.samples import Container

DOCKER = "docker"
PODMAN = "podman"
CONTAINERD = "containerd"
CRIO = "cri-o"
CRI = "cri"  # a Kubernetes pod whose path does not name the runtime
LXC = "lxc"
KUBERNETES_RUNTIMES = (CONTAINERD, CRIO, CRI)  # runtimes that may name a pod (sources/machine/cri_names.py)

_ID = r"[0-9a-f]{64}"
_SCOPES = (  # (regex on one path component, runtime)
    (re.compile(rf"^docker-({_ID})\.scope$"), DOCKER),
    (re.compile(rf"^libpod-(?!conmon-)({_ID})(?:\.scope)?$"), PODMAN),
    (re.compile(rf"^cri-containerd-({_ID})\.scope$"), CONTAINERD),
    (re.compile(rf"^crio-(?!conmon-)({_ID})(?:\.scope)?$"), CRIO),
    (re.compile(rf"^containerd-({_ID})\.scope$"), CONTAINERD),
    (re.compile(rf":cri-containerd:({_ID})$"), CONTAINERD),
    (re.compile(rf":crio:({_ID})$"), CRIO),
)
_BARE_ID = re.compile(rf"^({_ID})$")
_UID = r"[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}"
_POD = re.compile(rf"(?:^|-)pod({_UID})(?:\.slice|$|:)")
_LXC = re.compile(r"^lxc\.payload\.(.+)$")


def parse_cgroup(text: str) -> Container | None:
    """The container named by a /proc/<pid>/cgroup text, or None (none, or unknown)."""
    best: Container | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        found = parse_cgroup_path(parts[2])
        if found is None:
            continue
        if best is None or (best.pod_uid is None and found.pod_uid is not None):
            best = found
    return best


def parse_cgroup_path(path: str) -> Container | None:
    """The innermost container in one cgroup path."""
    parts = [p for p in path.strip().split("/") if p]
    pod_uid = None
    for part in parts:
        m = _POD.search(part)
        if m:
            pod_uid = m.group(1).replace("_", "-")
    for i in range(len(parts) - 1, -1, -1):
        part = parts[i]
        for pattern, runtime in _SCOPES:
            m = pattern.search(part)
            if m:
                return Container(runtime=runtime, id=m.group(1), pod_uid=pod_uid)
        m = _BARE_ID.match(part)
        if m:
            parent = parts[i - 1] if i > 0 else ""
            if parent == "docker":
                return Container(runtime=DOCKER, id=m.group(1), pod_uid=pod_uid)
            if parent.startswith("libpod"):
                return Container(runtime=PODMAN, id=m.group(1), pod_uid=pod_uid)
            if pod_uid is not None:
                return Container(runtime=CRI, id=m.group(1), pod_uid=pod_uid)
        m = _LXC.match(part)
        if m:
            return Container(runtime=LXC, id=None, name=m.group(1))
        if i > 0 and parts[i - 1] == "lxc":
            return Container(runtime=LXC, id=None, name=part)
    return None


def parse_nspid(status_text: str) -> tuple[int, ...] | None:
    """The ``NSpid:`` PIDs (outermost namespace first), or None where absent."""
    for line in status_text.splitlines():
        if line.startswith("NSpid:"):
            try:
                pids = tuple(int(x) for x in line[6:].split())
            except ValueError:
                return None
            return pids or None
    return None


def inner_pid(nspids: tuple[int, ...] | None) -> int | None:
    """The PID inside the process's own namespace, when that is not ours."""
    if not nspids or len(nspids) < 2:
        return None
    return nspids[-1]


# Docker names containers of Kubernetes pods (dockershim) k8s_<container>_<pod>_<namespace>_<uid>_<n>
_K8S_NAME = re.compile(r"^k8s_([^_]+)_([^_]+)_([^_]+)_([^_]+)_\d+$")


def with_name(container: Container, name: str | None) -> Container:
    """The container with the name its runtime gave (pod and namespace where it says so)."""
    if not name:
        return container
    name = name.lstrip("/")
    m = _K8S_NAME.match(name)
    if m:
        return dataclasses.replace(container, name=m.group(1), pod=m.group(2), namespace=m.group(3))
    return dataclasses.replace(container, name=name)


def with_naming(container: Container, naming: tuple | None) -> Container:
    """The container with (container name, pod, namespace) from its runtime; a
    Docker-style name alone may still say its pod (``with_name``)."""
    if naming is None:
        return container
    name, pod, namespace = naming
    if pod is None:
        return with_name(container, name)
    return dataclasses.replace(container, name=name, pod=pod, namespace=namespace)


def container_from_dict(data) -> Container | None:
    """A Container back from ``Container.as_dict()`` (session files); anything else -> None."""
    if not isinstance(data, dict) or not isinstance(data.get("runtime"), str):
        return None
    fields = ("runtime", "id", "name", "pod_uid", "pod", "namespace")
    return Container(**{k: data[k] if isinstance(data.get(k), str) else None for k in fields})


def pod_label(container: Container) -> str:
    """A pod as Kubernetes names it: 'ml-team/trainer-7f9c'; 'pod 0d3c5a61' where
    only its UID is known (the cgroup path names no pod)."""
    if container.pod is not None:
        return f"{container.namespace}/{container.pod}" if container.namespace else container.pod
    return f"pod {(container.pod_uid or '?')[:8]}"


def container_label(container: Container) -> str:
    """'pod ml-team/trainer-7f9c · container trainer' for a named pod's container,
    'docker trainer' and the like otherwise."""
    if container.pod is None:
        return container.label
    name = f" · container {container.name}" if container.name else ""
    return f"pod {pod_label(container)}{name}"


def container_text(info) -> str:
    """A ProcessInfo's container and Slurm job as shown in tables: 'docker trainer
    (pid 1 inside)', 'slurm job 12345 · alice · train (step 0)'; '' outside both."""
    if info is None:
        return ""
    parts = [info.slurm.text] if info.slurm is not None else []
    if info.container is not None:
        inside = f" (pid {info.ns_pid} inside)" if info.ns_pid is not None else ""
        parts.append(container_label(info.container) + inside)
    return "; ".join(parts)


def stop_command(container: Container) -> str:
    """The command that stops this container, for fix texts."""
    ref = container.name or container.short_id or "CONTAINER"
    if container.pod is not None:
        ns = f" -n {container.namespace}" if container.namespace else ""
        return f"kubectl delete pod {container.pod}{ns}"
    if container.runtime == DOCKER:
        return f"docker stop {ref}"
    if container.runtime == PODMAN:
        return f"podman stop {ref}"
    if container.runtime == LXC:
        return f"lxc-stop -n {ref}"
    if container.runtime in (CONTAINERD, CRIO, CRI):
        if container.pod_uid is not None:
            return f"crictl stop {ref}  (or kubectl delete the pod with UID {container.pod_uid})"
        if container.runtime == CONTAINERD:
            return f"ctr task kill {container.id or ref}"
        return f"crictl stop {ref}"
    return f"stop container {ref}"


def stop_advice(container: Container) -> str:
    """The fix-text sentence for a process in a container."""
    return (
        f"It runs in {container_label(container)}: `{stop_command(container)}` stops the container "
        "(ending only the process may let the container's restart policy start it again)."
    )

"""A Kubernetes container's pod, namespace and container name, from its runtime.

The kubelet hands each container its names as CRI labels
(``io.kubernetes.pod.name``, ``io.kubernetes.pod.namespace``,
``io.kubernetes.container.name``: kubernetes pkg/kubelet/types/labels.go);
the runtimes keep them where a root process on the node can read them:

- CRI-O answers ``GET /containers/<id>`` on its socket (``crio.sock``, or
  the one ``CONTAINER_RUNTIME_ENDPOINT`` names, as for crictl) with
  the container's info as JSON, the labels under ``"labels"`` (CRI-O's
  inspect endpoint, what ``crio status`` reads);
- containerd's CRI plugin speaks gRPC only on its socket, but writes each
  task's OCI bundle, whose ``config.json`` annotations carry the names
  (``io.kubernetes.cri.sandbox-name``, ``...sandbox-namespace``,
  ``...container-name``: containerd's pkg/cri annotations) under
  ``/run/containerd/io.containerd.runtime.v2.task/k8s.io/<id>/``.

Both are root's to read on a usual node. What they say is untrusted text:
the answer is bounded in time and bytes (core/safe_io/bounded_http.py,
core/safe_io/bounded_read.py, no symlink followed), each name cut to MAX_NAME.
"""

from __future__ import annotations

import os
import re
import urllib.parse

from vramscope.core.safe_io.bounded_http import get_json
from vramscope.core.safe_io.bounded_read import read_json

MAX_NAME = 256  # characters of a container's, pod's or namespace's name kept (Kubernetes: at most 253)
MAX_ANSWER = 1 << 20  # bytes of one runtime answer or bundle config

CRIO_SOCKETS = ("/var/run/crio/crio.sock", "/run/crio/crio.sock")
ENDPOINT_VARIABLE = "CONTAINER_RUNTIME_ENDPOINT"  # crictl's: unix:///var/run/crio/crio.sock
CONTAINERD_BUNDLES = "/run/containerd/io.containerd.runtime.v2.task/k8s.io"

# the kubelet's CRI labels
POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
CONTAINER_NAME = "io.kubernetes.container.name"
# containerd's OCI annotations
SANDBOX_NAME = "io.kubernetes.cri.sandbox-name"
SANDBOX_NAMESPACE = "io.kubernetes.cri.sandbox-namespace"
CRI_CONTAINER_NAME = "io.kubernetes.cri.container-name"

_ID = re.compile(r"^[0-9a-f]{64}$")

# (container name, pod name, namespace); any may be None
Naming = tuple[str | None, str | None, str | None]


def crio_sockets() -> tuple[str, ...]:
    """CRI-O's sockets to try: the endpoint crictl is told (``CONTAINER_RUNTIME_ENDPOINT``,
    crictl(1)) where it is a Unix socket, then CRI-O's default places."""
    endpoint = os.environ.get(ENDPOINT_VARIABLE, "")
    given = (endpoint[len("unix://") :],) if endpoint.startswith("unix:///") else ()
    return given + tuple(s for s in CRIO_SOCKETS if s not in given)


def _text(value) -> str | None:
    return value[:MAX_NAME] if isinstance(value, str) and value else None


def naming_from(labels, keys: tuple[str, str, str]) -> Naming | None:
    """The names under ``keys`` (container, pod, namespace) of a labels object; None
    when it names no pod."""
    if not isinstance(labels, dict):
        return None
    name, pod, namespace = (_text(labels.get(k)) for k in keys)
    return (name, pod, namespace) if pod is not None else None


def crio_naming(socket: str, cid: str, timeout: float) -> Naming | None:
    """The names CRI-O's socket gives ``cid``; raises (OSError, HttpError, ValueError)
    where the socket fails, so the caller can leave it alone for a while."""
    status, data = get_json(
        f"http://localhost/containers/{urllib.parse.quote(cid)}",
        deadline=timeout,
        max_bytes=MAX_ANSWER,
        unix_socket=socket,
    )
    if status != 200 or not isinstance(data, dict):
        return None
    return naming_from(data.get("labels"), (CONTAINER_NAME, POD_NAME, POD_NAMESPACE))


def containerd_naming(bundles: str, cid: str) -> Naming | None:
    """The names in containerd's OCI bundle of ``cid``; None where it is not there
    or not readable (not root)."""
    if not _ID.match(cid):
        return None
    try:
        spec = read_json(os.path.join(bundles, cid, "config.json"), MAX_ANSWER)
    except (OSError, ValueError):
        return None
    annotations = spec.get("annotations") if isinstance(spec, dict) else None
    return naming_from(annotations, (CRI_CONTAINER_NAME, SANDBOX_NAME, SANDBOX_NAMESPACE))

"""Stand-ins for what a cluster node runs beside the GPUs: a `scontrol` on PATH
answering `scontrol show job --oneliner ID`, and CRI-O's socket answering
`GET /containers/<id>` with CRI-shaped JSON (labels the kubelet sets)."""

from __future__ import annotations

import json
import pathlib

import pytest

from .unix_http import UnixHttp


def write_scontrol(directory: pathlib.Path, jobs: dict[int, tuple[str, str, int]], delay: float = 0.0) -> str:
    """An executable `scontrol` in ``directory`` knowing ``jobs`` {id: (name, user, uid)};
    another id answers as Slurm does (exit 1). Returns its path."""
    lines = [
        "#!/bin/sh",
        f"sleep {delay}" if delay else "",
        'echo "$@" >> "$(dirname "$0")/asked"',
        'id="$4"',
        'case "$id" in',
    ]
    for job_id, (name, user, uid) in jobs.items():
        answer = (
            f"JobId={job_id} JobName={name} UserId={user}({uid}) GroupId={user}({uid}) "
            "MCS_label=N/A Priority=1 Nice=0 Account=lab QOS=normal JobState=RUNNING "
            "Partition=gpu TRES=cpu=8,mem=64G,node=1,gres/gpu=1"
        )
        lines.append(f"  {job_id}) printf '%s\\n' '{answer}' ;;")
    lines += [
        '  *) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1 ;;',
        "esac",
    ]
    path = directory / "scontrol"
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return str(path)


def scontrol_asked(directory: pathlib.Path) -> list[str]:
    asked = directory / "asked"
    return asked.read_text().splitlines() if asked.exists() else []


def cri_labels(namespace: str, pod: str, container: str) -> dict:
    return {
        "io.kubernetes.pod.name": pod,
        "io.kubernetes.pod.namespace": namespace,
        "io.kubernetes.container.name": container,
        "io.kubernetes.pod.uid": "0d3c5a61-7b2e-4c59-9f0a-3f1e2d4c5b6a",
    }


@pytest.fixture
def crio_socket(tmp_path_factory):
    """crio_socket(containers {id: labels}, delay=0) -> (the socket's path, the paths
    asked), serving CRI-O's inspect answer (name, pid, labels, annotations, sandbox, ...)."""
    servers = []

    def serve(containers: dict[str, dict], delay: float = 0.0) -> tuple[str, list[str]]:
        def answer(path: str) -> tuple[int, bytes]:
            cid = path.rsplit("/", 1)[-1]
            if not path.startswith("/containers/") or cid not in containers:
                return 404, b"can't find the container with id"
            labels = containers[cid]
            info = {
                "name": f"k8s_{labels['io.kubernetes.container.name']}_x",
                "pid": 4242,
                "image": "registry.example/trainer:1",
                "created_time": 1_700_000_000,
                "labels": labels,
                "annotations": {},
                "crio_annotations": {},
                "log_path": "/var/log/pods/x.log",
                "root": "/var/lib/containers/storage/overlay/x/merged",
                "sandbox": "f" * 64,
                "ip_addresses": ["10.0.0.7"],
            }
            return 200, json.dumps(info).encode()

        server = UnixHttp(str(tmp_path_factory.mktemp("crio") / "crio.sock"), answer, delay)
        servers.append(server)
        return server.path, server.asked

    yield serve
    for server in servers:
        server.close()

"""Stand-ins for what a cluster node runs beside the GPUs: a `scontrol` on PATH
answering `scontrol show job --oneliner ID`, and CRI-O's socket answering
`GET /containers/<id>` with CRI-shaped JSON (labels the kubelet sets)."""

from __future__ import annotations

import http.server
import json
import pathlib
import socketserver
import threading
import time

import pytest


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


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def crio_socket(tmp_path_factory):
    """crio_socket(containers {id: labels}, delay=0) -> the socket's path, serving
    CRI-O's inspect answer (name, pid, labels, annotations, sandbox, ...)."""
    servers = []

    def serve(containers: dict[str, dict], delay: float = 0.0) -> tuple[str, list[str]]:
        asked: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                asked.append(self.path)
                time.sleep(delay)
                cid = self.path.rsplit("/", 1)[-1]
                if self.path.startswith("/containers/") and cid in containers:
                    labels = containers[cid]
                    body = json.dumps(
                        {
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
                    ).encode()
                    self.send_response(200)
                else:
                    body = b"can't find the container with id"
                    self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        path = str(tmp_path_factory.mktemp("crio") / "crio.sock")
        server = _UnixHTTPServer(path, Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return path, asked

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()

"""Writes vramscope-dashboard.json: a Grafana dashboard for the metrics
`vramscope record --prometheus` serves (names from core/export/metrics.py).

    python packaging/grafana/make_dashboard.py   # after changing a metric name

Import it in Grafana (Dashboards -> New -> Import) and pick the Prometheus
data source; the `instance` variable picks machines (one per exporter). The
per-job and per-pod panels sum the per-process series by the owner labels
(core/processes/owner_labels.py); the pod panel also shows dcgm-exporter's GPUs by the
pod labels its Kubernetes mapping adds.
Format: https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/
"""

from __future__ import annotations

import json
import pathlib

from vramscope.core.export.metrics import GPU_GAUGES, PROCESS_MEMORY_METRIC
from vramscope.core.processes.owner_labels import CONTAINER, NAMESPACE, POD, SLURM_JOB, SLURM_JOB_NAME, USER
from vramscope.sources.remote.prometheus import DCGM_FB_USED, MiB

OUT = pathlib.Path(__file__).resolve().parent / "vramscope-dashboard.json"
DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
SEL = '{instance=~"$instance"}'


def gauge(attr: str) -> str:
    return next(name for a, name, _ in GPU_GAUGES if a == attr)


def panel(
    pid: int,
    title: str,
    targets: list[tuple[str, str]],
    unit: str,
    x: int,
    y: int,
    w: int = 12,
    h: int = 8,
    stack: bool = False,
) -> dict:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "datasource": DS,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "custom": {
                    "fillOpacity": 20 if stack else 0,
                    "stacking": {"mode": "normal" if stack else "none"},
                },
            },
            "overrides": [],
        },
        "options": {
            "legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi"},
        },
        "targets": [
            {"refId": chr(65 + i), "datasource": DS, "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def dashboard() -> dict:
    used, total, reserved = gauge("used"), gauge("total"), gauge("reserved")
    panels = [
        panel(
            1,
            "GPU memory used",
            [
                (f"{used}{SEL}", "{{instance}} GPU {{gpu}} used"),
                (f"{total}{SEL}", "{{instance}} GPU {{gpu}} total"),
            ],
            "bytes",
            0,
            0,
        ),
        panel(
            2,
            "GPU memory used (% of total)",
            [(f"100 * {used}{SEL} / {total}{SEL}", "{{instance}} GPU {{gpu}}")],
            "percent",
            12,
            0,
        ),
        panel(
            3,
            "Memory by process",
            [(f"{PROCESS_MEMORY_METRIC}{SEL}", "{{instance}} GPU {{gpu}} {{process}} ({{pid}})")],
            "bytes",
            0,
            8,
            stack=True,
        ),
        panel(
            4, "Driver-reserved memory", [(f"{reserved}{SEL}", "{{instance}} GPU {{gpu}}")], "bytes", 12, 8
        ),
        panel(
            5,
            "GPU utilisation",
            [(f"{gauge('util_gpu')}{SEL}", "{{instance}} GPU {{gpu}}")],
            "percent",
            0,
            16,
        ),
        panel(
            6,
            "Temperature and power",
            [
                (f"{gauge('temperature')}{SEL}", "{{instance}} GPU {{gpu}} °C"),
                (f"{gauge('power_w')}{SEL}", "{{instance}} GPU {{gpu}} W"),
            ],
            "short",
            12,
            16,
        ),
        panel(
            7,
            "PyTorch allocated vs reserved (agent)",
            [
                ("vramscope_agent_allocated_bytes" + SEL, "{{instance}} pid {{pid}} {{device}} allocated"),
                ("vramscope_agent_reserved_bytes" + SEL, "{{instance}} pid {{pid}} {{device}} reserved"),
            ],
            "bytes",
            0,
            24,
        ),
        panel(
            8,
            "PyTorch memory by bucket (agent)",
            [("vramscope_agent_bucket_bytes" + SEL, "{{instance}} pid {{pid}} {{bucket}}")],
            "bytes",
            12,
            24,
            stack=True,
        ),
        panel(
            9,
            "Memory by Slurm job",
            [
                (
                    f"sum by ({SLURM_JOB}, {SLURM_JOB_NAME}, {USER}) "
                    f'({PROCESS_MEMORY_METRIC}{{instance=~"$instance", {SLURM_JOB}!=""}})',
                    f"job {{{{{SLURM_JOB}}}}} · {{{{{USER}}}}} · {{{{{SLURM_JOB_NAME}}}}}",
                )
            ],
            "bytes",
            0,
            32,
            stack=True,
        ),
        panel(
            10,
            "Memory by Kubernetes pod",
            [
                (
                    f'sum by ({NAMESPACE}, {POD}) ({PROCESS_MEMORY_METRIC}{{instance=~"$instance", {POD}!=""}})',
                    f"{{{{{NAMESPACE}}}}}/{{{{{POD}}}}}",
                ),
                # dcgm-exporter's pod labels: the memory of the GPU the pod holds (MiB); pods
                # time-sharing one GPU each show the whole GPU's, so this one is not stacked
                (
                    f'{MiB} * {DCGM_FB_USED}{{instance=~"$instance", {POD}!=""}}',
                    f"{{{{{NAMESPACE}}}}}/{{{{{POD}}}}} · {{{{{CONTAINER}}}}} (GPU {{{{gpu}}}} on {{{{Hostname}}}}, dcgm-exporter)",
                ),
            ],
            "bytes",
            12,
            32,
        ),
    ]
    return {
        "__inputs": [
            {
                "name": "DS_PROMETHEUS",
                "label": "Prometheus",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "title": "vramscope: GPU memory",
        "uid": "vramscope-gpu-memory",
        "editable": True,
        "schemaVersion": 38,
        "version": 1,
        "tags": ["vramscope", "gpu"],
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "10s",
        "templating": {
            "list": [
                {
                    "name": "instance",
                    "label": "Machine",
                    "type": "query",
                    "datasource": DS,
                    "query": {"query": f"label_values({used}, instance)", "refId": "instance"},
                    "definition": f"label_values({used}, instance)",
                    "refresh": 2,
                    "multi": True,
                    "includeAll": True,
                    "allValue": ".*",  # "All" takes in dcgm-exporter's instances too (the pod panel)
                    "current": {"text": "All", "value": "$__all"},
                }
            ]
        },
        "panels": panels,
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")

"""Diagnostics over another machine's GPUs (--host, a fleet): the alerts name
the host, and nothing of this machine is looked up for that machine's processes."""

from __future__ import annotations

import dataclasses

from tests.core.detectors.scenarios import GiB, frame, gpu, proc
from vramscope.core.detectors import Diagnostics
from vramscope.sources.remote.hosts import HOST_BLOCK

KERNEL = (
    "/usr/bin/python3",
    "-m",
    "ipykernel_launcher",
    "-f",
    "/home/alice/.local/share/jupyter/runtime/kernel-1a2b-3c.json",
)


def remote(g, host="lab2", position=1, index=0):
    return dataclasses.replace(g, index=position * HOST_BLOCK + index, host=host, host_index=index)


def test_a_remote_kernel_s_squatter_alert_names_its_host_and_looks_nothing_up_here():
    looked_up = []
    engine = Diagnostics(notebook_finder=lambda pid, conn: looked_up.append(pid))
    alerts = []
    for t in range(0, 1201, 60):
        alerts = engine.feed(frame(t, [remote(gpu([proc(31337, 6 * GiB, sm=0, cmd=KERNEL)], util=0))]))
    [alert] = [a for a in alerts if a.kind == "squatter"]
    assert "on lab2 GPU 0" in alert.message and "GPU 64" not in alert.message
    assert looked_up == []  # the local Jupyter servers and /proc know nothing of lab2's pid


def test_a_local_kernel_is_still_looked_up_and_named_as_before():
    looked_up = []

    def finder(pid, conn):
        looked_up.append(pid)
        from vramscope.core.detectors.jupyter import NotebookHint

        return NotebookHint(None, "test")

    engine = Diagnostics(notebook_finder=finder)
    alerts = []
    for t in range(0, 1201, 60):
        alerts = engine.feed(frame(t, [gpu([proc(4242, 6 * GiB, sm=0, cmd=KERNEL)], util=0)]))
    [alert] = [a for a in alerts if a.kind == "squatter"]
    assert "on GPU 0" in alert.message and looked_up == [4242]


def test_an_alert_on_another_machine_names_it_in_message_evidence_and_json():
    from tests.core.detectors.cases import engine, growing_plain
    from vramscope.core.detectors.alert import alerts_to_json

    eng = engine()
    alerts = []
    for f in growing_plain()():
        alerts = eng.feed(dataclasses.replace(f, gpus=tuple(remote(g) for g in f.gpus)))
    [alert] = [a for a in alerts if a.kind == "growth"]
    assert (alert.host, alert.host_index, alert.gpu_label) == ("lab2", 0, "lab2 GPU 0")
    said = " ".join((alert.message, *alert.evidence))
    assert "on lab2 GPU 0" in said and "lab2 GPU 0: " in said and "GPU 64" not in said
    [doc] = alerts_to_json([alert])
    assert (doc["host"], doc["host_index"], doc["gpu"]) == ("lab2", 0, HOST_BLOCK)


def test_an_alert_on_this_machine_keeps_its_json_as_before():
    from tests.core.detectors.cases import engine, growing_plain
    from vramscope.core.detectors.alert import alerts_to_json

    eng = engine()
    alerts = []
    for f in growing_plain()():
        alerts = eng.feed(f)
    [alert] = [a for a in alerts if a.kind == "growth"]
    assert alert.host is None and alert.gpu_label == "GPU 0"
    [doc] = alerts_to_json([alert])
    assert "host" not in doc and doc["gpu"] == 0

"""Process identities are exact (pid, start time) tuples, which the garbage
collector stops tracking: on a 16 GPU x 1,024 process box, the 16k identities
held as dict keys (labels, kin, row templates, colours, ...) must not be walked
by every full collection, one of the window's longest event-loop stalls
(issue 28; a tuple subclass such as a NamedTuple stays tracked for good)."""

from __future__ import annotations

import gc
import json

from core.test_pipeline_labels import Churning
from vramscope.core.detectors.alert import INFO, Alert, AlertKind
from vramscope.core.processes.frame_rows import rows_from_frame
from vramscope.core.flow.pipeline import Pipeline
from vramscope.core.samples import AgentReport, Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.store.store import Store, proc_identity, proc_key
from vramscope.core.stream import protocol
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer
from vramscope.core.units import GiB


def untracked(identities) -> bool:
    identities = list(identities)
    gc.collect()
    return bool(identities) and all(type(i) is tuple and not gc.is_tracked(i) for i in identities)


def process(pid: int, start: float | None = 1.7e9) -> GpuProcess:
    info = ProcessInfo(pid=pid, start_time=start, user="ann", ppid=1, cmdline=("python", "x.py"))
    return GpuProcess(pid=pid, used=GiB, info=info)


def test_the_identities_of_processes_agents_alerts_and_series_are_untracked_tuples():
    procs = [process(4242), process(7, None)]
    report = AgentReport(pid=4242, start_time=1.7e9)
    alert = Alert(
        kind=AlertKind.USER_REQUEST, severity=INFO, gpu=0, pid=4242, start_time=1.7e9, since=None, message=""
    )
    idents = [p.identity for p in procs] + [p.info.identity for p in procs]
    idents += [report.identity, alert.identity, proc_identity(proc_key(0, 4242, 1.7e9))]
    assert untracked(idents)
    assert idents[0] == (4242, 1.7e9) == report.identity == alert.identity  # one value, however made
    pid, start = procs[1].identity
    assert (pid, start) == (7, None)


def test_a_table_rows_identity_is_an_untracked_tuple():
    frame = Frame(time=2e9, gpus=(GpuSample(index=0, total=24 * GiB, processes=(process(4242), process(7))),))
    idents = [r.identity for r in rows_from_frame(frame) if getattr(r, "pid", None) is not None]
    assert sorted(idents) == [(7, 1.7e9), (4242, 1.7e9)]
    assert untracked(idents)


def test_the_pipelines_labels_and_kin_are_keyed_by_untracked_tuples():
    pipeline = Pipeline(Churning(), store=Store(max_series=64))
    for _ in range(5):  # labels learnt from frames: a run and a new job each pass
        pipeline.sample_once()
    pipeline.learn_labels([process(1), process(2)])  # and from a reopened session's processes
    assert len(pipeline.labels()) == 8 and len(pipeline.kin()) == 2
    assert untracked(pipeline.labels()) and untracked(pipeline.kin())
    assert pipeline.labels()[(100, 1.0)] == "train.py (100)"  # found by a plain tuple


def test_the_processes_a_stream_reader_assembles_have_untracked_identities():
    writer, reader = FrameDiffer(keyframe_every=3), FrameAssembler()
    got = []
    for k in range(4):  # a whole frame, then deltas that change the figures
        procs = tuple(process(pid).with_figures(GiB + k, k, None, None) for pid in (1, 2, 3))
        frame = Frame(time=float(k), gpus=(GpuSample(index=0, total=24 * GiB, processes=procs),))
        m = json.loads(protocol.encode(writer.message(frame, [])))
        read, _alerts = (reader.whole if m["type"] == protocol.FRAME else reader.delta)(m)
        got += [p.identity for p in read.gpus[0].processes]
    assert untracked(got)
    assert got[-3:] == [(1, 1.7e9), (2, 1.7e9), (3, 1.7e9)]

"""MIG slices are recorded and come back when a session is reopened."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np

from vramscope.core.samples import GpuProcess, GpuSample, MigSlice
from vramscope.core.session import SessionWriter, load_into_store, open_session
from vramscope.core.store.store import Store, mig_key
from vramscope.core.units import GiB

from tests.core.session.helpers import T0, frame, info

BIG = "MIG-11111111-2222-5333-8444-555555555555"
SMALL = "MIG-66666666-7777-5888-9999-aaaaaaaaaaaa"


def mig_frame(k: int):
    """frame(k) with GPU 1 replaced by an H100 in MIG mode: two slices, one busy."""
    base = frame(k)
    trainer = GpuProcess(pid=7070, used=(10 + k) * GiB, sm=None, info=info(7070, T0 - 50), mig_uuid=BIG)
    h100 = GpuSample(
        index=1,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-hhhh",
        total=80 * GiB,
        used=(11 + k) * GiB,
        util_gpu=None,
        mig_mode=True,
        processes=(trainer,),
        slices=(
            MigSlice(
                index=6,
                uuid=BIG,
                name="NVIDIA H100 80GB HBM3 MIG 3g.40gb",
                profile="3g.40gb",
                gpu_instance_id=1,
                compute_instance_id=0,
                total=40 * GiB,
                used=(10 + k) * GiB,
                free=(30 - k) * GiB,
                processes=(trainer,),
            ),
            MigSlice(
                index=5,
                uuid=SMALL,
                profile="1g.10gb",
                gpu_instance_id=13,
                compute_instance_id=0,
                total=10 * GiB,
                used=0,
                free=10 * GiB,
            ),
        ),
    )
    return dataclasses.replace(base, gpus=(base.gpus[0], h100))


def record_mig(path, n=12) -> Store:
    store = Store()
    writer = SessionWriter(path, meta={"source": "test", "simulated": True})
    store.listeners.subscribe(writer)
    for k in range(n):
        store.append(mig_frame(k))
    writer.close()
    return store


def test_slices_come_back_with_their_processes(tmp_path):
    path = tmp_path / "mig.vramscope"
    record_mig(path)
    with open_session(path) as r:
        h100 = r.frame_at(T0 + 7).gpus[1]
    assert h100.mig_mode is True
    assert [(s.profile, s.gpu_instance_id, s.total, s.used) for s in h100.slices] == [
        ("3g.40gb", 1, 40 * GiB, 17 * GiB),
        ("1g.10gb", 13, 10 * GiB, 0),
    ]
    (trainer,) = h100.processes
    assert trainer.mig_uuid == BIG and trainer.sm is None
    assert h100.slice_of(trainer).profile == "3g.40gb"
    assert h100.slices[0].processes == (trainer,)


def test_reopened_store_has_each_slice_timeline(tmp_path):
    path = tmp_path / "mig.vramscope"
    live = record_mig(path)
    with open_session(path) as r:
        loaded = load_into_store(r)
    for key in (mig_key(1, BIG, "used"), mig_key(1, SMALL, "total")):
        a, b = live.series(key), loaded.series(key)
        assert len(a[0]) == 12
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_a_session_written_before_mig_tables_still_opens(tmp_path):
    path = tmp_path / "old.vramscope"
    record_mig(path, n=3)
    db = sqlite3.connect(path)
    db.executescript("DROP TABLE mig_slices; DROP TABLE mig_samples; DROP TABLE mig_procs;")
    db.close()
    with open_session(path) as r:
        h100 = r.frame_at(T0 + 2).gpus[1]
        assert not r.damaged
    assert h100.slices == () and h100.processes[0].pid == 7070

"""A MIG-enabled GPU in the window: the parent card says MIG mode, each slice
has its own row (card + timeline of its own processes), the table names the
slice, and per-process SM % on MIG reads n/a with the reason."""

from __future__ import annotations

from PySide6.QtCore import Qt

from vramscope.core.samples import Frame, GpuProcess, GpuSample, MigSlice, ProcessInfo
from vramscope.core.store.store import mig_key
from vramscope.core.units import GiB
from vramscope.ui.processes.process_model import COL

from .frames import T0
from .helpers import drawn_through, save, table_cell, table_column

BIG = "MIG-5c1f8a3e-0d2b-5b1e-9c47-3a0d2e9f1b11"
MID = "MIG-7a2b9c4d-1e3f-5a6b-8c7d-9e0f1a2b3c4d"
SMALL = "MIG-0b1c2d3e-4f50-5617-8293-a4b5c6d7e8f9"


def _info(pid, user, *cmd):
    return ProcessInfo(pid=pid, start_time=T0 - 600, user=user, name="python", cmdline=cmd)


def lab_frame(k: int) -> Frame:
    """An H100 in three slices (alice trains on 3g.40gb, bob serves on 2g.20gb, one idle)
    and an ordinary RTX 4090."""
    train = GpuProcess(
        pid=4242,
        used=(20 + k // 10) * GiB,
        sm=None,
        mig_uuid=BIG,
        info=_info(4242, "alice", "python", "train.py"),
    )
    serve = GpuProcess(
        pid=5151,
        used=14 * GiB,
        sm=None,
        mig_uuid=MID,
        info=_info(5151, "bob", "python", "-m", "vllm.entrypoints.openai.api_server"),
    )
    other = GpuProcess(pid=6161, used=3 * GiB, sm=25, info=_info(6161, "carol", "python", "eval.py"))
    slices = (
        MigSlice(
            index=6,
            uuid=BIG,
            name="NVIDIA H100 80GB HBM3 MIG 3g.40gb",
            profile="3g.40gb",
            gpu_instance_id=1,
            compute_instance_id=0,
            total=40 * GiB,
            used=train.used + GiB // 2,
            free=40 * GiB - train.used - GiB // 2,
            processes=(train,),
        ),
        MigSlice(
            index=5,
            uuid=MID,
            name="NVIDIA H100 80GB HBM3 MIG 2g.20gb",
            profile="2g.20gb",
            gpu_instance_id=5,
            compute_instance_id=0,
            total=20 * GiB,
            used=15 * GiB,
            free=5 * GiB,
            processes=(serve,),
        ),
        MigSlice(
            index=4,
            uuid=SMALL,
            name="NVIDIA H100 80GB HBM3 MIG 1g.10gb",
            profile="1g.10gb",
            gpu_instance_id=13,
            compute_instance_id=0,
            total=10 * GiB,
            used=0,
            free=10 * GiB,
        ),
    )
    h100 = GpuSample(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-h100",
        pci_bus_id="0000:17:00.0",
        total=80 * GiB,
        used=sum(s.used for s in slices),
        free=80 * GiB - sum(s.used for s in slices),
        util_gpu=None,
        temperature=52,
        mig_mode=True,
        processes=(train, serve),
        slices=slices,
    )
    rtx = GpuSample(
        index=1,
        name="NVIDIA GeForce RTX 4090",
        uuid="GPU-rtx",
        total=24 * GiB,
        used=4 * GiB,
        free=20 * GiB,
        util_gpu=30,
        processes=(other,),
    )
    return Frame(time=T0 + k, gpus=(h100, rtx))


def test_each_slice_has_its_own_row_and_timeline(make_window, artifacts_dir):
    frames = [lab_frame(k) for k in range(90)]
    w = make_window(frames)
    panel = w.gpu_panel
    assert sorted(panel.grid.rows) == [0, 1]
    assert list(panel.grid.slice_rows) == [(0, BIG), (0, MID), (0, SMALL)]  # by instance id
    parent = panel.grid.rows[0].card
    assert parent.mig.isVisible()
    assert parent.mig.text() == "MIG mode · 3 slices: 3g.40gb, 2g.20gb, 1g.10gb"
    big = panel.grid.slice_rows[(0, BIG)]
    assert big.card.heading.text() == "GPU 0  ·  MIG slice"
    assert big.card.title.text() == "3g.40gb  ·  GI 1 · CI 0"
    assert big.card.used.text() == "28.5 / 40.0 GiB"  # the slice's memory, not the card's
    assert "SM % n/a on MIG" in big.card.summary.text()
    # the slice's timeline draws the slice's series and only its own process
    t, v = w.feed.store.series(mig_key(0, BIG, "used"))
    x, y = big.timeline.used_curve.getData()
    t, v = w.feed.store.series(mig_key(0, BIG, "used"), t[-1] - 60)  # the last minute (window "1m")
    assert len(t) > 30 and drawn_through(x, y * GiB, t, v)
    legend = " ".join(big.timeline.legend.names())
    assert "train.py" in legend and "vllm" not in legend.lower()
    assert not panel.grid.rows[1].card.mig.isVisible()
    save(w, artifacts_dir, "mig-1400x900.png")
    w.resize(1024, 700)
    w.refresh(force=True)
    save(w, artifacts_dir, "mig-1024x700.png")


def test_the_table_names_the_slice_and_explains_sm_na(make_window):
    w = make_window([lab_frame(k) for k in range(5)])
    assert not w.table.view.isColumnHidden(COL["MIG"])
    assert table_cell(w, 4242, "MIG") == "3g.40gb"
    assert table_cell(w, 5151, "MIG") == "2g.20gb"
    assert table_cell(w, 6161, "MIG") == ""
    assert table_cell(w, 4242, "SM %") == "n/a"
    row = table_column(w, "PID").index("4242")
    tip = w.table.model.index(row, COL["SM %"]).data(Qt.ItemDataRole.ToolTipRole)
    assert "no per-process SM % on a MIG slice" in tip


def test_without_mig_no_slice_rows_and_no_mig_column(make_window, scripted_frames):
    w = make_window(scripted_frames)
    assert w.gpu_panel.grid.slice_rows == {}
    assert w.table.view.isColumnHidden(COL["MIG"])


def test_an_agent_on_a_slice_is_shown_on_that_slice():
    from vramscope.core.samples import AgentDevice, AgentReport
    from vramscope.ui.agents.agent_texts import header_text

    frame = lab_frame(10)
    # torch reports the slice's uuid without NVML's "MIG-" prefix
    report = AgentReport(
        pid=4242,
        start_time=T0 - 600,
        step=12,
        devices=(AgentDevice(device="cuda:0", gpu_uuid=BIG[4:], allocated=20 * GiB, reserved=22 * GiB),),
    )
    text = header_text(report, frame, T0 + 10)
    assert "GPU 0 MIG 3g.40gb" in text and "PID 4242" in text
    plain = AgentReport(pid=6161, start_time=T0 - 600, devices=(AgentDevice(device="cuda:0"),))
    assert " GPU 1 " in f" {header_text(plain, frame, T0 + 10)} "

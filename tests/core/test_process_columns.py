"""A GPU's processes as the stream reader holds them (core/processes/process_columns.py):
they read as the tuple of GpuProcess they stand for, and a big box's moving
figures leave nothing behind for the garbage collector to walk (issue 28:
the window's longest stalls were its full collections)."""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

from remote.test_stream_deltas import procs, read
from vramscope.core.processes.process_columns import (
    ProcessColumns,
    described,
    described_by,
    identities,
    info_of,
    info_row_of,
    moving_figures,
    row_of,
    used,
    users,
)
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.stream import codec
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer

GiB = 1 << 30
process_lists = st.lists(procs, max_size=8, unique_by=lambda p: (p.pid, p.mig_uuid)).map(tuple)


def columns_of(processes: tuple) -> ProcessColumns:
    return ProcessColumns(tuple(map(row_of, processes)), tuple(info_row_of(p.info) for p in processes))


@settings(max_examples=200)
@given(process_lists)
def test_columns_read_as_the_tuple_of_processes(processes):
    columns = columns_of(processes)
    assert columns == processes and processes == columns and columns == columns_of(processes)
    assert len(columns) == len(processes) and bool(columns) == bool(processes)
    assert tuple(columns) == processes and columns[:2] == processes[:2] and columns[::-1] == processes[::-1]
    assert [p.identity for p in columns] == [p.identity for p in processes]
    assert hash(columns) == hash(processes)
    assert codec.from_wire(GpuSample, codec.to_wire(GpuSample(index=0, processes=columns))) == GpuSample(
        index=0, processes=processes
    )
    for proc in processes:
        assert proc in columns and columns[columns.index(proc)] == proc
        assert info_of(info_row_of(proc.info)) == proc.info


@settings(max_examples=100)
@given(process_lists)
def test_what_the_views_read_off_the_rows_is_what_the_processes_say(processes):
    """The store, the labels and the table read these without making the processes."""
    columns = columns_of(processes)
    for reader in (identities, used, users, described, moving_figures):
        assert list(reader(columns)) == list(reader(processes))
    # what the table keeps a row's template by: equal keys, one object per unchanged value
    for (ident, agent, kinds, mig, value, description), proc, row, info in zip(
        described_by(columns), processes, columns.rows, columns.infos
    ):
        assert (ident, agent, kinds, mig) == (proc.identity, proc.has_agent, proc.kinds, proc.mig_uuid)
        assert value is row and description is info
    assert [d[:4] for d in described_by(columns)] == [d[:4] for d in described_by(processes)]


@given(process_lists, process_lists)
def test_columns_differ_where_the_processes_do(a, b):
    assert (columns_of(a) == columns_of(b)) == (a == b)
    assert (columns_of(a) == b) == (a == b)


def big_box(k: int, gpus: int = 4, per_gpu: int = 500) -> Frame:
    """Every process's memory and SM % move every frame, as on a busy box."""
    return Frame(
        time=float(k),
        gpus=tuple(
            GpuSample(
                index=g,
                used=g * GiB,
                processes=tuple(
                    GpuProcess(
                        pid=10_000 + g * per_gpu + p,
                        used=(p + k) % 7 * GiB,
                        sm=(p + k) % 100,
                        info=ProcessInfo(
                            pid=10_000 + g * per_gpu + p,
                            start_time=1.7e9 + p,
                            user="ana",
                            name="python",
                            cmdline=("python", f"train_{p}.py"),
                        ),
                    )
                    for p in range(per_gpu)
                ),
            )
            for g in range(gpus)
        ),
    )


def values_alive() -> tuple[int, int]:
    """How many GpuProcess and ProcessInfo values are alive."""
    gc.collect()
    objects = gc.get_objects()
    return sum(type(o) is GpuProcess for o in objects), sum(type(o) is ProcessInfo for o in objects)


def test_a_busy_box_read_from_a_stream_leaves_no_process_objects_to_collect():
    procs_before, infos_before = values_alive()
    writer, reader = FrameDiffer(), FrameAssembler()
    frames = [read(reader, writer.message(big_box(k), []))[0] for k in range(4)]
    last = frames[-1]
    assert last == big_box(3)
    del writer  # (the writer's side holds its own: it is in the sampler's process)
    # no GpuProcess or ProcessInfo value is held between frames (2,000 processes
    # here): each is made when read ...
    procs, infos = values_alive()
    assert procs - procs_before < 100 and infos - infos_before < 100
    # ... and the figures that moved and the descriptions are rows of atoms the
    # collector no longer tracks
    columns = [gpu.processes for gpu in last.gpus]
    assert not any(gc.is_tracked(row) for c in columns for row in c.rows + c.infos)
    # descriptions that did not change are the same rows frame to frame
    first_infos, last_infos = frames[1].gpus[0].processes.infos, last.gpus[0].processes.infos
    assert all(a is b for a, b in zip(first_infos, last_infos))

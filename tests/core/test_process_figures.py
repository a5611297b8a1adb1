"""A stream delta's processes (core/stream/deltas.py) are rebuilt with
GpuProcess.with_figures: the same process as the dataclass would make, every
field kept (a field added to GpuProcess and forgotten there fails here)."""

from __future__ import annotations

import dataclasses

from vramscope.core.samples import GpuProcess, ProcessInfo


def test_new_figures_keep_everything_else_of_the_process():
    info = ProcessInfo(pid=7, start_time=12.5, user="alice", name="python", cmdline=("python", "train.py"))
    old = GpuProcess(
        pid=7,
        used=1 << 30,
        kinds=("compute", "graphics"),
        sm=40,
        info=info,
        has_agent=True,
        mig_uuid="MIG-1",
        cpu_percent=99.0,
        host_memory=1 << 20,
    )
    new = old.with_figures(2 << 30, 55, 12.0, None)
    made = dataclasses.replace(old, used=2 << 30, sm=55, cpu_percent=12.0, host_memory=None)
    for f in dataclasses.fields(GpuProcess):
        assert getattr(new, f.name) == getattr(made, f.name), f.name
    assert new == made and new.identity == old.identity == (7, 12.5)

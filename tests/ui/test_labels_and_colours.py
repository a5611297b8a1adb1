"""How processes are named in the legend, and their colours."""

from __future__ import annotations

from vramscope.core.samples import GpuProcess, ProcessInfo
from vramscope.core.processes.process_names import process_label
from vramscope.ui.qt.pens import ColourBook
from vramscope.ui.qt.theme import PROCESS_COLOURS


def _proc(pid, *cmd, name="python"):
    return GpuProcess(pid=pid, used=1, info=ProcessInfo(pid=pid, name=name, cmdline=tuple(cmd) or None))


def test_labels_say_what_an_engineer_calls_the_process():
    assert process_label(_proc(1, "python", "train.py", "--lr", "3e-4")) == "train.py (1)"
    assert process_label(_proc(2, "/usr/bin/python3", "-u", "/srv/x/serve.py")) == "serve.py (2)"
    assert (
        process_label(_proc(3, "python", "-m", "vllm.entrypoints.api_server"))
        == "vllm.entrypoints.api_server (3)"
    )
    assert (
        process_label(_proc(4, "python", "-m", "ipykernel_launcher", "-f", "k.json")) == "Jupyter kernel (4)"
    )
    assert process_label(_proc(5, "/usr/lib/xorg/Xorg", "vt2", name="Xorg")) == "Xorg (5)"
    assert process_label(GpuProcess(pid=6, used=None)) == "pid 6"


def test_colours_are_stable_and_distinct_per_identity():
    book = ColourBook()
    ids = [(p, 100.0) for p in range(len(PROCESS_COLOURS))]
    first = [book.style(i) for i in ids]
    assert len({c for c, _ in first}) == len(PROCESS_COLOURS)
    assert [book.style(i) for i in reversed(ids)] == first[::-1]
    # a reused PID is a new process: it gets its own style
    reused = book.style((0, 200.0))
    assert reused != first[0] and reused[1] == 1  # colours repeat dashed past the palette

"""The Name a process gets from what the system says about it: a Jupyter kernel
names its notebook (from Jupyter Server's JPY_SESSION_NAME), a server its model."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from hypothesis import given, strategies as st

from vramscope.core.processes.process_names import display_name, model_of
from vramscope.core.samples import ProcessInfo
from vramscope.sources.machine.processes import ProcessCache


def test_a_jupyter_kernel_is_named_by_its_notebook():
    # a stand-in kernel: the argv Jupyter uses, the environment Jupyter Server gives it
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
            "ipykernel_launcher",
            "-f",
            "/tmp/kernel-1.json",
        ],
        env=dict(os.environ, JPY_SESSION_NAME="/home/alice/notebooks/analysis.ipynb"),
    )
    try:
        deadline = time.monotonic() + 10
        info = ProcessCache().lookup(child.pid)
        while "ipykernel_launcher" not in (info.cmdline or ()) and time.monotonic() < deadline:
            time.sleep(0.05)  # (exec not done yet)
            info = ProcessCache().lookup(child.pid)
        assert info.notebook == "/home/alice/notebooks/analysis.ipynb"
        assert display_name(info) == "Jupyter kernel · analysis.ipynb"
    finally:
        child.kill()
        child.wait()
    plain = ProcessCache().lookup(os.getpid())
    assert plain.notebook is None  # not a kernel: its environment is not read


def test_servers_are_named_by_their_model():
    name = display_name(ProcessInfo(pid=1, cmdline=("vllm", "serve", "meta-llama/Llama-3-8B")))
    assert name == "vLLM · Llama-3-8B"
    assert (
        display_name(
            ProcessInfo(pid=1, cmdline=("python", "-m", "embed_server", "--model=BAAI/bge-large-en-v1.5"))
        )
        == "embed_server · bge-large-en-v1.5"
    )
    assert display_name(ProcessInfo(pid=1, cmdline=("python", "train.py"))) == "train.py"
    assert display_name(None) == ""


@given(
    st.lists(
        st.one_of(
            st.sampled_from(["vllm", "serve", "--model", "--model=", "-", "/", ""]), st.text(max_size=12)
        ),
        max_size=8,
    )
)
def test_model_of_never_fails_on_any_command_line(cmd):
    found = model_of(tuple(cmd))
    assert found is None or (isinstance(found, str) and found and not found.startswith("-"))

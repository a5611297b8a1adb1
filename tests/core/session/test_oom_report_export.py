"""`vramscope export FILE --format oom-report`: the recorded OOMs' post-mortems as Markdown."""

from __future__ import annotations

from tests.agent import snapshots as S
from tests.agent.snapshots import GiB, MiB
from tests.core.session.helpers import T0, frame
from vramscope.agent.allocator.segments import summarize
from vramscope.cli import main
from vramscope.core.agent_figures.module_figures import ModuleFigures
from vramscope.core.samples import AgentEvent, AgentReport, Frame
from vramscope.core.session import SessionWriter
from vramscope.core.store.store import Store


def _session(tmp_path, with_oom=True, modules=()):
    path = tmp_path / "run.vramscope"
    store = Store()
    w = SessionWriter(path)
    store.listeners.subscribe(w)
    for k in range(5):
        store.append(frame(k))
    events = ()
    if with_oom:
        data = {
            "device": "cuda:0",
            "requested": 2 * GiB,
            "device_free": 1 * GiB,
            "device_total": 24 * GiB,
            "allocated": 18 * GiB,
            "reserved": 19 * GiB,
            "step": 41,
            "source": "observer",
            "buckets": {
                "weights": GiB,
                "gradients": GiB,
                "optimizer_state": 2 * GiB,
                "other_allocated": 14 * GiB,
                "cached_free": GiB,
            },
            "allocator": summarize(S.fragmented()["segments"], "cuda:0"),
            "tensors": [
                {
                    "bytes": GiB,
                    "shape": [16, 1024, 16384],
                    "dtype": "float32",
                    "module": None,
                    "site": "/home/alice/proj/train.py:88 in forward",
                }
            ],
            "gpu_processes": [{"pid": 5151, "name": "python3", "used": 700 * MiB}],
            "outside_pytorch": 300 * MiB,
        }
        events = (AgentEvent("oom", T0 + 5.5, data),)
    if modules:  # the agent's last sampled step before the OOM, as the window recorded it
        store.append(
            Frame(
                time=T0 + 5,
                gpus=frame(5).gpus,
                agents=(AgentReport(pid=4242, start_time=T0 - 100, modules=modules),),
            )
        )
    store.append(
        Frame(
            time=T0 + 6,
            gpus=frame(6).gpus,
            agents=(AgentReport(pid=4242, start_time=T0 - 100, events=events),),
        )
    )
    w.close()
    return path


def test_oom_report_export_writes_the_post_mortem_beside_the_session(tmp_path, capsys):
    path = _session(tmp_path)
    assert main(["export", str(path), "--format", "oom-report"]) == 0
    assert "wrote 1 OOM reports" in capsys.readouterr().out
    md = (tmp_path / "run.oom-report.md").read_text()
    assert md.startswith("# Out-of-memory post-mortems")
    assert "CUDA out of memory on cuda:0 at step 41" in md
    assert "| fragmentation | 320.0 MiB |" in md and "| other processes | 700.0 MiB |" in md
    assert "| outside PyTorch | 4.0 MiB |" in md and "| real need | 0 B |" in md
    assert "| 5151 | python3 | 700.0 MiB |" in md
    assert "1.0 GiB float32[16x1024x16384] at /home/alice/proj/train.py:88 in forward" in md
    assert "| micro-batch ÷2 | 7.0 GiB | yes |" in md


def _module(name, parent, activations, device="cuda:0"):
    return ModuleFigures(
        name=name,
        parent=parent,
        weights=100 * MiB,
        gradients=100 * MiB,
        optimizer_state=200 * MiB,
        activations=activations,
        measured_step=40,
        device=device,
    )


def test_the_report_names_the_modules_the_session_recorded_before_the_oom(tmp_path):
    modules = (
        _module("encoder", None, 3 * GiB),
        _module("encoder.layers.0", "encoder", 2 * GiB),
        _module("encoder.layers.1", "encoder", GiB),
        _module("lm_head", None, 300 * MiB),
        _module("draft_model", None, 20 * GiB, device="cuda:1"),  # another GPU's: not this OOM's
    )
    path = _session(tmp_path, modules=modules)
    assert main(["export", str(path), "--format", "oom-report"]) == 0
    md = (tmp_path / "run.oom-report.md").read_text()
    assert "### Largest modules" in md
    table = md.split("### Largest modules")[1]
    # the encoder (most of the total) opened into its layers, each counted once
    assert "| encoder.layers.0 | 100.0 MiB | 100.0 MiB | 200.0 MiB | 2.0 GiB |" in table
    assert "| lm_head |" in table and "| encoder |" not in table and "draft_model" not in md
    assert "activation checkpointing on encoder.layers.0" in md


def test_a_session_without_module_figures_has_no_modules_section(tmp_path):
    path = _session(tmp_path)
    assert main(["export", str(path), "--format", "oom-report"]) == 0
    assert "### Largest modules" not in (tmp_path / "run.oom-report.md").read_text()


def test_redacted_oom_report_keeps_file_names_only(tmp_path):
    path = _session(tmp_path)
    out = tmp_path / "r.md"
    assert main(["export", str(path), "--format", "oom-report", "--out", str(out), "--redact"]) == 0
    md = out.read_text()
    assert "at train.py:88 in forward" in md and "/home/alice" not in md


def test_a_session_without_an_oom_says_so(tmp_path):
    path = _session(tmp_path, with_oom=False)
    out = tmp_path / "none.md"
    assert main(["export", str(path), "--format", "oom-report", "--out", str(out)]) == 0
    assert "No out-of-memory event in this session." in out.read_text()

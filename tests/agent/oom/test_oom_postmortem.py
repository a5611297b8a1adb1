"""The OOM post-mortem: the report built from an OOM event, the allocator's picture
at that instant, per-module figures and live tensors where known, NVML's other
processes where the monitor has them -- and said on the training process's stderr."""

from __future__ import annotations

import pytest
import io
import json
import os
import subprocess
import sys
import textwrap

from tests.agent import snapshots as S
from tests.agent.snapshots import GiB, MiB
from vramscope.agent.oom import oom_fixes
from vramscope.agent.oom import oom_report
from vramscope.agent.oom import oom_text
from vramscope.agent.oom import postmortem
from vramscope.core.agent_figures import oom_context
from vramscope.sources.agents import agent_modules
from vramscope.sources.demo import allocator_replay as replay
from vramscope.sources.demo.allocator_replay import ReplayProvider
from vramscope.agent.allocator.segments import summarize
from vramscope.agent.allocator.stats import StatsReader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _event(**over):
    alloc = summarize(S.fragmented()["segments"], "cuda:0")  # 320 MiB in slivers, 240 recoverable
    ev = {
        "device": "cuda:0",
        "requested": 2 * GiB,
        "device_free": 1 * GiB,
        "device_total": 24 * GiB,
        "allocated": 18 * GiB,
        "reserved": 19 * GiB,
        "step": 41,
        "source": "observer",
        "buckets": {
            "weights": 1 * GiB,
            "gradients": 1 * GiB,
            "optimizer_state": 2 * GiB,
            "other_allocated": 14 * GiB,
            "cached_free": 1 * GiB,
        },
        "allocator": alloc,
    }
    ev.update(over)
    return ev


MODULES = [
    {
        "name": "encoder.layers.0",
        "parent": "encoder",
        "weights": 100 * MiB,
        "gradients": 100 * MiB,
        "optimizer_state": 200 * MiB,
        "activations": 600 * MiB,
        "shared": False,
        "why": None,
    },
    {
        "name": "encoder.layers.1",
        "parent": "encoder",
        "weights": 100 * MiB,
        "gradients": 100 * MiB,
        "optimizer_state": 200 * MiB,
        "activations": 500 * MiB,
        "shared": False,
        "why": None,
    },
    {
        "name": "lm_head",
        "parent": "",
        "weights": 300 * MiB,
        "gradients": 300 * MiB,
        "optimizer_state": 600 * MiB,
        "activations": None,
        "shared": True,
        "why": "tied to embed",
    },
]
OTHERS = [
    {"pid": 4242, "name": "python (jupyter kernel)", "used": 600 * MiB},
    {"pid": 777, "name": "Xorg", "used": 100 * MiB},
]


def test_shortfall_splits_into_fragmentation_others_outside_and_real_need():
    r = oom_report.build_report(_event(), others=OTHERS, outside_pytorch=300 * MiB)
    assert r["shortfall"] == 1 * GiB  # asked 2 GiB, 1 GiB free
    assert r["split"] == {
        "fragmentation": 320 * MiB,
        "other_processes": 700 * MiB,
        "outside_pytorch": 4 * MiB,
        "real_need": 0,
    }
    assert sum(r["split"].values()) == r["shortfall"]
    assert r["largest_free_block"] == 64 * MiB


def test_real_need_is_what_no_other_part_explains():
    r = oom_report.build_report(_event(requested=8 * GiB), others=OTHERS, outside_pytorch=300 * MiB)
    assert r["split"]["real_need"] == 7 * GiB - 320 * MiB - 700 * MiB - 300 * MiB


def test_fixes_ranked_by_what_they_recover_and_marked_where_they_cover():
    r = oom_report.build_report(_event(), modules=MODULES, others=OTHERS, outside_pytorch=0)
    recovers = [f["recovers"] for f in r["fixes"]]
    assert recovers == sorted(recovers, reverse=True)
    by = {f["fix"].split(" ")[0]: f for f in r["fixes"]}
    assert by["micro-batch"]["recovers"] == 7 * GiB and by["micro-batch"]["covers"]  # ÷2 suffices
    ckpt = next(f for f in r["fixes"] if f["fix"].startswith("activation checkpointing"))
    assert ckpt["fix"] == "activation checkpointing on encoder.layers.0, encoder.layers.1"
    assert ckpt["recovers"] == 1100 * MiB and ckpt["covers"]
    exp = next(f for f in r["fixes"] if "expandable_segments" in f["fix"])
    assert exp["recovers"] == 240 * MiB and not exp["covers"]
    end = next(f for f in r["fixes"] if f["fix"].startswith("end PID 4242"))
    assert end["recovers"] == 600 * MiB
    eight = next(f for f in r["fixes"] if f["fix"].startswith("8-bit"))
    assert eight["recovers"] == int(2 * GiB * 0.75)


def test_expandable_segments_already_on_is_not_offered():
    alloc = summarize(S.fragmented()["segments"], "cuda:0", expandable=True)
    r = oom_report.build_report(_event(allocator=alloc))
    assert not any("expandable" in f["fix"] for f in r["fixes"])


def test_the_agent_alone_says_other_processes_and_outside_pytorch_as_one_figure():
    r = oom_report.build_report(_event())
    # 24 GiB - 1 GiB free - 19 GiB reserved: 4 GiB on the GPU outside this process's cache
    assert r["split"] == {
        "fragmentation": 320 * MiB,
        "other_processes_and_outside_pytorch": 704 * MiB,
        "outside_pytorch": None,
        "real_need": 0,
    }
    text = oom_text.lines(r)
    assert 5 <= len(text) <= 14
    assert text[1] == (
        "  asked 2.0 GiB; free on the device 1.0 GiB of 24.0 GiB; largest free block in "
        "PyTorch's cache 64.0 MiB"
    )
    assert "other processes + outside PyTorch 704.0 MiB" in text[3]


def test_short_report_names_modules_tensors_and_processes_in_about_a_dozen_lines():
    tensors = [
        {
            "bytes": 1 * GiB,
            "shape": [16, 1024, 16384],
            "dtype": "float32",
            "module": "lm_head",
            "site": "train.py:88 in forward",
        }
    ]
    r = oom_report.build_report(
        _event(), modules=MODULES, tensors=tensors, others=OTHERS, outside_pytorch=300 * MiB
    )
    text = "\n".join(oom_text.lines(r))
    assert len(text.splitlines()) <= 14
    assert "largest modules: lm_head 1.2 GiB; encoder.layers.0 1000.0 MiB" in text
    assert "1.0 GiB float32[16x1024x16384] lm_head at train.py:88 in forward" in text
    assert "python (jupyter kernel) (4242) 600.0 MiB" in text
    assert "1. micro-batch ÷2: 7.0 GiB (covers the shortfall)" in text


def test_markdown_report_has_every_section_and_escapes_table_cells():
    others = [{"pid": 1, "name": "evil | name\nrow", "used": 10 * MiB}]
    md = oom_text.markdown(
        oom_report.build_report(_event(), modules=MODULES, others=others, outside_pytorch=0)
    )
    for head in (
        "## CUDA out of memory on cuda:0 at step 41",
        "### Short by 1.0 GiB",
        "### The allocator at that instant",
        "### Largest modules",
        "### Other processes on this GPU",
        "### Fixes, by what they recover",
    ):
        assert head in md
    assert "| 1 | evil \\| name row | 10.0 MiB |" in md


def test_an_event_without_figures_gives_na_not_a_crash():
    r = oom_report.build_report({"device": "cuda:0", "source": "num_ooms"})
    assert r["shortfall"] is None and r["split"] is None
    assert "asked n/a" in "\n".join(oom_text.lines(r))
    oom_text.markdown(r)


# -- in the agent --------------------------------------------------------------------------------------


def test_the_observer_adds_the_allocators_picture_and_keeps_the_report(make_agent):
    snap = S.fragmented()
    provider = ReplayProvider(replay.scenario_oom()[-1:], snapshot=snap)
    agent = make_agent(provider)
    agent.reader = StatsReader(provider)
    agent.sample_once()
    agent._on_oom(0, 3 * GiB, 23 * GiB, 200 * MiB)
    [report] = agent.oom_reports
    assert report["allocator"]["free_split"] == 320 * MiB and report["largest_free_block"] == 64 * MiB
    assert report["requested"] == 3 * GiB and report["shortfall"] == 3 * GiB - 200 * MiB
    assert agent.allocator.oom_request["cuda:0"] == 3 * GiB  # the largest request seen from now on
    out = io.StringIO()
    postmortem.say_at_exit(agent.oom_reports, out)
    assert out.getvalue().startswith("vramscope: CUDA out of memory on cuda:0")
    assert agent.errors == 0


@pytest.mark.slow
def test_the_report_is_said_on_the_training_processs_stderr_at_exit(runtime_dir):
    script = textwrap.dedent("""
        from vramscope.agent.core import Agent
        from vramscope.sources.demo import allocator_replay as replay
        from vramscope.sources.demo.allocator_replay import ReplayProvider, GiB, MiB
        from tests.agent import snapshots as S
        p = ReplayProvider(replay.scenario_oom()[-1:], snapshot=S.fragmented())
        a = Agent(interval=0.05, provider=p, discover=False)
        a.start(); a.wait_started()
        a._on_oom(0, 3 * GiB, 23 * GiB, 200 * MiB)
        raise SystemExit(1)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "app"), ROOT]))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("vramscope: CUDA out of memory"))
    said = lines[start:]
    assert 5 <= len(said) <= 14, said
    assert any("short by 2.8 GiB" in ln for ln in said)
    assert json.dumps(said)


def test_the_post_mortem_names_the_modules_the_agent_measured_on_that_device(make_agent):
    """As the window and the near-OOM alert build it: the agent's OOM event carries the
    allocator's picture; the per-module figures are those of the agent's last "modules"
    item on the OOM's device, as the monitor holds them (core/agent_figures/oom_context.py)."""
    provider = ReplayProvider(replay.scenario_oom()[-1:], snapshot=S.fragmented())
    agent = make_agent(provider)
    agent.reader = StatsReader(provider)
    agent._on_oom(0, 3 * GiB, 23 * GiB, 200 * MiB)
    agent.serving.drain()
    items = [json.loads(b) for b in agent.ring.all_items()]
    [event] = [i["data"] for i in items if i.get("event") == "oom"]
    layers = [m for m in MODULES if m["parent"] == "encoder"]
    encoder = {  # the agent's rows are a tree: a parent's figures hold its children's
        "name": "encoder",
        "parent": None,
        **{k: sum(m[k] for m in layers) for k in ("weights", "gradients", "optimizer_state", "activations")},
    }
    rows = [encoder, *layers, *(dict(m, parent=None) for m in MODULES if m["parent"] == "")]
    measured = agent_modules.decode({"step": 40, "device": "cuda:0", "modules": rows})
    decoder = dict(encoder, name="decoder", weights=40 * GiB)
    elsewhere = agent_modules.decode({"step": 40, "device": "cuda:1", "modules": [decoder]})
    report = oom_context.report_of(event, oom_context.module_dicts(measured + elsewhere, event["device"]))
    # the encoder opened into its layers (counted once), the largest first; cuda:1's decoder not there
    assert [m["name"] for m in report["modules"]] == ["lm_head", "encoder.layers.0", "encoder.layers.1"]
    assert any("lm_head" in line for line in oom_text.lines(report))


def test_the_least_damaging_fix_that_covers_is_named_not_the_biggest():
    r = oom_report.build_report(_event(), modules=MODULES, others=OTHERS, outside_pytorch=0)
    first = oom_fixes.least_damaging(r["fixes"])
    assert first["fix"].startswith("micro-batch") and first["covers"]  # before checkpointing, 8-bit, LoRA
    assert "  least damaging that covers it: " + first["fix"] in oom_text.lines(r)
    # 200 MiB short: the expandable segments' 240 MiB cover it -- a setting, changes nothing
    # else -- though micro-batch, 8-bit and LoRA recover far more
    small = oom_report.build_report(_event(requested=GiB + 200 * MiB), modules=MODULES, others=OTHERS)
    assert small["fixes"][0]["fix"].startswith("micro-batch")  # the list stays by what is recovered
    assert "expandable_segments" in oom_fixes.least_damaging(small["fixes"])["fix"]
    assert "Least damaging fix that covers the shortfall: **PYTORCH_CUDA_ALLOC_CONF" in oom_text.markdown(
        small
    )
    # nothing covers 30 GiB: nothing named
    huge = oom_report.build_report(_event(requested=31 * GiB), modules=MODULES)
    assert oom_fixes.least_damaging(huge["fixes"]) is None
    assert not any("least damaging" in line for line in oom_text.lines(huge))

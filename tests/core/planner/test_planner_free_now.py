"""Verdicts against the memory free now as well as capacity, and the CLI's
refusal of a count without a unit."""

from __future__ import annotations

import json

import pytest
from planner_configs import config

from vramscope.cli import main
from vramscope.commands import plan as plan_command
from vramscope.core.planner import PlanRequest, build_plan, shape_from_config
from vramscope.core.planner.report import FITS, NOT_NOW, render_text, verdict
from vramscope.core.planner.request import GpuNow
from vramscope.core.planner.targets import fit_targets, gpus_now
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.units import GiB

QWEN = shape_from_config(config("qwen2-0.5b"))  # ~1 GB of bf16 weights to serve
CARD = "GPU 0: RTX 3090"


def busy_frame(free, used_by_train):
    train = GpuProcess(
        pid=23812,
        used=used_by_train,
        info=ProcessInfo(pid=23812, name="python", cmdline=("python", "train.py", "--lr", "1e-4")),
    )
    gpu = GpuSample(
        index=0,
        name="RTX 3090",
        total=24 * GiB,
        used=24 * GiB - free,
        free=free,
        processes=(train, GpuProcess(pid=999, used=GiB)),
    )
    return Frame(time=0.0, gpus=(gpu,))


def serve(frame, context=32768, concurrency=8):
    return build_plan(
        PlanRequest(
            shape=QWEN,
            mode="infer",
            context=context,
            concurrency=concurrency,
            gpus_memory=tuple(fit_targets(frame)),
            gpus_now=gpus_now(frame),
        )
    )


def test_fits_an_empty_card_but_not_what_is_free_now_names_who_holds_it():
    plan = serve(busy_frame(free=int(2.6 * GiB), used_by_train=int(14.3 * GiB)))
    g = plan.gpus[0]
    assert g.fits and g.fits_now is False
    v = verdict(plan)
    assert v.state == NOT_NOW
    assert v.text.startswith("Fits on an empty card; does not fit now")
    assert "2.60 GiB free, train.py (23812) holds 14.30 GiB" in v.text
    data = plan.to_json()["gpus"][0]
    assert data["fits"] is True and data["fits_now"] is False
    assert data["holders_now"][0] == {"process": "train.py (23812)", "bytes": int(14.3 * GiB)}


def test_an_idle_card_fits_now_with_what_is_spare_now():
    plan = serve(busy_frame(free=22 * GiB, used_by_train=GiB))
    v = verdict(plan)
    assert v.state == FITS and "to spare now" in v.text and "22.00 GiB free" in v.text


def test_short_of_capacity_stays_a_plain_does_not_fit():
    plan = serve(busy_frame(free=22 * GiB, used_by_train=GiB), context=32768, concurrency=400)
    assert verdict(plan).text.startswith("Does not fit")


def test_the_text_report_says_now_beside_capacity():
    text = render_text(serve(busy_frame(free=int(2.6 * GiB), used_by_train=int(14.3 * GiB))))
    assert "fits, " in text and "now does not fit in 2.60 GiB free" in text


def test_a_second_gpu_with_room_now_is_where_it_fits():
    sizes = (("GPU 0", 24 * GiB), ("GPU 1", 24 * GiB))
    now = (GpuNow("GPU 0", GiB // 2, (("train.py (1)", 22 * GiB),)), GpuNow("GPU 1", 20 * GiB))
    plan = build_plan(PlanRequest(shape=QWEN, mode="infer", context=4096, gpus_memory=sizes, gpus_now=now))
    v = verdict(plan)
    assert v.state == FITS and v.text.startswith("Fits now on GPU 1")
    assert "GPU 0 only once memory is freed" in v.text


def test_the_cli_judges_detected_gpus_against_free_memory(capsys, monkeypatch):
    frame = busy_frame(free=int(2.6 * GiB), used_by_train=int(14.3 * GiB))
    monkeypatch.setattr(plan_command, "detect_gpus", lambda: (fit_targets(frame), gpus_now(frame), None))
    rc = main(
        [
            "plan",
            "--config",
            str(config_path("qwen2-0.5b")),
            "--mode",
            "infer",
            "--context",
            "32768",
            "--concurrency",
            "8",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["gpus"][0]["name"] == CARD
    assert data["gpus"][0]["fits"] is True and data["gpus"][0]["fits_now"] is False


def test_a_count_without_a_unit_under_1000_is_refused_with_a_hint(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--params", "7", "--gpu-memory", "24GiB"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--params: '7': no model has 7 parameters" in err
    assert "did you mean 7B?" in err
    assert main(["plan", "--params", "7B", "--gpu-memory", "24GiB", "--json"]) == 0


def config_path(name):
    from planner_configs import CONFIGS

    return CONFIGS / f"{name}.json"

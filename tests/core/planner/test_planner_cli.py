"""`vramscope plan`: flags, text and --json output, clear refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from planner_configs import CONFIGS
from planner_configs import config as planner_config

from vramscope.cli import main
from vramscope.core.units import GB, GiB


def plan_json(capsys, *args):
    rc = main(["plan", *args, "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def test_json_has_the_documented_keys(capsys):
    data = plan_json(
        capsys, "--params", "7B", "--mode", "train", "--grad-layout", "18", "--gpu-memory", "80GiB"
    )
    assert {"mode", "buckets", "total", "per_gpu_total", "gpus", "suggestions"} <= set(data)
    assert data["mode"] == "train"
    assert data["buckets"] == {
        "weights": 14 * GB,
        "gradients": 28 * GB,
        "master_weights": 28 * GB,
        "optimizer_state": 56 * GB,
    }
    assert data["total"] == data["per_gpu_total"] == 126 * GB
    gpu = data["gpus"][0]
    assert set(gpu) >= {"name", "total", "fits", "margin"}
    assert gpu["total"] == 80 * GiB and gpu["fits"] is False
    assert gpu["margin"] == 80 * GiB - 126 * GB
    assert all(set(s) >= {"change", "total"} for s in data["suggestions"])
    assert data["suggestions"][-1]["fits"] is True


def test_serving_a_7b_model_at_4k_context_from_the_command_line(capsys):
    data = plan_json(
        capsys,
        "--params",
        "7e9",
        "--layers",
        "32",
        "--kv-heads",
        "32",
        "--head-dim",
        "128",
        "--mode",
        "infer",
        "--precision",
        "bf16",
        "--context",
        "4096",
        "--gpu-memory",
        "A100=80GiB",
    )
    assert data["buckets"] == {"weights": 14 * GB, "kv_cache": 2 * GiB}
    assert data["kv_bytes_per_token"] == 524_288
    assert data["gpus"][0]["conversations"] == 33 and data["gpus"][0]["name"] == "A100"


def test_config_flag_and_several_gpus(capsys):
    data = plan_json(
        capsys,
        "--config",
        str(CONFIGS / "mistral-7b-v0.1.json"),
        "--mode",
        "infer",
        "--context",
        "8192",
        "--concurrency",
        "64",
        "--kv-dtype",
        "fp8",
        "--gpu-memory",
        "24GiB",
        "--gpu-memory",
        "80GB",
    )
    assert data["model"]["params"] == 7_241_732_096
    # Mistral-7B-v0.1 slides a 4,096-token window on every layer: 4,096 of the 8,192 kept
    assert data["buckets"]["kv_cache"] == 2 * 32 * 8 * 128 * 1 * 4096 * 64
    assert [g["name"] for g in data["gpus"]] == ["24GiB GPU", "80GB GPU"]
    assert data["gpus"][0]["fits"] is False and data["gpus"][1]["fits"] is True


def test_training_flags_zero_lora_activations(capsys):
    data = plan_json(
        capsys,
        "--config",
        str(CONFIGS / "llama-2-7b.json"),
        "--zero-stage",
        "2",
        "--gpus",
        "4",
        "--lora-rank",
        "16",
        "--lora-modules",
        "q_proj,k_proj,v_proj,o_proj",
        "--batch",
        "2",
        "--seq",
        "2048",
        "--checkpointing",
        "--flash-attention",
        "--optimizer",
        "adamw",
        "--gpu-memory",
        "24GiB",
    )
    adapters = 32 * 16 * 4 * (4096 + 4096)
    assert data["buckets"]["gradients"] == 2 * adapters // 4
    assert data["buckets"]["weights"] == 2 * 6_738_415_616 + 2 * adapters
    assert data["buckets"]["activations"] > 0
    assert data["total"] == 4 * data["per_gpu_total"]


def test_text_output_labels_gb_and_gib_and_verdict(capsys):
    assert main(["plan", "--params", "7B", "--gpu-memory", "80GiB"]) == 0
    out = capsys.readouterr().out
    assert "GB (10^9)" in out and "GiB (2^30)" in out
    assert "112,000,000,000" in out and "does NOT fit" in out
    assert "1. 8-bit Adam" in out and "fits" in out


@pytest.mark.parametrize(
    "args, words",
    [
        (["--params", "seven"], "not a parameter count"),
        (["--params", "7B", "--gpu-memory", "24"], "no unit"),
        (["--params", "7B", "--mode", "infer", "--precision", "mixed"], "training layout"),
        (["--params", "7B", "--precision", "fp32", "--grad-layout", "18"], "mixed-precision"),
        (
            ["--params", "7B", "--batch", "4", "--seq", "512"],
            "--layers/--hidden/--heads: activations need layers, hidden size and heads",
        ),
        (["--gpu-memory", "24GiB"], "give the model"),
        (["--params", "7B", "--mode", "infer", "--context", "8k"], "ambiguous"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(capsys, args, words):
    try:
        rc = main(["plan", *args])
    except SystemExit as exc:  # argparse refusals
        rc = exc.code
    assert rc == 2
    assert words in capsys.readouterr().err


def test_config_not_understood_and_unreadable(tmp_path, capsys):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "no_such_family", "d_model": 512}))
    assert main(["plan", "--config", str(bad), "--gpu-memory", "24GiB"]) == 2
    assert "--config: config.json has model_type 'no_such_family'" in capsys.readouterr().err
    bad.write_text("{not json")
    assert main(["plan", "--config", str(bad), "--gpu-memory", "24GiB"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["plan", "--config", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_no_driver_still_plans_and_asks_for_gpu_memory(monkeypatch, capsys):
    pynvml = pytest.importorskip("pynvml")

    def no_library():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", no_library)
    assert main(["plan", "--params", "7B"]) == 0
    out = capsys.readouterr().out
    assert "112,000,000,000" in out
    assert "give --gpu-memory" in out and "NVIDIA driver not found" in out
    data = plan_json(capsys, "--params", "7B")
    assert data["gpus"] == [] and "--gpu-memory" in data["gpu_note"]


def test_plan_command_does_not_import_qt():
    code = (
        "import sys; from vramscope.cli import main; "
        "main(['plan', '--params', '7B', '--gpu-memory', '24GiB', '--json']); "
        "assert not any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules), "
        "'Qt imported'"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_a_hand_formula_config_is_planned_without_importing_transformers_or_torch(tmp_path):
    # `plan --config` must answer at once for these families: importing transformers alone
    # takes seconds (bench/ holds timings; here, what is imported)
    code = (
        "import sys; from vramscope.cli import main; "
        f"rc = main(['plan', '--config', {str(CONFIGS / 'llama-2-7b.json')!r}, "
        "'--gpu-memory', '24GiB', '--json']); "
        "print(sorted(m for m in ('transformers', 'torch', 'peft', 'huggingface_hub') "
        "if m in sys.modules), file=sys.stderr); sys.exit(rc)"
    )
    env = {**__import__("os").environ, "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_the_planner_extra_pulls_no_torch():
    # `pip install 'vramscope[planner]'` is for --model: huggingface_hub reads configs and
    # safetensors headers; a CUDA torch of several GB is not needed for that
    tomllib = pytest.importorskip("tomllib")
    root = CONFIGS.parents[3]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = [req.split(">")[0].split("=")[0].split("[")[0].strip().lower() for req in extras["planner"]]
    assert "huggingface-hub" in names
    assert "torch" not in names and "transformers" not in names


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("num_hidden_layers", 10**30, "a number no model config holds"),
        ("num_hidden_layers", 5_000_000, "more than the 100,000 the planner counts"),
        ("hidden_size", 1e999, "a number no model config holds"),
        ("vocab_size", -(2**60), "a number no model config holds"),
    ],
)
def test_a_config_with_numbers_no_model_has_is_one_line(tmp_path, capsys, field, value, words):
    config = tmp_path / "config.json"
    text = json.dumps({**planner_config("llama-2-7b"), field: value})
    config.write_text(text.replace("Infinity", "1e999"))
    assert main(["plan", "--config", str(config), "--gpu-memory", "24GiB"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.splitlines()) == 1

"""`plan --model org/name` from the local Hugging Face cache (never the
network: the Hub is faked), bounded config reads, the context limit."""

from __future__ import annotations

import json
import os
import time

import pytest
from planner_configs import CONFIGS

from vramscope.cli import main
from vramscope.core.planner import config_source


def cache_model(root, name, config_name, rev="0123abcd"):
    """Lay ``name`` out as huggingface_hub does: refs/main -> snapshots/<rev>/config.json."""
    repo = root / ("models--" + name.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(rev)
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text((CONFIGS / f"{config_name}.json").read_text())
    return repo


def plan(capsys, *args):
    rc = main(["plan", *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_model_name_from_the_cache(capsys):
    cache_model(config_source.hub_cache_dir(), "Qwen/Qwen2-0.5B", "qwen2-0.5b")
    rc, out, _ = plan(
        capsys,
        "--model",
        "Qwen/Qwen2-0.5B",
        "--mode",
        "infer",
        "--context",
        "4096",
        "--gpu-memory",
        "24GiB",
        "--json",
    )
    assert rc == 0
    data = json.loads(out)
    assert data["model"]["params"] == 494_032_768
    assert data["model"]["counted_by"] == "hand formula"


def test_hf_home_is_where_the_cache_is_when_no_hub_cache_is_set(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    cache_model(tmp_path / "home" / "hub", "mistralai/Mistral-7B-v0.1", "mistral-7b-v0.1")
    assert config_source.cached_models() == ("mistralai/Mistral-7B-v0.1",)
    rc, out, _ = plan(capsys, "--model", "mistralai/Mistral-7B-v0.1", "--gpu-memory", "80GB")
    assert rc == 0 and "7,241,732,096 parameters" in out


def test_offline_without_a_cached_copy_says_where_it_looked(capsys):
    rc, out, err = plan(capsys, "--model", "meta-llama/Llama-3.1-8B")
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    where = str(config_source.hub_cache_dir() / "models--meta-llama--Llama-3.1-8B")
    assert (
        "--model: meta-llama/Llama-3.1-8B: offline (HF_HUB_OFFLINE is set) and not in the "
        f"local cache (checked {where})" in lines[0]
    )
    assert "has no config.json" not in lines[0]


def test_bad_model_names_and_a_local_model_directory(tmp_path, capsys):
    rc, _, err = plan(capsys, "--model", "not a name")
    assert rc == 2 and "not a model name" in err
    (tmp_path / "config.json").write_text((CONFIGS / "gpt2.json").read_text())
    rc, out, _ = plan(capsys, "--model", str(tmp_path), "--gpu-memory", "8GiB")
    assert rc == 0 and "124,439,808" in out
    rc, out, _ = plan(capsys, "--config", str(tmp_path), "--gpu-memory", "8GiB")
    assert rc == 0 and "124,439,808" in out


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_config_that_never_ends_is_refused_without_reading_it(capsys):
    start = time.monotonic()
    rc, _, err = plan(capsys, "--config", "/dev/zero")
    assert rc == 2 and "/dev/zero is a character device, not a regular file" in err
    assert time.monotonic() - start < 30  # never read until memory runs out


def test_binary_and_non_object_configs_are_one_line_refusals(tmp_path, capsys):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x80\x81\xff" * 100)
    rc, _, err = plan(capsys, "--config", str(weights))
    assert rc == 2 and "not UTF-8" in err and len(err.strip().splitlines()) == 1
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    rc, _, err = plan(capsys, "--config", str(deep))
    assert rc == 2 and len(err.strip().splitlines()) == 1


# --- the context limit ---------------------------------------------------------------


def test_a_context_past_the_models_limit_is_warned_in_text_json_and_stderr(capsys):
    args = [
        "--config",
        str(CONFIGS / "gpt2.json"),
        "--mode",
        "infer",
        "--context",
        "8192",
        "--gpu-memory",
        "24GiB",
    ]
    rc, out, err = plan(capsys, *args)
    assert rc == 0
    assert "WARNING: a context of 8,192 tokens is longer than this model's limit: n_positions = 1,024" in out
    assert "warning: a context of 8,192" in err
    rc, out, _ = plan(capsys, *args, "--json")
    assert any("n_positions = 1,024" in w for w in json.loads(out)["warnings"])
    rc, out, err = plan(
        capsys,
        "--config",
        str(CONFIGS / "gpt2.json"),
        "--mode",
        "infer",
        "--context",
        "1024",
        "--gpu-memory",
        "24GiB",
        "--json",
    )
    assert json.loads(out)["warnings"] == [] and err == ""


def test_a_training_sequence_past_the_limit_is_warned_too(capsys):
    rc, out, _ = plan(
        capsys,
        "--config",
        str(CONFIGS / "llama-2-7b.json"),
        "--batch",
        "1",
        "--seq",
        "8192",
        "--gpu-memory",
        "80GiB",
        "--json",
    )
    assert rc == 0
    assert any(
        "the sequence of 8,192 tokens" in w and "max_position_embeddings = 4,096" in w
        for w in json.loads(out)["warnings"]
    )


def test_without_transformers_an_unknown_family_names_the_extra(monkeypatch, capsys):
    from vramscope.core.planner import configs

    monkeypatch.setattr(configs, "transformers_version", lambda: None)
    rc, _, err = plan(capsys, "--config", str(CONFIGS / "mixtral-8x7b-v0.1.json"))
    assert rc == 2 and "vramscope[planner]" in err and "'mixtral'" in err
    rc, out, _ = plan(capsys, "--config", str(CONFIGS / "llama-2-7b.json"), "--gpu-memory", "80GiB")
    assert rc == 0 and "hand formula" in out  # the hand formulas need nothing more

"""`plan --model` against a stand-in Hub on 127.0.0.1 (HF_ENDPOINT) and offline:
the checkpoint's safetensors headers give the exact count per dtype, with or
without transformers; an unreachable Hub is said at once, in one line."""

from __future__ import annotations

import json
import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hub_standin import StandInHub, safetensors_header
from planner_configs import CONFIGS

from vramscope.cli import main
from vramscope.core.planner import config_source

pytest.importorskip("huggingface_hub")

GPT2 = 124_439_808


def online(monkeypatch) -> None:
    """HF_HUB_OFFLINE unset -- and huggingface_hub told so: it reads the variable once,
    at its import, which an earlier test of this session may have done while it was set
    (this file failed after test_planner_tab_sources.py that way)."""
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def hub(monkeypatch):
    server = StandInHub()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    online(monkeypatch)
    yield server
    server.close()


def publish(hub, name, config_name, tensors):
    hub.repos[name] = {
        "config.json": (CONFIGS / f"{config_name}.json").read_bytes(),
        "model.safetensors": safetensors_header(tensors),
    }


def plan_json(capsys, *args):
    rc = main(["plan", *args, "--gpu-memory", "80GiB", "--json"])
    captured = capsys.readouterr()
    return rc, (json.loads(captured.out) if captured.out else None), captured.err


def test_a_bare_name_is_fetched_with_its_checkpoint_count(hub, capsys):
    publish(
        hub,
        "gpt2",
        "gpt2",
        {"transformer.wte.weight": ("F32", [50257, 768]), "transformer.rest": ("F32", [GPT2 - 50257 * 768])},
    )
    rc, data, _ = plan_json(capsys, "--model", "gpt2", "--mode", "infer", "--context", "1024")
    assert rc == 0 and data["model"]["params"] == GPT2
    assert "checkpoint headers" in data["model"]["counted_by"]
    assert any("safetensors headers agree: 124,439,808 F32" in n for n in data["model"]["notes"])
    assert any(r.startswith("GET /gpt2/resolve/main/model.safetensors") for r in hub.requests)


def test_without_transformers_the_headers_count_any_family(hub, capsys, monkeypatch):
    from vramscope.core.planner import configs

    monkeypatch.setattr(configs, "transformers_version", lambda: None)
    publish(
        hub,
        "mistralai/Mixtral-8x7B-v0.1",
        "mixtral-8x7b-v0.1",
        {
            "model.embed_tokens.weight": ("BF16", [32000, 4096]),
            "model.rest": ("BF16", [46_702_792_704 - 32000 * 4096]),
        },
    )
    rc, data, err = plan_json(
        capsys, "--model", "mistralai/Mixtral-8x7B-v0.1", "--mode", "infer", "--context", "4096"
    )
    assert rc == 0, err
    assert data["model"]["params"] == 46_702_792_704
    assert data["model"]["counted_by"] == "the checkpoint's safetensors headers"
    assert data["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2  # layout from config fields


def test_the_cached_checkpoint_is_read_offline_whatever_the_case_of_the_name(capsys, monkeypatch):
    repo = config_source.hub_cache_dir() / "models--Qwen--Qwen2-0.5B"
    snap = repo / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc")
    (snap / "config.json").write_text((CONFIGS / "qwen2-0.5b.json").read_text())
    (snap / "model.safetensors").write_bytes(
        safetensors_header(
            {
                "model.embed_tokens.weight": ("BF16", [151936, 896]),
                "model.rest": ("BF16", [494_032_768 - 151936 * 896]),
            }
        )
    )
    rc, data, _ = plan_json(capsys, "--model", "qwen/qwen2-0.5b")
    assert rc == 0 and data["model"]["params"] == 494_032_768
    assert any("494,032,768 BF16" in n for n in data["model"]["notes"])


def test_an_unreachable_hub_is_said_at_once_as_offline(capsys, monkeypatch):
    online(monkeypatch)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    start = time.monotonic()
    rc, _, err = plan_json(capsys, "--model", "bert-base-uncased")
    assert time.monotonic() - start < 8  # not ~24 s of retries
    where = config_source.hub_cache_dir() / "models--bert-base-uncased"
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert f"bert-base-uncased: offline and not in the local cache (checked {where}" in err
    assert "has no config.json" not in err


def test_hub_refusals_are_one_line_each(hub, capsys):
    hub.gated.add("meta-llama/Llama-3.1-8B")
    rc, _, err = plan_json(capsys, "--model", "meta-llama/Llama-3.1-8B")
    assert rc == 2 and "gated" in err and "HF_TOKEN" in err
    rc, _, err = plan_json(capsys, "--model", "nobody/nothing")
    assert rc == 2 and "no such model on the Hub" in err
    hub.repos["org/weights-only"] = {"model.safetensors": safetensors_header({"w": ("F32", [4])})}
    rc, _, err = plan_json(capsys, "--model", "org/weights-only")
    assert rc == 2 and "org/weights-only has no config.json on the Hub" in err


def test_the_planner_tab_fetches_a_model_with_its_checkpoint_count(hub, qtbot):
    pytest.importorskip("PySide6")
    from vramscope.ui.planner.planner_tab import PlannerTab

    publish(
        hub,
        "openai-community/gpt2",
        "gpt2",
        {"wte": ("F32", [50257, 768]), "rest": ("F32", [GPT2 - 50257 * 768])},
    )
    tab = PlannerTab(gpus=[("GPU 0", 24 * 2**30)])
    qtbot.addWidget(tab)
    tab.load_model("openai-community/gpt2")
    qtbot.waitUntil(lambda: tab.plan is not None and tab.plan.request.shape.params == GPT2, timeout=10_000)
    assert tab.plan.request.shape.checkpoint == (("F32", GPT2),)
    assert "checkpoint headers" in tab.model_status.text()


def test_cached_shards_are_read_through_their_index_and_a_consolidated_copy_is_not_counted(tmp_path):
    from vramscope.core.planner.checkpoint import local_counts

    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "model-00001-of-00002.safetensors").write_bytes(safetensors_header({"a": ("BF16", [1000, 10])}))
    (snap / "model-00002-of-00002.safetensors").write_bytes(safetensors_header({"b": ("BF16", [500])}))
    (snap / "consolidated.safetensors").write_bytes(
        safetensors_header({"a": ("BF16", [1000, 10]), "b": ("BF16", [500])})
    )
    assert local_counts(snap) == (("BF16", 10_500),)  # no index: the shards, not the copy
    (snap / "model.safetensors.index.json").write_text(
        json.dumps(
            {
                "weight_map": {
                    "a": "model-00001-of-00002.safetensors",
                    "b": "model-00002-of-00002.safetensors",
                    "c": "model-00003-of-00003.safetensors",
                }
            }
        )
    )
    assert local_counts(snap) is None  # a shard not downloaded: not the whole checkpoint


@given(st.binary(max_size=300))
@settings(max_examples=200, deadline=None)
def test_any_bytes_as_a_safetensors_file_are_refused_quietly(tmp_path_factory, data):
    from vramscope.core.planner.checkpoint import file_counts

    path = tmp_path_factory.mktemp("st") / "model.safetensors"
    path.write_bytes(data)
    counts: dict = {}
    assert file_counts(path, counts) in (True, False)  # never raises


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.tuples(st.sampled_from(["F32", "BF16", "U8"]), st.lists(st.integers(0, 64), max_size=3)),
        max_size=6,
    )
)
@settings(max_examples=100, deadline=None)
def test_a_safetensors_header_is_counted_per_dtype(tmp_path_factory, tensors):
    import math

    from vramscope.core.planner.checkpoint import file_counts

    path = tmp_path_factory.mktemp("st") / "model.safetensors"
    path.write_bytes(safetensors_header(tensors))
    counts: dict = {}
    assert file_counts(path, counts)
    expected: dict = {}
    for dtype, shape in tensors.values():
        expected[dtype] = expected.get(dtype, 0) + math.prod(shape)
    assert counts == expected

"""Shared bits of the planner tests: the published configs written into tests/core/planner/configs."""

from __future__ import annotations

import json
import pathlib

CONFIGS = pathlib.Path(__file__).parent / "configs"


def config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


# Published configs scaled down to seconds on a CPU: same families, same rules
# (Qwen2: tied embeddings, GQA, q/k/v biases; Llama: untied, no biases).
TINY_QWEN2 = {
    **config("qwen2-0.5b"),
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 101,
}
TINY_LLAMA = {
    **config("llama-2-7b"),
    "hidden_size": 48,
    "intermediate_size": 80,
    "num_attention_heads": 6,
    "num_key_value_heads": 3,
    "num_hidden_layers": 3,
    "vocab_size": 53,
}

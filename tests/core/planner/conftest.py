"""Planner tests never reach the Hugging Face Hub nor read the user's own
cache: an empty cache directory per test, offline mode."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_hub_cache(tmp_path, monkeypatch):
    for var in ("HF_HOME", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-hub-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

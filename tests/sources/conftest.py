"""Fixtures of the source tests."""

from __future__ import annotations

import pytest

from vramscope.sources.nvml.nvml_source import NvmlSource


@pytest.fixture
def source(fake_nvml):
    """An NvmlSource on the fake library (tests/fake_nvml)."""
    src = NvmlSource(retry_interval=5.0)
    yield src
    src.close()

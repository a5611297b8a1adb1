"""Shared fixtures. Qt tests run offscreen; screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import pathlib

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def artifacts_dir() -> pathlib.Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


# The fake libnvidia-ml.so.1 (tests/fakenvml.py): fake_nvml, fake_nvml_files, sleepers
from fakenvml import fake_nvml, fake_nvml_build, fake_nvml_files, sleepers  # noqa: E402,F401

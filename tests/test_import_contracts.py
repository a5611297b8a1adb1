"""The layer contracts in pyproject.toml hold (the same check .ci/run runs)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _lint_imports() -> str | None:
    here = pathlib.Path(sys.executable).parent / "lint-imports"
    return str(here) if here.exists() else shutil.which("lint-imports")


def test_import_contracts_are_kept():
    tool = _lint_imports()
    if tool is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    r = subprocess.run([tool, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_a_broken_layer_would_be_caught(tmp_path):
    """The contracts are not vacuous: core importing ui is reported."""
    tool = _lint_imports()
    if tool is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    pkg = tmp_path / "app" / "vramscope"
    shutil.copytree(
        ROOT / "app" / "vramscope", pkg, ignore=shutil.ignore_patterns("__pycache__", "resources")
    )
    (pkg / "core" / "leak_into_ui.py").write_text("from vramscope.ui.qt import theme\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    env = {"PYTHONPATH": str(tmp_path / "app"), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [tool, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert r.returncode != 0
    assert "vramscope.core.leak_into_ui -> vramscope.ui.qt.theme" in r.stdout

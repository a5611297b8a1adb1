"""pyproject.toml's mypy settings (the check .ci/run makes): the whole package is
checked, the modules held to the strict flags exist and are not among those not
checked yet, and "strict" is never set in an override."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # the project's own dependency there (pyproject.toml)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _mypy() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def _override(flag: str) -> list[str]:
    found = [o for o in _mypy()["overrides"] if o.get(flag)]
    assert len(found) == 1, flag
    return found[0]["module"]


def _exists(pattern: str) -> bool:
    """Whether a module pattern of an override names a module or package under app/."""
    where = ROOT / "app" / Path(*pattern.removesuffix(".*").split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def test_the_whole_package_is_checked():
    assert _mypy()["files"] == ["app/vramscope"]


def test_the_strict_modules_are_checked():
    strict, not_yet = _override("disallow_untyped_defs"), _override("ignore_errors")
    assert [m for m in strict if not _exists(m)] == []
    assert [m for m in not_yet if not _exists(m)] == []  # a module renamed or gone: off the list
    assert set(strict).isdisjoint(not_yet)


def test_strict_is_not_set_in_an_override():
    # mypy reads "strict" in an override as the global option: every module would be strict
    assert all("strict" not in o for o in _mypy()["overrides"])


def _mypy_tool() -> str | None:
    here = Path(sys.executable).parent / "mypy"
    return str(here) if here.exists() else shutil.which("mypy")


@pytest.mark.slow
def test_the_strict_flags_hold_where_they_are_set(tmp_path):
    """The check is not vacuous: a function without annotations is reported in a
    module of the wire's vocabulary, and passes in one held to the default settings."""
    tool = _mypy_tool()
    if tool is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    shutil.copytree(ROOT / "app", tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__", "resources"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    untyped = "\n\ndef _untyped(value):\n    return value\n"
    strict, loose = "app/vramscope/core/stream/json_checks.py", "app/vramscope/core/settings/settings_file.py"
    for name in (strict, loose):
        with open(tmp_path / name, "a", encoding="utf-8") as fh:
            fh.write(untyped)
    r = subprocess.run(
        [tool, "--no-incremental", strict, loose], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 1, r.stdout[-4000:] + r.stderr[-2000:]
    reported = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert len(reported) == 1 and reported[0].startswith(strict) and "[no-untyped-def]" in reported[0]

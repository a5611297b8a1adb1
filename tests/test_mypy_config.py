"""pyproject.toml's mypy settings (the check .ci/run makes): the whole package is
checked, the modules held to the strict flags exist and are not among those not
checked yet, and "strict" is never set in an override."""

from __future__ import annotations

import sys
from pathlib import Path

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

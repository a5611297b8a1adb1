"""pyproject.toml's mypy settings: the files `mypy` checks in .ci/run are the
modules held to the strict flags, one set named twice (mypy's ``files`` take
paths, its overrides module names)."""

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


def _module(path: str) -> str:
    """The module name mypy gives a path under app/ (a folder: its package and all within)."""
    where = ROOT / path
    assert where.exists(), f"{path} is named in [tool.mypy] files but is not there"
    name = ".".join(Path(path).relative_to("app").with_suffix("").parts)
    return f"{name}.*" if where.is_dir() else name


def test_the_files_checked_are_the_strict_modules():
    mypy = _mypy()
    strict = [o for o in mypy["overrides"] if o.get("disallow_untyped_defs")]
    assert len(strict) == 1
    assert sorted(_module(p) for p in mypy["files"]) == sorted(strict[0]["module"])


def test_strict_is_not_set_in_an_override():
    # mypy reads "strict" in an override as the global option: every module would be strict
    assert all("strict" not in o for o in _mypy()["overrides"])

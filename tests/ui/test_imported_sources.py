"""The window does not keep the source of every module it imported (PySide6's
import hook reads each one; linecache kept ~200k lines that every full garbage
collection walked), at start-up nor after a planner lookup."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_the_running_window_keeps_few_source_lines():
    app = pathlib.Path(__file__).resolve().parents[2] / "app"
    code = (
        "import linecache, sys; sys.argv = ['vramscope', '--demo', '--busy', '--quit-after', '3']\n"
        "from vramscope.cli import main\n"
        "code = main()\n"
        "print('LINES', sum(len(entry[2]) for entry in linecache.cache.values() if len(entry) > 2))\n"
        "print('MODULES', len(sys.modules))\n"
        "raise SystemExit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(app), "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = int(r.stdout.split("LINES ")[1].split()[0])
    modules = int(r.stdout.split("MODULES ")[1].split()[0])
    assert modules > 400  # (the window imported what it always does)
    assert lines < 20_000, lines  # not the source of every one of them (150-200k lines)


def test_what_a_planner_lookup_imported_leaves_no_source_lines(themed_app, qtbot, tmp_path, monkeypatch):
    """A lookup on the planner's worker that imports modules (transformers, the Hub
    client: ~240k lines) leaves none of their source behind once it is answered."""
    import linecache

    from vramscope.core.planner import PlanError
    from vramscope.ui.planner.planner_shape_loader import ShapeLoader

    probe = tmp_path / "vramscope_probe_import.py"
    probe.write_text("VALUE = 1\n" * 200)
    monkeypatch.syspath_prepend(str(tmp_path))
    read, answers = [], []

    def lookup():
        import vramscope_probe_import  # noqa: F401  (imported after PySide6, as the Hub client is)

        read.append(str(probe) in linecache.cache)
        return PlanError("model", "no shape here")

    loader = ShapeLoader(lambda _text: None, lambda _source, shape: answers.append(shape))
    loader.start(("model", "probe"), lookup)
    qtbot.waitUntil(lambda: bool(answers), timeout=10_000)
    sys.modules.pop("vramscope_probe_import", None)
    if not read[0]:
        pytest.skip("this PySide6 no longer reads the source of what is imported after it")
    assert str(probe) not in linecache.cache

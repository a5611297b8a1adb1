"""The Qt-free boundary: core, sources, agent, commands other than the GUI
import with PySide6/pyqtgraph blocked; the agent needs only stdlib + torch."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

BLOCKER = textwrap.dedent("""
    import sys, importlib, importlib.abc, pkgutil
    BLOCKED = {blocked!r}
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split('.')[0] in BLOCKED:
                raise ImportError('blocked by the boundary test: ' + name)
    sys.meta_path.insert(0, Block())
    import vramscope
    for pkg in {packages!r}:
        mod = importlib.import_module(pkg)
        for info in pkgutil.walk_packages(mod.__path__, pkg + '.'):
            importlib.import_module(info.name)
    print('ok')
""")


def _run(blocked, packages):
    code = BLOCKER.format(blocked=set(blocked), packages=list(packages))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_core_sources_commands_import_without_qt():
    r = _run(
        {"PySide6", "pyqtgraph", "shiboken6"}, ["vramscope.core", "vramscope.sources", "vramscope.commands"]
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


def test_the_monitor_runs_without_torch():
    """torch is not a dependency of the app: the monitor side (agent client
    and protocol included) must import without it."""
    code = BLOCKER.format(
        blocked={"torch"}, packages=["vramscope.core", "vramscope.sources", "vramscope.commands"]
    )
    code += "import vramscope.agent.protocol, vramscope.agent.serving.paths\nprint('ok')\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


@pytest.mark.slow
def test_agent_imports_with_only_stdlib_and_torch():
    pytest.importorskip("torch")
    # torch itself imports numpy, so torch is imported before the block goes up;
    # everything else the agent could reach for stays blocked.
    code = "import torch\n" + BLOCKER.format(
        blocked={"PySide6", "pyqtgraph", "shiboken6", "psutil", "pynvml", "platformdirs"},
        packages=["vramscope.agent"],
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


def test_agent_modules_import_only_stdlib_torch_and_the_agent_itself():
    """Static check (numpy is already loaded by torch, so the runtime block cannot see it)."""
    import ast
    import pathlib

    import vramscope.agent

    root = pathlib.Path(vramscope.agent.__file__).parent
    allowed = set(sys.stdlib_module_names) | {"torch", "__future__"}
    bad = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in allowed and not name.startswith("vramscope.agent") and name != "vramscope":
                    bad.append(f"{path.name}: {name}")
    assert not bad, bad

"""The suite never touches the real user's runtime dir, settings or sessions."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys


def _inside(path, base) -> bool:
    return pathlib.Path(path).resolve().is_relative_to(pathlib.Path(base).resolve())


def test_every_place_vramscope_reads_or_writes_is_the_tests_own(private_user_dirs):
    from vramscope.agent.serving.paths import agent_dir, candidate_dirs
    from vramscope.core.end_process.audit_log import default_audit_path
    from vramscope.core.session.library import default_directory

    base = private_user_dirs["HOME"].parent
    assert candidate_dirs() and all(_inside(d, base) for d in candidate_dirs())
    assert _inside(agent_dir(), base)
    assert _inside(default_directory(), base)
    assert _inside(default_audit_path(), base)
    real_home = pathlib.Path(os.path.expanduser("~"))
    assert _inside(real_home, base)


def test_the_window_settings_file_is_the_tests_own(private_user_dirs):
    """The settings file, as every command opens it, in a fresh process."""
    code = "from vramscope.core.settings.user_settings import Settings; print(Settings().path)"
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
    )
    assert r.returncode == 0, r.stderr
    assert _inside(r.stdout.strip(), private_user_dirs["HOME"].parent)

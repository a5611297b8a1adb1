"""A real CPU training run whose agent reads a simulated CUDA allocator, then
meets an out-of-memory error: the window, started with its own sampler
process on a machine whose (fake) NVML lists that run on GPU 0, shows the
agents tab's Modules, the OOM post-mortem and the allocator segments -- the
data took the user's path: agent socket -> sampler process -> stream -> window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState, subprocess_env, write_state
from user_path.helpers import no_traceback, window_args
from vramscope.core.agent_figures.agent_keys import series_key
from vramscope.ui.agents.agent_panel import AgentProcessView
from vramscope.ui.agents.sites_control import NO_CHANNEL
from vramscope.ui.window.app import build_window

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run(tmp_path, private_user_dirs):
    out, release, err = tmp_path / "run.json", tmp_path / "release", tmp_path / "train.err"
    env = dict(os.environ, CPU_TRAIN_WAIT=str(release))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "app"), str(ROOT)])
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("cuda_sim_train.py")), str(out)],
            env=env,
            stderr=stderr,
        )
    deadline = time.monotonic() + 90
    while not out.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("the training run did not get to its OOM: " + err.read_text()[-2000:])
        time.sleep(0.1)
    yield json.loads(out.read_text())["pid"]
    release.touch()
    proc.wait(30)
    said = err.read_text()
    no_traceback(said)
    assert "CUDA out of memory" in said  # the agent's own post-mortem at exit, as before


def details(view) -> set[str]:
    tabs = view.details
    return {
        tabs.tabText(tabs.indexOf(p))
        for _k, (_w, p) in tabs.pages.items()
        if tabs.isTabVisible(tabs.indexOf(p))
    }


def test_the_window_shows_modules_oom_and_segments_of_a_simulated_cuda_run(
    run, fake_nvml_build, tmp_path, monkeypatch, themed_app, qtbot
):
    state = tmp_path / "nvml.txt"
    write_state(
        state, FakeState(gpus=[FakeGpu(used=20 * GiB, processes=[FakeProcess(run, 19 * GiB, sm=60)])])
    )
    for name, value in subprocess_env(fake_nvml_build().parent, state).items():
        if name in ("LD_LIBRARY_PATH", "FAKE_NVML_STATE"):
            monkeypatch.setenv(name, value)  # the sampler process finds the fake driver
    args = window_args(demo=False, busy=False)
    feed, window = build_window(args, poll_ms=100, sampler=True)
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    try:
        agents = window.services.panels.agents
        window.tabs.setCurrentIndex(
            next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "PyTorch agents")
        )  # (a hidden tab does no work)

        def view():
            found = [
                v for v in agents.views.values() if isinstance(v, AgentProcessView) and v.sites.pid == run
            ]
            return found[0] if found else None

        def seen():
            latest = window.store.latest
            return (
                None
                if latest is None
                else (
                    [(g.index, [(p.pid, p.has_agent) for p in g.processes]) for g in latest.gpus],
                    [(a.pid, a.error) for a in latest.agents],
                    latest.error,
                )
            )

        try:
            qtbot.waitUntil(lambda: view() is not None, timeout=60_000)
        except Exception:
            pytest.fail(f"no agent view for {run}: the window saw {seen()}")
        qtbot.waitUntil(
            lambda: {"Modules", "OOM post-mortem (cuda:0)", "Allocator segments (cuda:0)"} <= details(view()),
            timeout=60_000,
        )
        assert view().modules.tree.topLevelItemCount() > 0
        # the shell handed the tab its way to ask the agent (ui/window/panels.py)
        assert view().sites.reason.text() != NO_CHANNEL
    finally:
        window.services.close()


def test_the_window_draws_every_agent_sample_between_its_frames(
    run, fake_nvml_build, tmp_path, monkeypatch, themed_app, qtbot
):
    """Frames every 2 s from the window's sampler process, the agent sampling every
    0.5 s: the window's timeline holds the agent's samples at their own times, about
    four a frame (it held one a frame)."""
    state = tmp_path / "nvml.txt"
    write_state(
        state, FakeState(gpus=[FakeGpu(used=20 * GiB, processes=[FakeProcess(run, 19 * GiB, sm=60)])])
    )
    for name, value in subprocess_env(fake_nvml_build().parent, state).items():
        if name in ("LD_LIBRARY_PATH", "FAKE_NVML_STATE"):
            monkeypatch.setenv(name, value)
    feed, window = build_window(window_args(demo=False, busy=False, interval=2.0), poll_ms=100, sampler=True)
    qtbot.addWidget(window)
    window.show()
    try:
        start = None

        def drawn():
            times, _ = window.store.series(series_key(run, start, "cuda:0", "allocated"))
            return times

        def agent_start():
            latest = window.store.latest
            found = [a.start_time for a in latest.agents if a.pid == run] if latest is not None else []
            return found[0] if found else None

        qtbot.waitUntil(lambda: agent_start() is not None, timeout=60_000)
        start, since = agent_start(), window.store.latest.time
        qtbot.waitUntil(lambda: window.store.latest.time >= since + 6, timeout=30_000)  # three frames
        times = drawn()
        recent = times[times > since]
        assert len(recent) >= 9, times  # ~4 samples in each frame's interval (one, before)
        assert max(recent[1:] - recent[:-1]) < 1.5
    finally:
        window.services.close()

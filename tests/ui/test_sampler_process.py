"""The window reads its own sampler process (sources/remote/local_sampler.py): it
shows that process's frames, and when the process is killed it says so in a
banner, keeps drawing, and starts it again (by itself or on "Restart now")."""

from __future__ import annotations

import argparse
import os
import signal

import psutil
import pytest

from ui.helpers import open_every_group, table_column
from user_path.helpers import window_args
from vramscope.ui.window.app import build_window


@pytest.fixture
def sampled(themed_app, qtbot):
    made = []

    def make(width=1400, height=900):
        args = window_args()
        feed, window = build_window(args, poll_ms=100, sampler=True)
        made.append(window)
        qtbot.addWidget(window)
        window.resize(width, height)
        window.show()
        qtbot.waitUntil(
            lambda: bool(window.store.latest is not None and window.store.latest.gpus), timeout=30_000
        )
        return window

    yield make
    for window in made:
        window.services.close()


def sampler_pid(window) -> int:
    proc = window.feed.source.process._proc
    assert proc is not None
    return proc.pid


@pytest.mark.slow
def test_the_window_shows_what_its_sampler_process_samples(sampled, qtbot, artifacts_dir):
    window = sampled()
    pid = sampler_pid(window)
    assert pid != os.getpid()
    assert "stream" in psutil.Process(pid).cmdline()  # the same pipeline as `vramscope stream`
    frame = window.store.latest
    assert frame.simulated and len(frame.gpus) == 2  # the busy demo: two GPUs, sixteen processes
    qtbot.waitUntil(lambda: len(table_column(window, "PID")) > 0, timeout=10_000)
    open_every_group(window)
    pids = {int(p) for p in table_column(window, "PID") if p}
    assert pids and pids <= {pid for pid, _start in window.feed.labels()}  # the sampler's processes
    assert not window.sampler_banner.isVisible()
    for width, height in ((1400, 900), (1024, 700)):
        window.resize(width, height)
        qtbot.wait(1500)
        window.grab().save(str(artifacts_dir / f"sampler-busy-{width}x{height}.png"))


@pytest.mark.slow
def test_a_killed_sampler_shows_a_banner_and_comes_back(sampled, qtbot, artifacts_dir):
    window = sampled()
    first = sampler_pid(window)
    os.kill(first, signal.SIGKILL)
    banner = window.sampler_banner
    qtbot.waitUntil(banner.isVisible, timeout=10_000)
    assert "sampling process stopped" in banner.text.text()
    assert window.gpu_panel.isVisible()  # the last GPUs stay on screen
    window.grab().save(str(artifacts_dir / "sampler-stopped-1400x900.png"))
    banner.restart.click()
    qtbot.waitUntil(lambda: not banner.isVisible(), timeout=30_000)
    assert sampler_pid(window) != first
    before = window.store.latest.time
    qtbot.waitUntil(lambda: window.store.latest.time > before, timeout=10_000)  # frames again
    assert len(window.store.latest.gpus) == 2 and window.store.latest.error is None


SAMPLING_MODULES = (
    "pynvml",
    "vramscope.sources.nvml.nvml_source",
    "vramscope.sources.all_gpus",
    "vramscope.sources.drm.drm_source",
    "vramscope.sources.machine.processes",
    "vramscope.sources.agents.agent_client",
    "vramscope.sources.machine.servers",
)


@pytest.mark.slow
def test_the_window_process_samples_nothing_itself_and_keeps_its_start_up_out_of_collections(tmp_path):
    import pathlib
    import subprocess
    import sys

    app = pathlib.Path(__file__).resolve().parents[2] / "app"
    code = (
        "import sys; sys.argv = ['vramscope', '--demo', '--busy', '--quit-after', '4']\n"
        "from vramscope.cli import main\n"
        "code = main()\n"
        f"print('LOADED', [m for m in sys.modules if m.startswith({SAMPLING_MODULES!r})])\n"
        "import gc; print('FROZEN', gc.get_freeze_count())\n"
        "raise SystemExit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(app), "QT_QPA_PLATFORM": "offscreen"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "LOADED []" in r.stdout  # no NVML, no /proc walk, no agent client in the window
    # the window's start-up heap (modules, classes, Qt's wrappers) is out of the collector's
    # generations: a full collection does not walk it (ui/window/app.py freeze_startup_heap)
    frozen = int(r.stdout.split("FROZEN ")[1].split()[0])
    assert frozen > 30_000


def test_the_sampler_takes_the_windows_options(monkeypatch):
    import sys

    from vramscope.sources.remote.local_sampler import SamplerProcess, sampler_options

    args = argparse.Namespace(demo=True, busy=True, seed=3)
    assert sampler_options(args, record=False, cap=None) == ["--demo", "--busy", "--seed", "3"]
    real = argparse.Namespace(demo=False)
    assert sampler_options(real, record=True, cap=2 << 30) == [
        "--record-session",
        "--session-cap",
        str(2 << 30),
    ]  # --no-record: no --record-session
    process = SamplerProcess(["--demo"], interval=0.5)
    # (its first look: the GPUs before the first pass has read their processes)
    assert process.argv(None)[-5:] == ["stream", "--interval", "0.5", "--devices-first", "--demo"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)  # the PyInstaller bundle
    assert process.argv(None) == [sys.executable, "stream", "--interval", "0.5", "--devices-first", "--demo"]


def test_the_sampler_raises_alerts_with_the_windows_thresholds():
    import dataclasses

    from vramscope.commands.window_recording import recording, thresholds
    from vramscope.core.detectors.settings import DiagnosticSettings
    from vramscope.core.flow.monitor import Monitor
    from vramscope.sources.remote.local_sampler import sampler_options
    from vramscope.sources.demo.simulated import SimulatedSource

    mine = dataclasses.replace(DiagnosticSettings(), idle_minutes=2.5, lookup_notebooks=False)
    options = sampler_options(argparse.Namespace(demo=False), record=False, cap=None, diagnostics=mine)
    assert options[0] == "--thresholds"
    args = argparse.Namespace(record_session=False, session_cap=None, thresholds=options[1])
    monitor = Monitor.build(SimulatedSource(), actions=False)
    assert (
        recording(args, thresholds(args.thresholds))(monitor, monitor.pipeline.source) is None
    )  # nothing recorded
    assert monitor.engine.settings == mine
    assert (
        sampler_options(
            argparse.Namespace(demo=False), record=False, cap=None, diagnostics=DiagnosticSettings()
        )
        == []
    )  # the defaults: nothing to say
    broken = argparse.Namespace(record_session=False, session_cap=None, thresholds='{"idle_minutes": "x"}')
    assert thresholds(broken.thresholds) is None  # said on stderr, defaults kept
    assert recording(broken, None) is None


@pytest.mark.slow
def test_new_thresholds_and_interval_reach_the_same_sampler_process(sampled, qtbot):
    import dataclasses

    from vramscope.core.detectors.settings import DiagnosticSettings

    window = sampled()
    source = window.feed.source
    pid = sampler_pid(window)
    source.set_thresholds(dataclasses.replace(DiagnosticSettings(), idle_minutes=0.1))
    source.set_interval(1.2)
    times = []

    def spaced() -> bool:
        t = window.store.latest.time
        if not times or times[-1] != t:
            times.append(t)
        return len(times) >= 4

    qtbot.waitUntil(spaced, timeout=20_000)
    assert sampler_pid(window) == pid  # taken by the running process: no restart, same session
    gaps = [b - a for a, b in zip(times[1:], times[2:])]  # (the first may straddle the change)
    assert all(g > 0.9 for g in gaps), gaps  # the new 1.2 s grid, not the 0.3 s one
    assert "--thresholds" in source.process.options  # and a restarted sampler starts with them


def test_the_banner_says_a_sampler_that_stopped_reading_its_requests_is_started_again(themed_app, qtbot):
    """A real child that never reads its stdin: the settings dialog's requests do not
    wait on it, and the window's banner says why it is started again."""
    from tests.remote.test_sampler_pipes import Misbehaving, finishes
    from vramscope.core.stream.settings_request import settings_message
    from vramscope.sources.remote.local_sampler import LocalSamplerSource
    from vramscope.ui.window.sampler_banner import SamplerBanner

    source = LocalSamplerSource([], interval=0.1, name="nvml")
    process = source.process = Misbehaving()
    process.write_stall = 0.5
    banner = SamplerBanner(source)
    qtbot.addWidget(banner)
    process.start()
    try:
        qtbot.waitUntil(lambda: process.frames > 0, timeout=20_000)
        big = settings_message(interval=1.0) | {"note": "x" * 60_000}
        assert finishes(lambda: [process.tell(big) for _ in range(4)], within=5.0)

        def said() -> bool:
            banner.check()
            return not banner.isHidden() and "stopped reading its input" in banner.text.text()

        qtbot.waitUntil(said, timeout=20_000)
        assert "restarting" in banner.text.text()
        qtbot.waitUntil(lambda: process.connections >= 2 and source.stopped() is None, timeout=20_000)
        banner.check()
        assert banner.isHidden()  # back: the banner goes
    finally:
        assert finishes(process.close, within=15.0)


def test_the_windows_thresholds_stay_when_the_window_saves_something_else(tmp_path, monkeypatch):
    """The window's thresholds (its command line's --idle-minutes on top of its
    settings) reach its sampler as --thresholds, the sampler's one channel: a hidden
    column saved to the settings file does not put the file's thresholds back."""
    import dataclasses
    import time

    from vramscope.core.detectors.settings import DiagnosticSettings
    from vramscope.core.settings.user_settings import Settings
    from vramscope.sources.assembly import build_monitor
    from vramscope.sources.remote.local_sampler import sampler_options
    from vramscope.sources.demo.simulated import SimulatedSource
    from vramscope.commands.window_recording import thresholds

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    settings = Settings()
    settings.override(diagnostics={"idle_minutes": 2.5})  # `vramscope --idle-minutes 2.5`
    told = thresholds(sampler_options(argparse.Namespace(demo=False), False, None, settings.diagnostics)[1])
    monitor = build_monitor(SimulatedSource(), diagnostics=told)
    assert monitor.engine.settings.idle_minutes == 2.5
    settings.set("hidden_columns", ["User"])  # the window saves an unrelated setting
    time.sleep(1.1)  # (the follow looks at the file at most once a second)
    for k in range(3):
        monitor.pipeline.sample_once()
    assert monitor.engine.settings == dataclasses.replace(DiagnosticSettings(), idle_minutes=2.5)
    monitor.close()

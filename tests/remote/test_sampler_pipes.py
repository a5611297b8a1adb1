"""The window's sampler process misbehaving, as a real child: one that stops reading
its stdin, one that leaves a grandchild in its process group. Requests from the
settings dialog (the GUI thread) never wait on the child, a child that stops
reading is ended and started again (said in the window's banner), and
``close()`` ends the whole group without hanging."""

from __future__ import annotations

import sys
import textwrap
import threading

import psutil
import pytest

from tests.remote.test_hosts import wait_for
from vramscope.core.stream.settings_request import settings_message
from vramscope.sources.remote.local_sampler import LocalSamplerSource, SamplerProcess

pytestmark = pytest.mark.timeout(60)

# A sampler that says hello and sends a frame every 0.1 s, and never reads its stdin;
# with a file name, it starts a grandchild (in its process group) and writes its pid there;
# with "exit", it ends after that, the grandchild keeping its stdout open.
CHILD = textwrap.dedent(
    """
    import subprocess, sys, time
    from vramscope.core.stream import protocol
    out = sys.stdout.buffer
    out.write(protocol.encode(protocol.hello("box", "1.0", 0.1)))
    out.flush()
    if len(sys.argv) > 1:
        kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(sys.argv[1], "w") as f:
            f.write(str(kid.pid))
        if sys.argv[2:] == ["exit"]:
            sys.exit(0)
    for seq in range(1, 10**6):
        frame = {"time": time.time(), "gpus": []}
        out.write(protocol.encode({"type": "frame", "frame": frame, "alerts": [], "seq": seq}))
        out.flush()
        time.sleep(0.1)
    """
)


class Misbehaving(SamplerProcess):
    def __init__(self, *child_args: str):
        super().__init__([], interval=0.1)
        self.child_args = list(child_args)
        self.pids: list[int] = []

    def argv(self, command) -> list[str]:
        return [sys.executable, "-c", CHILD, *self.child_args]

    def running_pid(self) -> int | None:
        with self._lock:
            return None if self._proc is None else self._proc.pid


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def finishes(call, within: float) -> bool:
    """``call`` on a thread: True when it returned within ``within`` seconds."""
    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(within)
    return not t.is_alive()


def test_a_sampler_that_stops_reading_never_blocks_the_settings_dialog_and_is_restarted():
    source = LocalSamplerSource([], interval=0.1, name="nvml")
    process = source.process = Misbehaving()
    process.write_stall = 0.5
    process.start()
    try:
        first = wait_for(lambda: process.frames and process.running_pid())
        results = []

        def dialog():  # far more than the pipe holds (64 KiB): a blocking write would wait for ever
            for n in range(3000):
                results.append(process.tell(settings_message(interval=1.0 + n / 10_000)))

        assert finishes(dialog, within=10.0), "tell() blocked on a child that does not read"
        assert results[0] is True
        why = wait_for(source.stopped)
        assert "stopped reading its input" in why and "restarting" in why  # the window's banner
        assert wait_for(lambda: process.connections >= 2 and process.frames and process.running_pid())
        assert process.running_pid() != first and gone(first)  # ended, and a new one started
        assert process.tell(settings_message(interval=2.0)) is True  # the new one takes requests
    finally:
        assert finishes(process.close, within=15.0), "close() hung"


def test_close_with_unread_requests_waiting_returns_and_ends_the_child():
    process = Misbehaving()
    process.write_stall = 60.0  # not ended for the stall: close() meets the full pipe
    process.start()
    pid = wait_for(lambda: process.frames and process.running_pid())
    big = settings_message(interval=1.0) | {"note": "x" * 60_000}
    assert finishes(lambda: [process.tell(big) for _ in range(8)], within=5.0)
    assert finishes(process.close, within=15.0), "close() hung on the full pipe"
    assert gone(pid)


@pytest.mark.parametrize("child_ends", [False, True], ids=["child-running", "child-ended"])
def test_close_ends_a_grandchild_left_in_the_samplers_process_group(tmp_path, child_ends):
    pid_file = tmp_path / "grandchild.pid"
    process = Misbehaving(str(pid_file), *(["exit"] if child_ends else []))
    process.start()
    grandchild = int(wait_for(lambda: pid_file.exists() and pid_file.read_text()))
    assert not gone(grandchild)
    if child_ends:
        wait_for(lambda: process.frames == 0 and process.hello is not None)
    assert finishes(process.close, within=15.0), "close() hung"
    assert wait_for(lambda: gone(grandchild), timeout=5.0)

"""One remote machine over the user's own ssh: `ssh HOST vramscope stream`.

Nothing listens on the network on either side; ssh does the authentication
(the user's ssh config, keys, agent, ProxyJump). ``RemoteHost`` keeps one
connection up in its own thread: it reads the stream's frames, answers
``snapshot()`` without blocking, and when the connection drops (the peer
died, the network went, nothing arrived for a while) it is marked down and
retried with exponential backoff, so a window watching several machines
goes on with the others. Requests are written without ever waiting on the
remote (sources/remote/pipe_writer.py); one that stops reading them for
``WRITE_STALL`` seconds is ended -- its whole process group
(sources/remote/child_group.py) -- and retried the same way. The command
line and how an attempt's end is read are sources/remote/ssh_command.py's.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import select
import shutil
import subprocess
import threading
import time

from vramscope.core.samples import Frame
from vramscope.core.stream import protocol
from vramscope.core.stream.codec import MAX_TEXT, plain_json
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.sources.remote.child_group import end_group
from vramscope.sources.remote.host_view import (  # the host's states, read through here too
    CONNECTED,
    CONNECTING,
    DOWN,
    NOT_INSTALLED,
    HostView,
    check_target,
    describe_state as describe_state,
)
from vramscope.sources.remote.agent_backlog import AgentBacklog
from vramscope.sources.remote.frame_arrivals import FrameArrivals
from vramscope.sources.remote.pipe_writer import PipeWriter
from vramscope.sources.remote.ssh_command import (
    FAILED,
    FRAMES,
    MISSING,
    REMOTE_COMMANDS,
    drain,
    not_installed_text,
    outcome,
    ssh_argv,
)

WRITE_STALL = 10.0  # seconds a request may wait for the remote to read its stdin before it is ended


class RemoteHost:
    def __init__(
        self,
        target: str,
        *,
        interval: float = 1.0,
        demo: bool = False,
        ssh: str | None = None,
        backoff: tuple[float, float] = (1.0, 30.0),
        stale_after: float | None = None,
        monotonic=time.monotonic,
    ):
        self.host = check_target(target)
        self.interval = float(interval)
        self.demo = demo
        self.ssh = ssh or os.environ.get("VRAMSCOPE_SSH") or "ssh"
        self.backoff = backoff
        self.stale_after = stale_after or max(10.0, 5 * self.interval)
        self._mono = monotonic
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._state = CONNECTING
        self._frame: Frame | None = None
        self._alerts: tuple = ()
        self._error: str | None = None
        self._retry_at: float | None = None
        self._remote_version: str | None = None
        self._proc: subprocess.Popen | None = None
        self._writer: PipeWriter | None = None  # the running process's stdin (never blocks)
        self.write_stall = WRITE_STALL
        self._backlog = AgentBacklog()  # agents' events and samples not yet handed out
        self._ids = itertools.count(1)
        self._waiting: dict[int, list] = {}  # request id -> [Event, reply]
        self._frames_seen = threading.Event()
        self.arrivals = FrameArrivals()  # frames read, and a wait for the next
        self.connections = 0
        self.refused = 0  # messages dropped for not fitting the schema
        self._refused_at: float | None = None
        self._thread: threading.Thread | None = None
        self.env: dict | None = None  # the command's environment (None: this process's)
        self.hello: dict | None = None  # the stream's hello, once connected

    # -- life --------------------------------------------------------------------------
    def start(self) -> "RemoteHost":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"vramscope-ssh-{self.host}", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        self.arrivals.wake()
        self._kill()
        if self._thread is not None:
            self._thread.join(5)

    def tell(self, message: dict) -> bool:
        """Send ``message`` (with an id of its own) to the stream without waiting for its
        answer, or for the process to read it (sources/remote/pipe_writer.py: this may be
        the GUI thread); False when none is running or it does not read (the next one
        starts with the options). A process still starting reads it after its hello; one
        that stops reading is ended and started again."""
        with self._lock:
            writer = self._writer
        return writer is not None and writer.send(protocol.encode({**message, "id": next(self._ids)}))

    def sending(self) -> bool:
        """Connected and not closed: its next frame is coming."""
        return not self._closed.is_set() and self.snapshot(take=False).state == CONNECTED

    def wait_first(self, timeout: float) -> HostView:
        """Block until the first frame, a definite failure, or the timeout."""
        deadline = self._mono() + timeout
        while self._mono() < deadline:
            view = self.snapshot(take=False)
            if view.frame is not None or view.state in (DOWN, NOT_INSTALLED):
                return view
            refused = self._refused_at
            if refused is not None and self._mono() > refused + 2 * self.interval + 1:
                return view  # frames come but none fits: said now, not at the timeout
            self._frames_seen.wait(0.05)
        view = self.snapshot(take=False)
        if view.frame is None and view.error is None:
            return dataclasses.replace(view, state=DOWN, error=f"no frame within {timeout:g} s")
        return view

    def snapshot(self, take: bool = True) -> HostView:
        """The newest state; with ``take`` the agents' events and samples since the last take
        are handed out once (sources/remote/agent_backlog.py)."""
        with self._lock:
            frame = self._frame
            if take and frame is not None:
                frame = self._backlog.take(frame)
            retry = None if self._retry_at is None else max(0.0, self._retry_at - self._mono())
            return HostView(
                self.host, self._state, frame, self._alerts, self._error, retry, self._remote_version
            )

    # -- requests ----------------------------------------------------------------------
    def request(
        self, op: str, pid: int, start_time: float | None, memory: int | None = None, timeout: float = 10.0
    ):
        """Run a core/end_process/actions.py call on the remote; its value, or RuntimeError."""
        ident = next(self._ids)
        slot = [threading.Event(), None]
        message = {
            protocol.TYPE: protocol.ACT,
            "id": ident,
            "op": op,
            "pid": pid,
            "start_time": start_time,
            "memory": memory,
        }
        with self._lock:
            writer = self._writer if self._state == CONNECTED else None
            if writer is None:
                raise RuntimeError(f"{self.host} is not connected ({self._error or self._state})")
            self._waiting[ident] = slot
        if not writer.send(protocol.encode(message)):
            with self._lock:
                self._waiting.pop(ident, None)
            raise RuntimeError(f"{self.host}: the connection broke (its input is closed or not read)")
        try:
            if not slot[0].wait(timeout):
                raise RuntimeError(f"{self.host} did not answer within {timeout:g} s")
        finally:
            with self._lock:
                self._waiting.pop(ident, None)
        reply = slot[1]
        if reply is None:
            raise RuntimeError(f"{self.host}: the connection dropped before the answer")
        if reply.get("ok") is not True:
            error = reply.get("error")
            error = error[:500] if isinstance(error, str) and error else "request refused"
            raise RuntimeError(f"{self.host}: {error}")
        try:
            return plain_json(reply.get("value"))
        except (ValueError, TypeError, RecursionError) as exc:
            raise RuntimeError(f"{self.host}: an answer that does not fit ({exc})") from None

    # -- the connection thread ---------------------------------------------------------
    def _run(self) -> None:
        failures = 0
        while not self._closed.is_set():
            started = self._mono()
            got_frames = self._connect()
            if self._closed.is_set():
                break
            if got_frames and self._mono() - started > 30:
                failures = 0  # it ran for a while: start the backoff over
            with self._lock:
                if self._state != NOT_INSTALLED:
                    self._state = DOWN
            delay = min(self.backoff[1], self.backoff[0] * 2**failures)
            if self._state == NOT_INSTALLED:
                delay = self.backoff[1]
            failures += 1
            with self._lock:
                self._retry_at = self._mono() + delay
            self._wait_retry(delay)
            with self._lock:
                self._retry_at = None

    def _wait_retry(self, delay: float) -> None:
        self.arrivals.wake()  # down: a wait for its next frame ends now
        self._closed.wait(delay)

    def _connect(self) -> bool:
        """One connection, trying the remote commands in turn; True if frames came."""
        last_error = None
        for i, command in enumerate(REMOTE_COMMANDS):
            if self._closed.is_set():
                return False
            result, detail = self._attempt(command)
            if result == FRAMES:
                return True
            if result == MISSING and i + 1 < len(REMOTE_COMMANDS):
                continue
            if result == MISSING:
                with self._lock:
                    self._state = NOT_INSTALLED
                    self._error = not_installed_text(self.host)
                return False
            last_error = detail
            break
        with self._lock:
            self._error = last_error
        return False

    def argv(self, command) -> list[str]:
        return ssh_argv(self.ssh, self.host, command, self.interval, self.demo)

    def _attempt(self, command) -> tuple[str, str | None]:
        """(FRAMES | MISSING | FAILED, error text): sources/remote/ssh_command.py's ``outcome``."""
        if shutil.which(self.ssh) is None:
            return FAILED, f"cannot run {self.ssh!r}: no ssh client on this machine's PATH"
        try:
            proc = subprocess.Popen(
                self.argv(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=self.env,
            )
        except OSError as exc:
            return FAILED, f"cannot run {self.ssh}: {exc}"
        self.connections += 1
        writer = PipeWriter(proc.stdin)
        with self._lock:
            self._proc, self._writer = proc, writer
            if self._state != CONNECTED:
                self._state = CONNECTING
        stderr_tail: collections.deque = collections.deque(maxlen=20)
        err_thread = threading.Thread(target=drain, args=(proc.stderr, stderr_tail), daemon=True)
        err_thread.start()
        decoder = protocol.LineDecoder()
        frames = FrameAssembler()
        fd = proc.stdout.fileno()
        last = self._mono()
        problem = None
        try:
            while not self._closed.is_set():
                # (close() ends ssh: its EOF wakes this at once)
                try:
                    ready, room, _ = select.select(
                        [fd], [writer] if writer.waiting else [], [], min(1.0, self.stale_after / 4)
                    )
                except (OSError, ValueError):  # its stdin closed meanwhile: close() is ending it
                    break
                if room:
                    writer.flush()
                if writer.stalled_for() > self.write_stall:
                    problem = f"it stopped reading its input ({writer.waiting:,} bytes unread)"
                    break
                if not ready:
                    if self._mono() - last > self.stale_after:
                        problem = f"no data for {self.stale_after:g} s"
                        break
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break  # EOF: the remote or ssh ended
                last = self._mono()
                try:
                    messages = decoder.feed(chunk)
                except protocol.StreamError as exc:
                    problem = str(exc)
                    break
                for message in messages:
                    self._handle(message, frames)
        finally:
            self._kill(proc)
            err_thread.join(2)
            proc.stdout.close()
            self._fail_waiting()
        result, why = outcome(decoder.hello is not None, problem, proc.returncode, stderr_tail)
        if result == FRAMES:
            with self._lock:
                self._error = f"connection lost: {why}"
            return FRAMES, None
        return result, why

    def _handle(self, message: dict, frames: FrameAssembler) -> None:
        """One message, checked here at the edge (the codec's schema for frames,
        plain bounded JSON for the rest): what does not fit is dropped and said
        once per host (``refused``); the connection goes on."""
        kind = message.get(protocol.TYPE)
        if kind == protocol.HELLO:
            version = message.get("vramscope")
            frames.version = message.get("version")  # (LineDecoder checked it is one this side reads)
            with self._lock:
                self._state = CONNECTED
                self._error = None
                self._remote_version = version[:64] if isinstance(version, str) else None
                self.hello = message
        elif kind in (protocol.FRAME, protocol.DELTA):
            try:
                frame, alerts = (frames.whole if kind == protocol.FRAME else frames.delta)(message)
                alerts = tuple(alerts)
            except (ValueError, TypeError, RecursionError) as exc:
                self._refuse(f"a {kind} that does not fit the stream's schema ({exc})")
                self.arrivals.one()  # (one came: a pass waiting for it goes on with the last)
                return
            with self._lock:
                self._backlog.add(frame)
                self._frame = frame
                self._alerts = alerts
            self._frames_seen.set()
            self.arrivals.one()
        elif kind == protocol.RESULT:
            ident = message.get("id")
            if type(ident) is not int:
                self._refuse(f"a result with an id that is no integer ({str(ident)[:40]})")
                return
            with self._lock:
                slot = self._waiting.get(ident)
            if slot is not None:
                slot[1] = message
                slot[0].set()
        elif kind == protocol.ERROR:
            with self._lock:
                self._error = str(message.get("message"))[:MAX_TEXT]

    def _refuse(self, what: str) -> None:
        """A message dropped: said once per host (the first), the host kept."""
        with self._lock:
            self.refused += 1
            if self.refused == 1:
                self._error = f"dropped {what}"[:500]
                self._refused_at = self._mono()
        self._frames_seen.set()  # wait_first: a refused first frame is an answer

    def _fail_waiting(self) -> None:
        with self._lock:
            slots = list(self._waiting.values())
        for slot in slots:
            slot[0].set()

    def _kill(self, proc: subprocess.Popen | None = None) -> None:
        """End ``proc`` (the running one by default) and everything in its process group:
        ssh or the sampler, and whatever they started, a child that outlived them included."""
        writer = None
        with self._lock:
            proc = proc or self._proc
            if proc is self._proc:
                self._proc, writer = None, self._writer
                self._writer = None
        if proc is None:
            return
        if writer is not None:
            writer.close()  # the remote stream ends when its stdin closes
        else:
            try:
                proc.stdin.close()
            except OSError:
                pass
        end_group(proc)  # (its own session: start_new_session)

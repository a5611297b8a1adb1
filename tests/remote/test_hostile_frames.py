"""A remote host's frames are input (issue 24): a frame of the wrong shape is
dropped at the edge with one line for its host, the host is kept, and nothing
prints a traceback -- `status --host` (text and JSON) and ending a process
over ssh alike."""

from __future__ import annotations

import pytest
import json
import math
import os
import pathlib
import stat
import subprocess
import sys
import textwrap
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenvml import GiB
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.status.status_report import frame_to_dict
from vramscope.core.status.status_table import render_table
from vramscope.core.stream.codec import frame_from_wire, frame_to_wire
from vramscope.sources.remote.hosts import HostActions, HostsSource

GOOD = Frame(
    time=1.7e9,
    source="nvml",
    driver_version="550.54",
    gpus=(
        GpuSample(
            index=0,
            name="NVIDIA RTX A6000",
            total=48 * GiB,
            used=12 * GiB,
            free=36 * GiB,
            util_gpu=40,
            temperature=50,
            power_w=120.0,
            processes=(
                GpuProcess(
                    pid=4242,
                    used=3 * GiB,
                    sm=10,
                    kinds=("compute",),
                    info=ProcessInfo(pid=4242, start_time=1.6e9, user="ann", cmdline=("python", "train.py")),
                ),
            ),
        ),
    ),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def paths(value, prefix=()):
    """Every place in a wire dict, to put a stranger's value there."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


WIRE = frame_to_wire(GOOD)
PLACES = [p for p in paths(WIRE) if p]


def replaced(wire, place, value):
    wire = json.loads(json.dumps(wire))
    node = wire
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    return wire


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PLACES), json_values)
def test_a_frame_with_any_value_anywhere_is_a_frame_that_prints_or_a_one_line_refusal(place, value):
    try:
        frame = frame_from_wire(replaced(WIRE, place, value))
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("not a ")
        return
    # what got through is printable: text and strict JSON (no NaN/Infinity)
    assert render_table(frame).startswith("vramscope status")
    json.dumps(frame_to_dict(frame), allow_nan=False, default=str)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [
            ("time",),
            ("gpus", 0, "total"),
            ("gpus", 0, "power_w"),
            ("gpus", 0, "processes", 0, "info", "start_time"),
            ("gpus", 0, "processes", 0, "used"),
            ("gpus", 0, "name"),
        ]
    ),
    st.sampled_from(["12", 1e308, math.nan, math.inf, -math.inf, [], {}, True, 2**80]),
)
def test_strings_for_numbers_huge_times_and_nan_are_refused(place, value):
    if place == ("gpus", 0, "name") and isinstance(value, str):
        return  # a string is a name
    try:
        frame_from_wire(replaced(WIRE, place, value))
    except ValueError:
        return
    raise AssertionError(f"{place} = {value!r} was taken")


# -- end to end: a remote `vramscope stream` that sends what it likes -------------------------

HOSTILE_STREAM = textwrap.dedent("""\
    #!{python}
    import json, sys
    def send(m):
        sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
    good = {good}
    send({{"type": "hello", "stream": "vramscope", "version": 1, "vramscope": "9.9",
          "host": "evil", "interval": 1}})
    send({{"type": "frame", "frame": {{"time": "soon", "gpus": "many"}}}})
    send({{"type": "frame", "frame": {{**good, "time": 1e308}}}})
    sys.stdout.write('{{"type": "frame", "frame": {{"time": NaN}}}}\\n')
    send({{"type": "frame"}})
    sys.stdout.write("[" * 100000 + "]" * 100000 + "\\n")  # past json's nesting depth
    sys.stdout.write('{{"type": "frame", "frame": ' + "[" * 100000 + "]" * 100000 + "}}\\n")
    send({{"type": "frame", "frame": good, "alerts": [{{"title": "%s"}}]}})
    send({{"type": "result", "id": [1, 2], "ok": True}})
    for line in sys.stdin:  # process actions: answers of the wrong shape
        m = json.loads(line)
        value = {{"describe": {{"pid": "one", "own": "yes"}}, "is_alive": "maybe",
                 "terminate": ["not", "a", "dict"], "kill": {{"ok": True, "message": 7}},
                 "kill_allowed_in": 1e308}}[m["op"]]
        send({{"type": "result", "id": m["id"], "ok": True, "value": value}})
""")


def add_hostile_host(hosts, name: str, good: Frame) -> None:
    bindir = hosts.dir / f"{name}-bin"
    bindir.mkdir()
    script = bindir / "vramscope"
    script.write_text(
        HOSTILE_STREAM.format(python=sys.executable, good=repr(frame_to_wire(good))).replace(
            "%s", "ALERT \\\\u001b[2J"
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    hosts.add(name, path=os.pathsep.join([str(bindir), "/usr/bin", "/bin"]))


def status_host(hosts, *args):
    return subprocess.run(
        [sys.executable, "-m", "vramscope", "status", "--host", "evil", *args],
        capture_output=True,
        text=True,
        timeout=90,
        env=hosts.env(),
    )


def test_status_host_drops_wrong_frames_with_one_line_and_shows_the_good_one(hosts):
    add_hostile_host(hosts, "evil", GOOD)
    for args in ((), ("--json",)):
        done = status_host(hosts, *args)
        assert "Traceback" not in done.stderr + done.stdout, done.stderr
        assert done.returncode == 0, done.stderr
        if args:
            (host,) = json.loads(done.stdout)["hosts"]
            assert host["state"] == "connected" and host["gpus"][0]["name"] == "NVIDIA RTX A6000"
            assert host["error"] is None or "dropped a frame" in host["error"]
        else:
            out = done.stdout
            assert "== evil ==" in out and "NVIDIA RTX A6000" in out and "python train.py" in out
            dropped = [line for line in out.splitlines() if "dropped" in line]
            assert len(dropped) == 1 and "schema" in dropped[0]  # one line for the host
            assert "\x1b" not in out


@pytest.mark.slow
def test_a_first_frame_that_does_not_fit_is_said_at_once_not_after_the_timeout(hosts):
    bad = Frame(time=1.7e9, source="nvml")
    add_hostile_host(hosts, "evil", bad)
    # the hostile script's "good" frame is fine too; make every frame bad instead:
    script = hosts.dir / "evil-bin" / "vramscope"
    text = script.read_text().replace('send({"type": "frame", "frame": good, ', 'send({"type": "x", ')
    script.write_text(text)
    started = time.monotonic()
    done = status_host(hosts)
    assert time.monotonic() - started < 20  # not the 30 s first-frame timeout
    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == 2
    assert "dropped a frame that does not fit" in done.stdout


def test_ending_a_process_over_ssh_with_wrong_answers_refuses_without_a_traceback(hosts, tmp_path):
    add_hostile_host(hosts, "evil", GOOD)
    source = HostsSource(["evil"], interval=0.2)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            frame = source.sample(time.time())
            if frame.gpus and frame.gpus[0].processes:
                break
            time.sleep(0.1)
        proc = frame.gpus[0].processes[0]
        pid, start = proc.identity
        actions = HostActions(source, audit_path=pathlib.Path(tmp_path) / "audit.jsonl")
        summary = actions.describe(pid, start, memory=proc.used)
        assert summary.refusal and "evil" in summary.refusal and not summary.own
        for end in (actions.terminate, actions.kill):
            result = end(pid, start)
            assert not result.ok and "does not fit" in result.message
        assert actions.kill_allowed_in(pid, start) is None  # 1e308
        assert actions.is_alive(pid, start) is True  # "maybe": not gone
    finally:
        source.close()


# -- the other direction: requests a `vramscope stream` gets ----------------------------------


class _Actions:
    """Stands in for core/actions.ProcessActions: says what it was asked."""

    def __init__(self):
        self.calls = []

    def is_alive(self, pid, start_time):
        self.calls.append((pid, start_time))
        return True


request_values = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=8)
    | st.lists(st.integers(), max_size=2)
)


@settings(max_examples=200, deadline=None)
@given(request_values, request_values, request_values)
def test_any_request_gets_an_answer_that_can_be_sent_and_the_stream_goes_on(ident, pid, start):
    import io
    import threading

    from vramscope.commands.stream import StreamWriter, serve_requests
    from vramscope.core.stream import protocol

    lines = [
        json.dumps({"type": "act", "id": ident, "op": "is_alive", "pid": pid, "start_time": start}),
        json.dumps({"type": "act", "id": 99, "op": "is_alive", "pid": 1, "start_time": 1.0}),
    ]
    out = io.BytesIO()
    stop = threading.Event()
    actions = _Actions()
    serve_requests(io.StringIO("\n".join(lines) + "\n"), StreamWriter(out, None, stop), actions, stop)
    replies = protocol.LineDecoder()
    replies.hello = {}  # (answers only: no hello on this side)
    answered = replies.feed(out.getvalue())
    assert [r["id"] for r in answered][-1] == 99 and answered[-1]["ok"] is True
    assert len(answered) == 2  # the odd request answered too, not the stream ended
    for pid_seen, start_seen in actions.calls:
        assert type(pid_seen) is int and 0 < pid_seen < 2**31
        assert start_seen is None or math.isfinite(start_seen)


def test_a_remote_command_line_of_megabytes_is_kept_to_what_a_local_one_is():
    from vramscope.core.processes.process_text import MAX_COMMAND_CHARS

    wire = replaced(
        WIRE, ("gpus", 0, "processes", 0, "info", "cmdline"), ["python"] + ["x" * 60_000] * 100
    )  # 6 MB, each string within MAX_TEXT
    (proc,) = frame_from_wire(wire).gpus[0].processes
    assert sum(map(len, proc.info.cmdline[:-1])) == MAX_COMMAND_CHARS
    assert proc.info.cmdline[-1].endswith("more characters not kept]")

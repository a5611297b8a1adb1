"""Requests over the stream that are malformed, and recordings whose host never
answers: answered or said, never a silent stop, a dead reader or a false success."""

from __future__ import annotations

import io
import json
import math
import threading

import pytest

from vramscope.cli import main
from vramscope.commands.stream import StreamWriter, serve_requests
from vramscope.core.end_process.actions import ProcessActions
from vramscope.core.stream import protocol
from vramscope.core.stream.codec import FrameDecoder
from vramscope.sources.remote.host_stream import RemoteHost

from remote import fakessh

pytestmark = pytest.mark.timeout(60)


def _requests(*messages) -> list[bytes]:
    return [(m if isinstance(m, str) else json.dumps(m)).encode() + b"\n" for m in messages]


def _answers(lines) -> list[dict]:
    out = io.BytesIO()
    stop = threading.Event()
    writer = StreamWriter(out, engine=None, stop=stop)
    serve_requests(iter(lines), writer, ProcessActions(read_only=True), stop)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_request_with_a_nan_start_time_is_answered_and_the_stream_goes_on():
    answers = _answers(
        _requests(
            '{"type": "act", "id": 1, "op": "describe", "pid": 4242, "start_time": NaN}',
            '{"type": "act", "id": [2], "op": "is_alive", "pid": 1, "start_time": Infinity}',
            {"type": "act", "id": 3, "op": "is_alive", "pid": 2**31, "start_time": 1.0},
            {"type": "act", "id": 4, "op": "kill", "pid": 10**30, "start_time": None},
            {"type": "act", "id": 5, "op": "is_alive", "pid": 1, "start_time": 1.0},
        )
    )
    assert [a["id"] for a in answers] == [1, None, 3, 4, 5]  # an unusable id is not echoed
    assert "not a time" in answers[0]["error"] and "not a time" in answers[1]["error"]
    assert "not a process id" in answers[2]["error"] and "not a process id" in answers[3]["error"]
    assert answers[4]["ok"] is True  # the stream still answers after all of them


def test_end_process_with_a_huge_pid_or_nan_start_time_is_refused_not_raised(tmp_path):
    actions = ProcessActions(audit_path=tmp_path / "audit.log")
    for pid, start in ((2**31, 1.0), (2**64, None), (4242, math.nan), (4242, math.inf)):
        result = actions.terminate(pid, start)
        assert not result.ok and "refusing" in result.message
        assert actions.describe(pid, start).refusal
        assert actions.is_alive(pid, start) is False


def test_a_result_with_an_unhashable_id_does_not_kill_the_host_reader():
    host = RemoteHost("lab-a")
    slot = [threading.Event(), None]
    host._waiting[7] = slot
    frames = FrameDecoder()
    for ident in ([7], {"x": 7}, 7.0, True, None):
        host._handle({protocol.TYPE: protocol.RESULT, "id": ident, "ok": True}, frames)
    assert not slot[0].is_set()  # none of those is request 7 ...
    host._handle({protocol.TYPE: protocol.RESULT, "id": 7, "ok": True, "value": 1}, frames)
    assert slot[0].is_set() and slot[1]["value"] == 1  # ... and the reader still answers it


@pytest.mark.slow
def test_record_from_a_host_whose_ssh_always_fails_says_so_and_fails(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    fakessh.install(bin_dir, {})  # every host unknown: ssh exits 255
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    out = tmp_path / "lab.vramscope"
    code = main(["record", "--host", "nowhere", "--duration", "2", "--interval", "0.5", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert "none of the" in err and "has GPU figures" in err and "Could not resolve hostname" in err

"""`vramscope sites` and `vramscope plan --pid` against a hostile or broken agent, a
real socket peer: a reply over 4 MiB or nested deeper than 64 levels is one line
and a non-zero exit; wrong types and NaN in a recording's result give "n/a" in the
text, strict JSON with --json, escaped terminal text, and never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.agent.serving.test_hostile_runtime_dirs import FakeAgent
from vramscope.agent import protocol
from vramscope.agent.serving import paths
from vramscope.agent.json_limits import MAX_DEPTH
from vramscope.cli import main

pytestmark = pytest.mark.timeout(60)

OVERSIZE = protocol.HEADER.pack(protocol.MAGIC, protocol.PROTOCOL_VERSION, 0, protocol.MAX_FRAME + 1) + b"{}"
TOO_DEEP = protocol.frame_bytes(
    b'{"ok": true, "x": ' + b"[" * (MAX_DEPTH + 10) + b"]" * (MAX_DEPTH + 10) + b"}"
)

# a finished recording whose figures are of the wrong types, NaN or infinite, with terminal controls
BROKEN_RESULT = (
    b'{"state": "done", "steps": "3", "done_steps": 2.5, "overhead": NaN, "us_per_alloc": "fast",'
    b' "snapshot_path": ["/tmp/x"], "devices": {"cuda:0": {"peak_bytes": Infinity, "complete": "yes",'
    b' "why": {"a": 1}, "sites": [{"site": "\\u001b[31mtrain.py:88\\u0007", "bytes": "big", "count": NaN},'
    b' "junk", 7, {"site": 5, "bytes": 1}]}, "cuda:1": "not an object", "cuda:2": {"sites": {"x": 1}}}}'
)


class ScriptedAgent(FakeAgent):
    """An agent socket of this process (the name `sites PID` looks for) answering each op
    with its script: raw bytes (framed or not) or a payload to frame."""

    def __init__(self, directory: str, script: dict):
        self.script = script
        super().__init__(os.path.join(directory, paths.socket_name(os.getpid(), paths.start_ticks())), b"")

    def reply(self, message: dict) -> bytes:
        answer = self.script.get(message.get("op"), b'{"ok": false, "error": "unknown op"}')
        return answer if answer.startswith(protocol.MAGIC) else protocol.frame_bytes(answer)


def pull_reply(data: bytes) -> bytes:
    return (
        b'{"ok": true, "cursor": 2, "more": false, "items": ["junk", {"kind": "event", "event": "sites",'
        b' "seq": 1, "t": 1.0, "data": ' + data + b"}]}"
    )


SITES_SCRIPT = {
    "hello": b'{"ok": true, "latest": "many"}',
    "record_sites": b'{"ok": true, "state": "recording"}',
    "pull": pull_reply(BROKEN_RESULT),
}


@pytest.fixture
def agent_with(runtime_dir):
    made = []

    def make(script: dict) -> ScriptedAgent:
        made.append(ScriptedAgent(runtime_dir, script))
        return made[-1]

    yield make
    for agent in made:
        agent.close()


def strict(text: str):
    """JSON as RFC 8259 has it: NaN and Infinity refused."""

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("bad", [OVERSIZE, TOO_DEEP], ids=["over-4MiB", "deeper-than-64"])
@pytest.mark.parametrize("op", ["hello", "record_sites", "pull"])
def test_sites_meets_a_reply_over_the_limits_with_one_line(agent_with, capsys, bad, op):
    agent_with({**SITES_SCRIPT, op: bad})
    rc = main(["sites", str(os.getpid()), "--steps", "2"])
    err = capsys.readouterr().err
    assert rc != 0 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("vramscope sites: the agent's reply is refused")


@pytest.mark.parametrize("bad", [OVERSIZE, TOO_DEEP], ids=["over-4MiB", "deeper-than-64"])
def test_plan_pid_meets_a_reply_over_the_limits_with_one_line(agent_with, capsys, bad):
    agent_with({"hello": bad})
    rc = main(["plan", "--pid", str(os.getpid()), "--batch", "8", "--gpu-memory", "24GiB"])
    err = capsys.readouterr().err
    assert rc != 0 and len(err.strip().splitlines()) == 1, err
    assert "the agent's reply is refused" in err


def test_sites_prints_na_for_what_does_not_fit_and_escapes_the_agents_text(agent_with, capsys):
    agent_with(SITES_SCRIPT)
    assert main(["sites", str(os.getpid()), "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "overhead: not measured yet" in out  # NaN: not a measurement
    assert "cuda:0: peak n/a alive; top sites:" in out
    assert "n/a      ?x  \\x1b[31mtrain.py:88\\x07" in out and "\x1b" not in out and "\x07" not in out
    assert "cuda:2: peak n/a alive; top sites:" in out and "cuda:1" not in out  # not an object: left out
    assert "snapshot" not in out  # a list is no path


def test_sites_json_is_strict_json_with_null_for_what_does_not_fit(agent_with, capsys):
    agent_with(SITES_SCRIPT)
    assert main(["sites", str(os.getpid()), "--steps", "2", "--json"]) == 0
    doc = strict(capsys.readouterr().out)
    assert doc["ok"] is True and doc["overhead"] is None and doc["us_per_alloc"] is None
    assert doc["steps"] is None and doc["done_steps"] is None and doc["snapshot_path"] is None
    [site] = doc["devices"]["cuda:0"]["sites"]
    assert site == {"site": "\x1b[31mtrain.py:88\x07", "bytes": None, "count": None}  # (JSON escapes it)
    assert doc["devices"]["cuda:0"]["peak_bytes"] is None and set(doc["devices"]) == {"cuda:0", "cuda:2"}


def test_sites_as_installed_prints_no_traceback_for_a_hostile_agent(agent_with, runtime_dir):
    agent_with({**SITES_SCRIPT, "pull": TOO_DEEP})
    env = {**os.environ, "VRAMSCOPE_RUNTIME_DIR": runtime_dir}
    r = subprocess.run(
        [sys.executable, "-m", "vramscope", "sites", str(os.getpid()), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.startswith("vramscope sites: the agent's reply is refused") and r.stdout == ""


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {"a": 1}, "12", [1], True, 10**400])
def test_shared_formatters_say_na_for_what_is_no_finite_number(value):
    from vramscope.commands.sites import overhead_text
    from vramscope.core.units import fmt_bytes, fmt_duration, fmt_gib, fmt_percent

    assert fmt_bytes(value) == fmt_gib(value) == fmt_percent(value) == fmt_duration(value) == "n/a"
    assert overhead_text({"overhead": value, "us_per_alloc": value}) == "overhead: not measured yet"
    assert overhead_text({"overhead": 0.05, "us_per_alloc": value}) == "overhead: step time +5.0%"

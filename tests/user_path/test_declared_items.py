"""What a real agent sends is what agent/protocol/items.py declares: every key of the
hello and of each sample, step, event and modules item it serves (a CPU
training run under `vramscope run`, read over its socket) is declared there,
with the declared type. The monitor decodes against those declarations, so a
key the agent sends undeclared would be silently dropped on the way."""

from __future__ import annotations

import glob
import os
import time

import pytest

from user_path.helpers import Training
from vocabulary import assert_typed
from vramscope.agent import protocol
from vramscope.agent.protocol import ItemKind
from vramscope.sources.agents.agent_connection import AgentConnection

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

DECLARED = {
    ItemKind.SAMPLE: protocol.SampleItem,
    ItemKind.STEP: protocol.StepItem,
    ItemKind.EVENT: protocol.EventItem,
    ItemKind.MODULES: protocol.ModulesItem,
}


def test_a_real_agent_sends_only_what_its_protocol_declares(tmp_path):
    training = Training(tmp_path, steps=30)
    try:
        (path,) = glob.glob(
            os.path.join(training.runtime, "**", f"agent-{training.pid}-*.sock"), recursive=True
        )
        conn = AgentConnection(path)
        try:
            hello = conn.request({"op": "hello"}, time.monotonic() + 5)
            assert_typed(protocol.HelloReply, {k: v for k, v in hello.items() if k != "id"}, "hello")
            seen: dict = {}
            cursor, deadline = 0, time.monotonic() + 30
            while set(DECLARED) - set(seen) - {ItemKind.EVENT} and time.monotonic() < deadline:
                reply = conn.request({"op": "pull", "cursor": cursor}, time.monotonic() + 5)
                cursor = reply["cursor"]
                for item in reply["items"]:
                    seen.setdefault(item["kind"], []).append(item)
                time.sleep(0.2)
        finally:
            conn.close()
    finally:
        training.close()
    assert {ItemKind.SAMPLE, ItemKind.STEP, ItemKind.MODULES} <= set(seen), sorted(seen)
    for kind, items in seen.items():
        if kind in DECLARED:
            for item in items:
                assert_typed(DECLARED[kind], item, str(kind))

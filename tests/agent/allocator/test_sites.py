"""Allocation sites on demand: the top sites by bytes alive at the peak of the recorded
steps, from snapshot fixtures with frames and device_traces; the recorder's life
(on for N steps, off, the pickle, the event); why it cannot run on CPU-only torch,
an older torch, or where history is already on; a history buffer that filled."""

from __future__ import annotations

import json
import pickle
import types

from tests.agent import snapshots as S
from tests.agent.snapshots import MiB, frame
from vramscope.agent.allocator import sites
from vramscope.agent.protocol import EventKind, Op
from vramscope.sources.demo.allocator_replay import GiB, ReplayProvider, memory_stats_dict
from vramscope.agent.allocator.site_recorder import ENV_STEPS, SiteRecorder

TRAIN = frame("/home/a/proj/train.py", 88, "forward")
LOSS = frame("/home/a/proj/train.py", 120, "compute_loss")
TORCH = frame("/usr/lib/python3/site-packages/torch/nn/modules/linear.py", 125, "forward")


def _traced() -> dict:
    """Weights before the trace; in the trace two activations (one freed), a loss buffer,
    then the peak; then both freed."""
    base = 1 << 40
    w = S.segment(base, [(S.A, 100 * MiB, 100 * MiB, [TORCH, TRAIN])])
    trace = [
        {
            "action": "alloc",
            "addr": base + 200 * MiB,
            "size": 40 * MiB,
            "frames": [TORCH, TRAIN],
            "time_us": 1,
        },
        {"action": "alloc", "addr": base + 300 * MiB, "size": 30 * MiB, "frames": [LOSS], "time_us": 2},
        {
            "action": "alloc",
            "addr": base + 400 * MiB,
            "size": 50 * MiB,
            "frames": [TORCH, TRAIN],
            "time_us": 3,
        },
        {"action": "free_requested", "addr": base + 200 * MiB, "size": 40 * MiB, "frames": [], "time_us": 4},
        {"action": "free_completed", "addr": base + 200 * MiB, "size": 40 * MiB, "frames": [], "time_us": 5},
        {"action": "free_requested", "addr": base + 400 * MiB, "size": 50 * MiB, "frames": [], "time_us": 6},
    ]
    return S.snapshot([w], traces=[trace])


def test_site_is_the_users_line_not_torchs():
    assert sites.site_of([TORCH, TRAIN]) == "/home/a/proj/train.py:88 in forward"
    assert (
        sites.site_of([TORCH]) == "/usr/lib/python3/site-packages/torch/nn/modules/linear.py:125 in forward"
    )
    assert sites.site_of([]) is None


def test_top_sites_are_the_bytes_alive_at_the_peak():
    got = sites.peak_sites(_traced(), 0)
    assert got["peak_bytes"] == (100 + 40 + 30 + 50) * MiB and got["peak_time_us"] == 3
    assert got["sites"] == [
        {"site": "/home/a/proj/train.py:88 in forward", "bytes": 190 * MiB, "count": 3},
        {"site": "/home/a/proj/train.py:120 in compute_loss", "bytes": 30 * MiB, "count": 1},
    ]
    assert got["complete"] and got["why"] is None


def test_a_history_buffer_that_filled_is_said_not_hidden():
    got = sites.peak_sites(_traced(), 0, max_entries=6)
    assert not got["complete"] and "history buffer filled (max_entries=6)" in got["why"]
    assert got["sites"]  # still the sites it has


def test_no_trace_is_na_with_its_reason():
    got = sites.peak_sites(S.healthy(), 0)
    assert "no allocation trace" in got["why"] and not got["complete"]


def test_live_tensors_carry_shape_dtype_and_site_and_count_a_storage_once():
    snap = _traced()
    base = 1 << 40
    tensors = [
        (base, 100 * MiB, (25600, 1024), "torch.float32", "encoder"),
        (base, 100 * MiB, (1024, 25600), "torch.float32", "encoder"),  # a view: same storage
        (base + 900 * MiB, 2 * MiB, (512,), "torch.bfloat16", None),
    ]
    got = sites.live_tensors(snap["segments"], tensors)
    assert got == [
        {
            "bytes": 100 * MiB,
            "shape": [25600, 1024],
            "dtype": "float32",
            "module": "encoder",
            "site": "/home/a/proj/train.py:88 in forward",
        },
        {"bytes": 2 * MiB, "shape": [512], "dtype": "bfloat16", "module": None, "site": None},
    ]


# -- the recorder -----------------------------------------------------------------------------------------


class FakeMemory:
    def __init__(self, snapshot, old=False):
        self.calls = []
        self.snapshot = snapshot
        self.old = old

    def _record_memory_history(self, enabled="all", *args, **kw):
        if self.old and "stacks" in kw:
            raise TypeError("unexpected keyword argument 'stacks'")
        self.calls.append((enabled, kw))

    def _snapshot(self):
        return self.snapshot


def fake_torch(snapshot, cuda="12.4", old=False):
    memory = FakeMemory(snapshot, old)
    return types.SimpleNamespace(
        version=types.SimpleNamespace(cuda=cuda, hip=None), cuda=types.SimpleNamespace(memory=memory)
    )


def _agent(make_agent, history=False):
    provider = ReplayProvider([{0: memory_stats_dict(GiB, 2 * GiB)}], history=history)
    return make_agent(provider)


def _recorder(agent, torch):
    return SiteRecorder(agent.measurer, agent.steps, agent.emit, agent.error, torch)


def _events(agent, kind=EventKind.SITES):
    agent.serving.drain()
    items = [json.loads(b) for b in agent.ring.all_items()]
    return [i["data"] for i in items if i.get("event") == kind]


def test_recorder_turns_history_on_for_n_steps_then_off_and_sends_the_sites(
    make_agent, tmp_path, monkeypatch
):
    monkeypatch.setenv("VRAMSCOPE_SNAPSHOT_DIR", str(tmp_path))
    agent = _agent(make_agent)
    torch = fake_torch(_traced())
    rec = agent.sites
    rec.torch_module = torch
    for d in (0.10, 0.10, 0.11, 0.10):  # steps before: the baseline
        agent.steps.count += 1
        agent.steps.last_duration = d
        rec.on_turn(0.0)
    reply = json.loads(agent.handle_request({"op": Op.RECORD_SITES, "steps": 2}))
    assert reply["ok"] and reply["state"] == "recording"
    assert torch.cuda.memory.calls == [("all", {"max_entries": 100_000, "stacks": "python"})]
    agent.steps.count += 1
    agent.steps.last_duration = 0.12
    rec.on_turn(10.0)
    assert rec.state == "recording" and 0.15 < rec.overhead()["overhead"] < 0.25
    agent.steps.count += 1
    rec.on_turn(10.5)
    assert rec.state == "done"
    assert torch.cuda.memory.calls[-1] == (None, {})  # history off again
    done = _events(agent)[-1]
    assert done["state"] == "done" and done["done_steps"] == 2
    assert done["devices"]["cuda:0"]["sites"][0]["site"] == "/home/a/proj/train.py:88 in forward"
    with open(done["snapshot_path"], "rb") as f:
        assert pickle.load(f) == _traced()  # memory_viz reads it
    assert done["snapshot_path"].startswith(str(tmp_path / "sites-"))


def test_older_torch_signature_is_used_where_stacks_is_unknown(make_agent):
    agent = _agent(make_agent)
    torch = fake_torch(_traced(), old=True)
    rec = _recorder(agent, torch)
    assert rec.request(1)["ok"]
    assert torch.cuda.memory.calls == [(True, {"trace_alloc_max_entries": 100_000})]


def test_cpu_only_torch_says_why(make_agent):
    import torch

    agent = _agent(make_agent)
    reply = json.loads(agent.handle_request({"op": Op.RECORD_SITES, "steps": 3}))
    assert not reply["ok"] and "CPU-only build" in reply["error"]
    assert torch.cuda.is_initialized() is False


def test_a_torch_without_the_history_api_says_why(make_agent):
    agent = _agent(make_agent)
    bare = types.SimpleNamespace(
        version=types.SimpleNamespace(cuda="11.7", hip=None),
        cuda=types.SimpleNamespace(memory=types.SimpleNamespace()),
    )
    reply = _recorder(agent, bare).request(3)
    assert not reply["ok"] and "_record_memory_history" in reply["error"]


def test_history_the_user_turned_on_is_left_alone(make_agent):
    agent = _agent(make_agent, history=True)
    torch = fake_torch(_traced())
    reply = _recorder(agent, torch).request(3)
    assert not reply["ok"] and "already being recorded" in reply["error"]
    assert torch.cuda.memory.calls == []


def test_bad_requests_get_one_line_and_change_nothing(make_agent):
    agent = _agent(make_agent)
    torch = fake_torch(_traced())
    rec = _recorder(agent, torch)
    for steps in (0, -1, True, "3", 10**9, None):
        assert not rec.request(steps)["ok"]
    assert not rec.request(3, max_entries=5)["ok"]
    assert torch.cuda.memory.calls == [] and rec.state == "idle"


def test_env_var_starts_a_headless_recording_once_a_device_is_in_use(make_agent, monkeypatch):
    monkeypatch.setenv(ENV_STEPS, "2")
    agent = _agent(make_agent)
    torch = fake_torch(_traced())
    rec = _recorder(agent, torch)
    rec.on_turn(0.0)
    assert rec.state == "recording" and rec.steps == 2


def test_an_error_while_recording_turns_history_off_and_says_why(make_agent):
    agent = _agent(make_agent)
    torch = fake_torch(_traced())
    rec = _recorder(agent, torch)
    rec.request(1)

    def broken():
        raise RuntimeError("snapshot failed")

    torch.cuda.memory._snapshot = broken
    agent.steps.count += 1
    rec.on_turn(5.0)
    assert rec.state == "failed" and "snapshot failed" in rec.why
    assert torch.cuda.memory.calls[-1] == (None, {})
    assert _events(agent)[-1] == {"state": "failed", "why": rec.why, "time": _events(agent)[-1]["time"]}


def test_the_live_tensor_scan_warns_nothing_and_finds_no_cuda_tensor_on_the_cpu():
    import warnings

    import torch

    keep = torch.ones(10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sites.cuda_tensors(0) == []
    del keep

"""Fragmentation, leak, eval-with-autograd, checkpointing, near-OOM and OOM on
replayed agent data, with the negative cases."""

from __future__ import annotations

import pytest
import json

from vramscope.core.detectors import Diagnostics, DiagnosticSettings, alerts_to_json

from .scenarios import GiB, MiB, AgentEvent, T0, agent, buckets, device, frame, gpu, proc, step

PID = 500


def train_gpu(used=14 * GiB, total=24 * GiB):
    return gpu([proc(PID, used, sm=90, has_agent=True)], total=total, util=90)


def of(alerts, kind):
    return [a for a in alerts if a.kind == kind]


# -- fragmentation ------------------------------------------------------------------------


def feed_devices(engine, devs, settings=None, step_s=5):
    alerts = []
    for i, dev in enumerate(devs):
        alerts = engine.feed(frame(i * step_s, [train_gpu()], [agent(PID, [dev], settings=settings)]))
    return alerts


def test_fragmentation_flagged_with_expandable_segments_fix():
    devs = [device(allocated=8 * GiB, reserved=13 * GiB, inactive_split=3 * GiB)] * 4
    [alert] = of(feed_devices(Diagnostics(), devs), "fragmentation")
    assert alert.pid == PID and alert.gpu == 0 and alert.device == "cuda:0"
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in alert.fix
    assert "empty_cache() is not the fix" in alert.fix
    assert any("gap 5.0 GiB (38% of reserved)" in e for e in alert.evidence)
    assert any("inactive_split" in e and "3.0 GiB" in e for e in alert.evidence)


def test_fragmentation_message_gives_the_agent_panels_figure():
    """The slivers the message names are the inactive split the agent panel shows."""
    from vramscope.ui.agents.agent_device import device_title

    dev = device(allocated=8 * GiB, reserved=13 * GiB, inactive_split=3 * GiB)
    [alert] = of(feed_devices(Diagnostics(), [dev] * 4), "fragmentation")
    assert "inactive split 3.0 GiB" in device_title(dev)
    assert alert.message.endswith(
        "3.0 GiB reserved but free in unusable slivers "
        "(inactive split; 5.0 GiB reserved but not allocated in all)"
    )


def test_fragmentation_when_expandable_segments_already_on_says_so():
    devs = [device(allocated=8 * GiB, reserved=13 * GiB, inactive_split=3 * GiB)] * 4
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:512"}
    [alert] = of(feed_devices(Diagnostics(), devs, settings), "fragmentation")
    assert "already on" in alert.fix
    assert "Start the process with" not in alert.fix


def test_large_stable_cache_is_not_fragmentation():
    # 10 GiB cached but whole blocks (releasable), no retries: a healthy cache
    devs = [device(allocated=8 * GiB, reserved=18 * GiB, inactive_split=64 * MiB, retries=0)] * 60
    assert of(feed_devices(Diagnostics(), devs), "fragmentation") == []


def test_one_snapshot_of_a_gap_is_not_enough():
    devs = [device(8 * GiB, 9 * GiB)] * 3 + [device(8 * GiB, 13 * GiB, 3 * GiB)]
    assert of(feed_devices(Diagnostics(), devs), "fragmentation") == []


def test_rising_alloc_retries_flag_fragmentation():
    devs = [device(8 * GiB, 9 * GiB, 0, retries=r) for r in (0, 0, 0, 2, 5)]
    [alert] = of(feed_devices(Diagnostics(), devs), "fragmentation")
    assert any("num_alloc_retries 0 -> 5" in e for e in alert.evidence)
    flat = [device(8 * GiB, 9 * GiB, 0, retries=3)] * 10
    assert of(feed_devices(Diagnostics(), flat), "fragmentation") == []


# -- leak ---------------------------------------------------------------------------------


def feed_steps(engine, afters, per_frame=5, used=14 * GiB):
    alerts = []
    k = 0
    t = 0.0
    while k < len(afters):
        events = []
        for _ in range(per_frame):
            if k < len(afters):
                events.append(step(k + 1, afters[k], t, duration=1.0))
                k += 1
                t += 1.0
        dev = device(afters[k - 1], afters[k - 1] + GiB)
        alerts = engine.feed(frame(t, [train_gpu(used)], [agent(PID, [dev], events, t=t)]))
    return alerts


def noise(i):
    return (i * 7919 % 13) * 100 * 1024  # deterministic, up to ~1.2 MiB


def test_leak_flagged_with_rate_and_projection():
    base = 10 * GiB
    afters = [base + i * 20 * MiB + noise(i) for i in range(40)]
    [alert] = of(feed_steps(Diagnostics(), afters), "leak")
    rate = alert.data["slope_bytes_per_step"] / MiB
    assert 19 < rate < 21
    # headroom: 24 GiB - 14.3 GiB used, plus the 1 GiB own cache
    assert alert.data["steps_to_oom"] is not None and 400 < alert.data["steps_to_oom"] < 600
    assert "MiB/step" in alert.message
    assert "losses.append(loss)" in alert.fix and ".item()" in alert.fix
    assert any("Theil-Sen" in e for e in alert.evidence)


def test_one_spike_is_not_a_leak():
    base = 10 * GiB
    afters = [base + noise(i) for i in range(40)]
    afters[30] += 3 * GiB  # one long batch
    assert of(feed_steps(Diagnostics(), afters), "leak") == []


def test_too_few_steps_is_not_a_leak_yet():
    afters = [10 * GiB + i * 50 * MiB for i in range(10)]
    assert of(feed_steps(Diagnostics(), afters), "leak") == []  # K = 20


def test_leak_near_capacity_is_critical():
    afters = [10 * GiB + i * 200 * MiB for i in range(35)]
    [alert] = of(feed_steps(Diagnostics(), afters, used=22 * GiB), "leak")
    assert alert.severity == "critical"


# -- eval with autograd --------------------------------------------------------------------


def test_eval_autograd_with_growth_flagged():
    engine = Diagnostics()
    base = 10 * GiB
    engine.feed(
        frame(0, [train_gpu()], [agent(PID, [device(base, 16 * GiB)], [step(1, base, 0, peak=13 * GiB)])])
    )
    ev = AgentEvent("eval_autograd", T0 + 5, {"model": "GPT2LMHeadModel"})
    engine.feed(frame(5, [train_gpu()], [agent(PID, [device(base, 16 * GiB)], [ev], t=5)]))
    engine.feed(frame(10, [train_gpu()], [agent(PID, [device(15 * GiB, 17 * GiB)], t=10)]))
    # 30 s after the last optimizer step: evaluation, not training in eval() mode
    alerts = engine.feed(frame(30, [train_gpu()], [agent(PID, [device(15 * GiB, 17 * GiB)], t=30)]))
    [alert] = of(alerts, "eval_autograd")
    assert "torch.no_grad()" in alert.fix and "inference_mode" in alert.fix
    assert "model.eval() only switches Dropout and BatchNorm" in alert.fix
    assert alert.data["growth"] == 5 * GiB
    assert any("more than the training step peak" in e for e in alert.evidence)


def test_eval_autograd_without_growth_is_not_flagged():
    engine = Diagnostics()
    base = 10 * GiB
    ev = AgentEvent("eval_autograd", T0 + 5, {})
    alerts = []
    for t, events in ((0, ()), (5, (ev,)), (10, ()), (40, ())):
        alerts = engine.feed(frame(t, [train_gpu()], [agent(PID, [device(base, 12 * GiB)], events, t=t)]))
    assert of(alerts, "eval_autograd") == []


@pytest.mark.slow
def test_fine_tuning_in_eval_mode_is_not_eval_with_autograd():
    """Forward passes in eval() mode followed by optimizer steps are training (Dropout
    off on purpose): an hour of them, activations and all, raises nothing."""
    engine = Diagnostics()
    base = 10 * GiB
    alerts = []
    for t in range(0, 3600, 2):
        # the agent reports eval forwards at most every 30 s; a step every 2 s
        events = ([AgentEvent("eval_autograd", T0 + t + 0.2, {"model": "Net"})] if t % 30 == 0 else []) + [
            step(t // 2 + 1, base, t + 1.5, peak=base + 4 * GiB)
        ]
        alloc = base + (3 * GiB if t % 4 == 2 else 0)  # read mid-forward every other pass
        alerts = engine.feed(frame(t, [train_gpu()], [agent(PID, [device(alloc, 16 * GiB)], events, t=t)]))
        assert of(alerts, "eval_autograd") == [], t
    # and when the steps stop and eval forwards go on growing, it is evaluation
    for t in range(3600, 3700, 2):
        events = [AgentEvent("eval_autograd", T0 + t + 0.2, {"model": "Net"})] if t % 30 == 0 else []
        alloc = base + (t - 3600) * 64 * MiB
        alerts = engine.feed(frame(t, [train_gpu()], [agent(PID, [device(alloc, 16 * GiB)], events, t=t)]))
    assert of(alerts, "eval_autograd") != []


# -- checkpointing --------------------------------------------------------------------------


def test_checkpointing_with_use_cache_flagged_and_stays():
    engine = Diagnostics()
    ev = AgentEvent("checkpointing_use_cache", T0, {"model": "LlamaForCausalLM"})
    engine.feed(frame(0, [train_gpu()], [agent(PID, [device(GiB, 2 * GiB)], [ev])]))
    [alert] = of(
        engine.feed(frame(60, [train_gpu()], [agent(PID, [device(GiB, 2 * GiB)])])), "checkpointing_use_cache"
    )
    assert "model.config.use_cache = False" in alert.fix
    assert "LlamaForCausalLM" in alert.message


# -- near-OOM and OOM -------------------------------------------------------------------------


def test_low_free_memory_is_near_oom():
    g = gpu([proc(1, 23 * GiB + 300 * MiB, sm=90)], total=24 * GiB, util=90)
    [alert] = of(Diagnostics().feed(frame(0, [g])), "near_oom")
    assert "free" in alert.message
    assert "Get the breakdown first" in alert.fix  # no agent: the generic decision order


def test_trend_reaching_capacity_within_horizon_is_near_oom():
    s = DiagnosticSettings().with_overrides(near_oom_trend_minutes=2.0, near_oom_horizon_minutes=10.0)
    engine = Diagnostics(s)
    alerts = []
    for t in range(0, 130, 5):  # +40 MiB/s from 8 GiB: full in ~6.5 min
        used = 8 * GiB + t * 40 * MiB
        alerts = engine.feed(frame(t, [gpu([proc(1, used, sm=90)], used=used, util=90)]))
    [alert] = of(alerts, "near_oom")
    assert "full in about" in alert.message
    flat = Diagnostics(s)
    for t in range(0, 130, 5):
        alerts = flat.feed(frame(t, [gpu([proc(1, 8 * GiB, sm=90)], util=90)]))
    assert of(alerts, "near_oom") == []


def test_oom_event_is_critical_with_breakdown_and_decision_order():
    engine = Diagnostics()
    b = buckets(
        weights=14 * GiB, gradients=14 * GiB, optimizer_state=28 * GiB, other=10 * GiB, cached=2 * GiB
    )
    ev = AgentEvent(
        "oom",
        T0 + 3,
        {
            "device": "cuda:0",
            "requested": 2 * GiB,
            "total": 80 * GiB,
            "free": GiB,
            "buckets": b.as_dict(),
            "blocks": [{"size": 4 * GiB}, {"size": GiB}],
        },
    )
    engine.feed(frame(3, [train_gpu(total=80 * GiB)], [agent(PID, [device(68 * GiB, 70 * GiB)], [ev])]))
    alerts = engine.feed(frame(60, [train_gpu(total=80 * GiB)], []))  # the event is not repeated
    [alert] = of(alerts, "oom")
    assert alert.severity == "critical" and alert.since == T0 + 3
    assert "names only the last allocation" in alert.evidence[0]
    assert any("optimizer state 28.0 GiB" in e for e in alert.evidence)
    assert any("largest live blocks: 4.0 GiB" in e for e in alert.evidence)
    assert "The fixed cost dominates" in alert.fix and "8-bit optimizer" in alert.fix
    assert alerts[0].kind == "oom"  # most severe first


def test_oom_with_activations_dominant_points_to_checkpointing():
    engine = Diagnostics()
    b = buckets(2 * GiB, 2 * GiB, 4 * GiB, 14 * GiB, GiB)
    ev = AgentEvent("oom", T0, {"requested": GiB, "buckets": b.as_dict()})
    [alert] = of(
        engine.feed(frame(0, [train_gpu()], [agent(PID, [device(22 * GiB, 23 * GiB)], [ev])])), "oom"
    )
    assert "Activations dominate" in alert.fix and "checkpointing" in alert.fix


def test_alerts_json_is_serialisable_and_has_the_issue_fields():
    engine = Diagnostics()
    g = gpu([proc(1, 23 * GiB + 300 * MiB, sm=90)], total=24 * GiB, util=90)
    out = alerts_to_json(engine.feed(frame(0, [g])))
    text = json.dumps(out)
    row = json.loads(text)[0]
    for key in ("kind", "severity", "gpu", "pid", "since", "message", "evidence", "fix"):
        assert key in row
    assert isinstance(row["evidence"], list) and row["since"] == T0


def test_eval_loop_with_thousands_of_passes_is_counted_and_flagged():
    engine = Diagnostics()
    base = 10 * GiB
    alerts = []
    for t in range(0, 120):
        events = [AgentEvent("eval_autograd", T0 + t + i / 50, {"model": "Net"}) for i in range(50)]
        alloc = base + min(t, 60) * 64 * MiB
        alerts = engine.feed(frame(t, [train_gpu()], [agent(PID, [device(alloc, 16 * GiB)], events, t=t)]))
    [alert] = of(alerts, "eval_autograd")
    assert alert.data["events"] == 6000 and alert.data["growth"] >= 59 * 64 * MiB

"""Near-OOM and growth fixes that fit the process: its own cache first when that is
what fills the card, an 8-bit optimizer or LoRA only where optimizer state is large,
its batch-size option, a server told what servers do (never to run under the
training agent), and escalation to critical when the card is seconds from full."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.detectors import Diagnostics

from .cases import engine
from .scenarios import GiB, MiB, agent, buckets, device, frame, gpu, proc


def near_oom_with(b, used=23 * GiB + 400 * MiB):
    """One agent process that fills the card, with buckets ``b``."""
    g = gpu([proc(4242, used, sm=90, has_agent=True)], total=24 * GiB, util=90)
    dev = device(22 * GiB, 23 * GiB, buckets=b)
    [alert] = [a for a in Diagnostics().feed(frame(0, [g], [agent(4242, [dev])])) if a.kind == "near_oom"]
    return alert


def test_a_card_filled_by_its_own_cache_says_so_and_suggests_empty_cache_first():
    alert = near_oom_with(
        buckets(weights=6 * GiB, gradients=6 * GiB, optimizer_state=2 * GiB, other=1 * GiB, cached=8 * GiB)
    )
    assert alert.fix.startswith("8.0 GiB of it is its own cache")
    assert alert.fix.index("empty_cache") < alert.fix.index("expandable_segments")
    assert alert.fix.index("empty_cache") < alert.fix.find("8-bit optimizer") or "8-bit" not in alert.fix


def test_no_8bit_optimizer_or_lora_when_optimizer_state_is_small():
    # inference-style fine-tune of a few layers: weights fill the card, optimizer state tiny
    alert = near_oom_with(
        buckets(
            weights=18 * GiB, gradients=512 * MiB, optimizer_state=1 * GiB, other=2 * GiB, cached=256 * MiB
        )
    )
    assert "8-bit optimizer" not in alert.fix.replace("an 8-bit optimizer or LoRA saves little", "")
    assert "mostly weights" in alert.fix and "quantised" in alert.fix


def test_8bit_optimizer_and_lora_when_optimizer_state_is_large():
    alert = near_oom_with(
        buckets(weights=4 * GiB, gradients=4 * GiB, optimizer_state=8 * GiB, other=3 * GiB, cached=256 * MiB)
    )
    assert "8-bit optimizer first" in alert.fix and "LoRA" in alert.fix


def test_growing_server_of_no_known_engine_is_not_told_to_run_under_the_agent():
    eng = engine()
    cmd = ("python", "-m", "embed_server", "--port", "8100")
    alerts = []
    for t in range(0, 300, 5):
        used = 9 * GiB + 40 * MiB * t
        alerts = eng.feed(frame(t, [gpu([proc(38211, used, sm=8, cmd=cmd)], total=24 * GiB, util=8)]))
    [growth] = [a for a in alerts if a.kind == "growth"]
    assert "vramscope run" not in growth.fix and "long-running server" in growth.fix
    [near] = [a for a in alerts if a.kind == "near_oom"]
    assert "vramscope run" not in near.fix and "Cap what the server caches" in near.fix
    # the alerts list's Fix column (its first sentence) leads with the action, not `python -m ...`
    from vramscope.ui.alerts.alert_texts import first_sentence

    for alert in (growth, near):
        first = first_sentence(alert.fix)
        assert first.startswith("Cap what the server caches") and "`" not in first


def test_near_oom_seconds_from_full_is_critical():
    eng = engine()
    alerts = []
    for t in range(0, 200, 2):  # +100 MiB/s from 4 GiB: full in about 3.4 min at t=0
        used = 4 * GiB + 100 * MiB * t
        alerts = eng.feed(frame(t, [gpu([proc(4242, used, sm=90)], total=24 * GiB, util=90)]))
        near = [a for a in alerts if a.kind == "near_oom"]
        if near and near[0].data["eta_seconds"] is not None and near[0].data["eta_seconds"] < 60:
            break
    assert near[0].severity == "critical" and "full in about" in near[0].message


def test_batch_option_and_server_signs_read_from_command_lines():
    from vramscope.core.detectors.advice import batch_option, batch_text, serves_requests
    from vramscope.core.samples import ProcessInfo

    assert batch_option(("python", "train.py", "--batch_size=16")) == ("--batch_size", "16")
    assert batch_option(("torchrun", "ft.py", "--per_device_train_batch_size", "4")) == (
        "--per_device_train_batch_size",
        "4",
    )
    assert batch_option(("python", "train.py")) is None
    assert "--batch-size 1 already" in batch_text(("python", "t.py", "--batch-size", "1"))
    info = lambda *cmd: ProcessInfo(pid=1, cmdline=cmd)  # noqa: E731
    assert serves_requests(info("python", "-m", "embed_server"))
    assert serves_requests(info("uvicorn", "app:api", "--port", "9000"))
    assert serves_requests(info("python", "app.py", "--host=0.0.0.0"))
    assert not serves_requests(info("python", "train.py", "--epochs", "3"))
    assert not serves_requests(info("python", "-m", "torch.distributed.run", "train.py"))


@given(st.lists(st.text(max_size=24), max_size=10))
def test_any_command_line_is_read_for_advice_without_error(argv):
    from vramscope.core.detectors.advice import batch_option, batch_text, serves_requests
    from vramscope.core.samples import ProcessInfo

    found = batch_option(argv)
    assert found is None or (found[0].startswith("-") and isinstance(found[1], str))
    assert isinstance(batch_text(argv), str)
    assert serves_requests(ProcessInfo(pid=1, cmdline=tuple(argv) or None)) in (True, False)

"""Inference servers: recognised from their command line, their pool explained
at INFO (never a squatter, never near-OOM for its size), fixes that fit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.processes.servers import BY_KEY, listen_port, option_value, pool_text, recognise

from .cases import SERVER_CMDS, engine, idle_server, run_case, Case
from .scenarios import GiB, frame, gpu, proc


def test_each_engine_is_recognised_from_its_command_line():
    for key, cmd in SERVER_CMDS.items():
        assert recognise(cmd).key == key, cmd
    assert recognise(("python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m")).key == "vllm"
    assert recognise(("VLLM::EngineCore",)).key == "vllm"  # the engine's process title
    assert recognise(("sglang::scheduler",)).key == "sglang"
    assert recognise(("ollama", "serve")).key == "ollama"
    assert recognise(("trtllm-serve", "model")).key == "triton"
    assert recognise(("python", "train.py", "--serve")) is None
    assert recognise(("python", "server.py", "-m", "model.gguf")) is None
    assert recognise(("./server", "--port", "8000")) is None  # any web server is no llama.cpp
    assert recognise(("python", "-m", "ipykernel_launcher", "-f", "k.json")) is None


def test_every_common_launch_is_recognised():
    from .cases import SERVER_LAUNCHES

    assert recognise(SERVER_LAUNCHES["vllm console script"]).key == "vllm"
    assert recognise(("/usr/bin/python3.11", "/usr/local/bin/vllm", "serve", "m")).key == "vllm"
    assert recognise(SERVER_LAUNCHES["llama-cpp-python"]).key == "llama.cpp"
    assert recognise(SERVER_LAUNCHES["llama.cpp old server binary"]).key == "llama.cpp"
    assert recognise(("/opt/llama.cpp/server", "--port", "8080")).key == "llama.cpp"
    assert recognise(("/opt/venv/bin/python3", "/opt/venv/bin/vllm", "bench", "m")) is None


def test_idle_console_script_vllm_is_never_offered_for_ending():
    from .cases import SERVER_LAUNCHES

    eng = engine()
    seen = []
    for fr in idle_server(SERVER_LAUNCHES["vllm console script"], 0.9)():
        seen += eng.feed(fr)
    assert seen and {a.kind for a in seen} == {"inference_server"}
    assert all("End process" not in a.fix for a in seen)


def test_pool_option_as_set_or_its_default():
    assert pool_text(BY_KEY["vllm"], SERVER_CMDS["vllm"]) == "--gpu-memory-utilization 0.9"
    assert pool_text(BY_KEY["vllm"], ("vllm", "serve", "m")) == "--gpu-memory-utilization 0.9 (the default)"
    assert pool_text(BY_KEY["sglang"], SERVER_CMDS["sglang"]) == "--mem-fraction-static 0.88"
    assert (
        pool_text(BY_KEY["tgi"], ("text-generation-launcher", "--cuda-memory-fraction=0.5"))
        == "--cuda-memory-fraction 0.5"
    )
    assert listen_port(("vllm", "serve", "m", "--port", "8123"), BY_KEY["vllm"]) == 8123
    assert listen_port(("vllm", "serve", "m"), BY_KEY["vllm"]) == 8000


@given(st.lists(st.text(max_size=30), max_size=12), st.text(max_size=20))
def test_any_command_line_is_read_without_error(argv, opt):
    kind = recognise(argv)
    assert kind is None or kind.key in BY_KEY
    value = option_value(argv, "--" + opt.strip("-") if opt.strip("-") else "--x")
    assert value is None or isinstance(value, str)


@given(st.sampled_from(["0.5", "0.9", "0.95"]), st.booleans())
def test_option_value_reads_both_spellings(value, joined):
    argv = ["vllm", "serve", "m"] + (
        [f"--gpu-memory-utilization={value}"] if joined else ["--gpu-memory-utilization", value]
    )
    assert option_value(argv, "--gpu-memory-utilization") == value


def test_idle_vllm_is_explained_at_info_after_an_hour():
    eng = engine()
    alerts = []
    for fr in idle_server(SERVER_CMDS["vllm"], 0.9)():
        alerts = eng.feed(fr)
    [info] = alerts
    assert info.kind == "inference_server" and info.severity == "info"
    assert info.message.startswith("vLLM: vllm (9001) on GPU 0 idle for")
    assert "holds 21." in info.message
    assert any("KV-cache blocks PagedAttention preallocates" in e for e in info.evidence)
    assert any("sized by --gpu-memory-utilization 0.9" in e for e in info.evidence)
    assert "lower --gpu-memory-utilization" in info.fix and "End process" not in info.fix


def test_training_next_to_a_full_server_gets_the_server_fix_when_the_server_grows_nothing():
    # vLLM at 0.95 leaves 1.2 GiB; a small script beside it is not near-OOM by itself
    cmd = SERVER_CMDS["vllm"][:-1] + ("0.95",)
    out = run_case(Case("x", "near_oom", False, idle_server(cmd, 0.95)))
    assert out.false_alerts == []


def test_near_oom_fix_for_a_growing_process_under_the_agent_does_not_say_vramscope_run():
    eng = engine()
    alerts = []
    from .scenarios import agent, device

    for t in range(0, 200):
        used = 8 * GiB + 40 * (1 << 20) * t
        alerts = eng.feed(
            frame(
                t,
                [gpu([proc(4242, used, sm=90, has_agent=True)], util=90)],
                [agent(4242, [device(6 * GiB, 7 * GiB)], t=t)],
            )
        )
    [near] = [a for a in alerts if a.kind == "near_oom"]
    assert "growing: train.py (4242)" in near.message
    assert "vramscope run" not in near.fix
    [growth] = [a for a in alerts if a.kind == "growth"]
    assert "vramscope run" not in growth.fix and "runs under the agent" in growth.fix


def test_another_users_idle_process_gets_ask_the_owner():
    eng = engine()
    alerts = []
    for t in range(0, 400, 10):
        alerts = eng.feed(frame(t, [gpu([proc(777, 4 * GiB, sm=0, user="zz-other-user")], util=0)]))
    [sq] = [a for a in alerts if a.kind == "squatter"]
    assert "zz-other-user" in sq.fix and "only its owner" in sq.fix

"""The agent never prints anything in the user's training process: a real
loop with every warning turned into an error, and (where transformers is
installed) a checkpointed Hugging Face model whose log output must be the same
with and without the agent."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

LOOP = textwrap.dedent("""
    import warnings
    warnings.simplefilter("error")
    import torch
    from vramscope import agent
    from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_phases
    frames, phases = scenario_phases(steps=3)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters())
    a = agent.start(model=model, optimizer=opt, interval=0.05,
                    provider=ReplayProvider(frames, loop=True), final_dump=False)
    a.wait_started(5)
    for i in range(30):
        opt.zero_grad(set_to_none=i % 2 == 0)
        model(torch.randn(8, 16)).square().mean().backward()
        opt.step()
        a.sample_once()
    model.eval()
    model(torch.randn(8, 16))  # eval with autograd: an event, not a warning
    a.sample_once()
    agent.stop()
    print("errors", a.errors, a.steps.errors, a.phases.errors, "steps", a.steps.count)
""")


@pytest.mark.slow
def test_a_training_loop_with_the_agent_raises_no_warning(runtime_dir):
    r = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-W", "error", "-c", LOOP],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "errors 0 0 0 steps 30"
    assert r.stderr == ""


HF = textwrap.dedent("""
    import json, logging, warnings
    import torch, transformers
    from vramscope.agent.core import Agent
    from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_ramp
    records = []
    class Keep(logging.Handler):
        def emit(self, record):
            records.append((record.name, record.getMessage()))
    keep = Keep()
    keep.setLevel(logging.WARNING)  # what Python prints when nobody configured logging
    logging.getLogger().addHandler(keep)
    logging.getLogger().setLevel(logging.DEBUG)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable()
    model.train()
    use_cache = bool(model.config.use_cache)
    def forward():
        del records[:]
        model(torch.randint(0, 64, (2, 8)), labels=torch.randint(0, 64, (2, 8))).loss.backward()
        return sorted(records)
    forward()  # the library's own once-only messages
    without = forward()
    agent = Agent(provider=ReplayProvider(scenario_ramp(), loop=True), discover=False, final_dump=False)
    agent.watch(model=model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning from the agent's hooks fails the forward
        with_agent = forward()
        agent.sample_once()
    events = [e[0] for e in agent.serving.events if e[0] != "loaded"]
    # what the agent adds: records of its own loggers, or records the run without it lacked
    # (other libraries' records vary with the environment: compared as sets of loggers)
    added = [r for r in with_agent if r[0].startswith("vramscope")
             or r[0] not in {w[0] for w in without}]
    print(json.dumps({"use_cache": use_cache, "added": added, "events": events,
                      "errors": agent.errors}))
""")


@pytest.mark.slow
def test_a_checkpointed_transformers_model_is_not_reported_and_the_agent_adds_no_output(runtime_dir):
    if importlib.util.find_spec("transformers") is None:  # imported in the child only
        pytest.skip("transformers is not installed")
    r = subprocess.run([sys.executable, "-c", HF], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    # the config says use_cache, but the library switches it off in checkpointed training:
    # no cache comes back, so nothing to report -- and nothing printed by the agent
    assert got == {"use_cache": True, "added": [], "events": [], "errors": 0}


CACHE_CHECK = textwrap.dedent("""
    import logging, torch, transformers
    from vramscope.agent.modules.model_hooks import _returned_cache
    records = []
    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())
    logging.getLogger().addHandler(Keep())
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        out = model(torch.randint(0, 64, (1, 4)), use_cache=True)
    del records[:]
    print(_returned_cache(out), records)
""")


@pytest.mark.slow
def test_looking_for_a_returned_cache_wakes_no_deprecation_message():
    """ModelOutput maps the old `past_key_values` name with a once-only message; the
    agent's check must not be what prints it in the user's process."""
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    r = subprocess.run([sys.executable, "-c", CACHE_CHECK], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "True []"

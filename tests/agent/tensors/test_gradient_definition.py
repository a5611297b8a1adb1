"""What "gradients" means (issue 47, item 3): memory held for a gradient until it is freed.

``zero_grad(set_to_none=True)`` drops each parameter's ``.grad``; the memory
goes back to the allocator when the gradient's storage dies -- at once, or
later where something still holds it (a view kept by the user, a tensor being
freed part way through ``zero_grad``). Until then it is a gradient's memory and
counted as such, by either thread's sample; from the moment it is freed it is
not. The oracle (tests/agent/oracle.py) keys gradients by storage the same way.
"""

from __future__ import annotations

import torch

from tests.agent.live_bytes import LiveBytes, LiveBytesProvider
from tests.agent.tensors.test_instant_buckets import mlp_bn


def _cpu(item):
    return {d["device"]: d for d in item["devices"]}["cpu"]["buckets"]


def test_a_gradient_held_past_zero_grad_counts_until_its_memory_is_freed(make_agent):
    live = LiveBytes()
    with live:
        model = mlp_bn(64)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        agent = make_agent(LiveBytesProvider(live), interval=60.0)  # samples only when taken here
        agent.watch(model=model, optimizer=opt)
        agent.start()
        assert agent.wait_started(5)
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(8, 64)).square().mean().backward()
            opt.step()
        held = model[0].weight.grad[:1]  # a view: the whole gradient's storage stays
        nbytes = held.untyped_storage().nbytes()
        opt.zero_grad(set_to_none=True)
        assert model[0].weight.grad is None
        on_training = agent.sample_once()  # this thread: reads .grad
        on_agent = agent.measurer.sample(read_grads=False, drain=True)  # the agent thread's way
        assert _cpu(on_training)["gradients"] == nbytes
        assert _cpu(on_agent)["gradients"] == nbytes
        del held  # freed: no longer a gradient's memory
        after = live.allocated
        on_training, on_agent = agent.sample_once(), agent.measurer.sample(read_grads=False, drain=True)
        assert _cpu(on_training)["gradients"] == 0 == _cpu(on_agent)["gradients"]
        assert live.allocated == after


def test_the_device_view_help_says_what_gradients_count(qtbot):
    from vramscope.ui.agents.agent_device import DeviceView

    view = DeviceView("cuda:0")
    qtbot.addWidget(view)
    help_text = view.title.toolTip()
    assert "gradients: memory held for a gradient until it is freed" in help_text
    assert "activations + temporaries:" in help_text

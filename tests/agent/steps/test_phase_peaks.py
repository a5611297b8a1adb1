"""Each phase's peak (forward, backward, optimizer step, evaluation) against the truth.

Under CUDA allocator semantics on CPU tensors (tests/agent/live_bytes.py) the
provider keeps the true highest "allocated" of every stretch between two of
the hooks' readings. A step's phase peak is the peak of the stretch that ends
at that phase's reading: where the agent calls it exact it equals the truth,
otherwise the truth lies between its figure and its upper bound -- and the
end of forward is not called the step's peak: in an AdamW loop the step's
highest phase is backward or the optimizer step.
"""

from __future__ import annotations

import pytest
import torch

from vramscope.agent.protocol import Phase
from vramscope.sources.demo.allocator_replay import memory_stats_dict

from tests.agent.live_bytes import LiveBytesProvider
from tests.agent.allocator.test_peak_windows import WindowedLive
from tests.agent.steps.test_phases import items, started, wait_first_sample


class HookTruth(LiveBytesProvider):
    """Every hook reading cuts a stretch: the true peak since the previous reading."""

    def __init__(self):
        super().__init__(WindowedLive())
        self.stretches: list[int] = []

    def allocated_peaks_now(self):
        self.stretches.append(self.live.cut())
        return super().allocated_peaks_now()

    def memory_stats(self, index: int) -> dict:  # (the full reads do not cut the hooks' stretches)
        allocated = self.live.allocated
        return memory_stats_dict(allocated, max(allocated, self.live.peak), peak=self.live.peak)


def mlp_wide():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 8),
    )


def watching(make_agent, provider, model, opt):
    """An agent over ``provider`` with the model and optimizer registered, every step's
    phases read, its first sample taken."""
    agent = started(make_agent, provider)
    agent.watch(model=model, optimizer=opt)
    agent.start()
    wait_first_sample(agent)
    return agent


@pytest.mark.slow
def test_phase_peaks_are_the_true_peaks_of_their_stretches_or_bounded(make_agent):
    provider = HookTruth()
    with provider.live:
        model = mlp_wide()
        opt = torch.optim.AdamW(model.parameters())
        agent = watching(make_agent, provider, model, opt)
        for i in range(12):
            opt.zero_grad()
            model(torch.randn(256, 64)).square().mean().backward()
            opt.step()
            if i == 6:
                provider.live.peak = provider.live.allocated  # the user resets the counter
        agent.stop()
    steps = items(agent, "step")
    assert len(steps) == 12
    # readings: after loading, then forward, backward, optimizer of every step
    truth = provider.stretches[1:]
    assert len(truth) == 3 * len(steps)
    exact = higher = 0
    for k, step in enumerate(steps):
        peaks = step["phase_peaks"]["cpu"]
        for j, phase in enumerate((Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)):
            peak, bound = peaks[phase]
            true = truth[3 * k + j]
            if bound is None:
                assert peak == true, (k, phase, peak, true)
                exact += 1
            else:
                assert peak <= true <= bound, (k, phase, peak, true, bound)
        step_peak = max(truth[3 * k : 3 * k + 3])
        higher += step_peak > step["phases"]["cpu"][Phase.FORWARD]
    assert exact >= 3  # the first step's phases (the counter rises) and after the reset
    assert higher == len(steps)  # the step's true peak is never the end of forward here
    first = steps[0]["phase_peaks"]["cpu"]
    assert first[Phase.OPTIMIZER][1] is None and first[Phase.OPTIMIZER][0] > first[Phase.FORWARD][0]


@pytest.mark.slow
def test_an_evaluation_under_no_grad_is_its_own_phase(make_agent):
    provider = HookTruth()
    with provider.live:
        model = mlp_wide()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        agent = watching(make_agent, provider, model, opt)
        for i in range(4):
            opt.zero_grad()
            model(torch.randn(8, 64)).square().mean().backward()
            opt.step()
            if i % 2 == 0:
                model.eval()
                with torch.no_grad():
                    held = model(torch.randn(16384, 64))  # 512 kB of output held at its end
                model.train()
                del held
        agent.stop()
    steps = items(agent, "step")
    evals = [s for s in steps if Phase.EVAL in (s["phases"] or {}).get("cpu", {})]
    assert [s["step"] for s in evals] == [2, 4]  # in the record of the step after it
    for s in evals:
        p = s["phases"]["cpu"]
        assert p[Phase.EVAL] > p[Phase.FORWARD] + 256 * 1024  # the held output, not a forward
        assert s["phase_order"][0] == Phase.EVAL
        assert s["phase_peaks"]["cpu"][Phase.EVAL][0] >= p[Phase.EVAL]
    assert all(Phase.EVAL not in s["phases"]["cpu"] for s in steps if s not in evals)

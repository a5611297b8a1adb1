"""A frame carries the peak of its whole interval: the agent samples every 0.5 s
and the monitor samples every 1 s, so the peak of a sample that was not the
newest one must still reach the window (over the stream), the session and the
alerts -- never only the newest sample's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vramscope.agent.protocol import ItemKind
from vramscope.core.samples import AgentDevice
from vramscope.sources.agents import agent_input
from vramscope.sources.agents.agent_reports import merged_peak
from vramscope.sources.agents.agent_state import AgentState, ingest
from vramscope.sources.agents.agent_client import AgentClient

GiB = 1 << 30


def _sample(t, allocated, peak, bound=None, device="cuda:0"):
    dev = {"device": device, "allocated": allocated, "reserved": 8 * GiB, "peak_allocated": peak}
    if bound is not None:
        dev["peak_allocated_bound"] = bound
    return {"kind": ItemKind.SAMPLE, "t": t, "devices": [dev]}


def _state():
    return AgentState(path=None, hello=agent_input.hello({"pid": 4242, "start_time": 100.0}))


def _report(client, state, items):
    ingest(state, items, client.store)
    (report,) = [r for r in client.reports() if r.pid == 4242]
    return {d.device: d for d in report.devices}


def test_the_spike_of_an_earlier_sample_in_the_interval_is_the_frames_peak():
    client, state = AgentClient(), _state()
    client._agents[("x", 4242)] = state
    devs = _report(client, state, [_sample(1.0, 2 * GiB, 7 * GiB), _sample(1.5, 2 * GiB, 2 * GiB)])
    cuda = devs["cuda:0"]
    assert cuda.allocated == 2 * GiB  # the newest sample's level ...
    assert (cuda.peak_allocated, cuda.peak_allocated_bound) == (7 * GiB, None)  # ... the interval's peak
    devs = _report(client, state, [_sample(2.0, 2 * GiB, 3 * GiB)])  # the next frame: its own interval
    assert devs["cuda:0"].peak_allocated == 3 * GiB


def test_an_inexact_peak_in_the_interval_keeps_the_merged_peak_a_bounded_one():
    client, state = AgentClient(), _state()
    client._agents[("x", 4242)] = state
    devs = _report(client, state, [_sample(1.0, GiB, 3 * GiB, bound=6 * GiB), _sample(1.5, GiB, 4 * GiB)])
    assert (devs["cuda:0"].peak_allocated, devs["cuda:0"].peak_allocated_bound) == (4 * GiB, 6 * GiB)


peaks = st.lists(
    st.tuples(
        st.integers(0, 100),
        st.one_of(st.none(), st.integers(0, 100)),  # extra above the peak: the upper bound
    ),
    min_size=1,
    max_size=8,
)


@given(peaks)
def test_the_merged_peak_brackets_every_samples_truth(samples):
    merged = None
    for peak, extra in samples:
        merged = merged_peak(
            merged,
            AgentDevice(
                device="cuda:0",
                peak_allocated=peak,
                peak_allocated_bound=None if extra is None else peak + extra,
            ),
        )
    low, high = merged
    assert low == max(p for p, _ in samples)  # never below any sample's known peak
    uppers = [p if e is None else p + e for p, e in samples]
    if all(e is None for _, e in samples):
        assert high is None  # every one exact: the merged one is exact
    else:
        assert high == max(uppers) >= low  # the true peak of the interval lies in [low, high]

"""The allocator figures of an agent's device report are declared once
(core/agent_figures/device_fields.py): each is one the agent sends and a session
keeps, and `vramscope status --json` and the Prometheus endpoint carry every one
under the names dashboards and scripts already use."""

from __future__ import annotations

import dataclasses

from vramscope.agent.protocol import ALLOCATOR_FIGURES
from vramscope.core.agent_figures.device_fields import DEVICE_FIELDS
from vramscope.core.export.metrics import StoreCollector
from vramscope.core.samples import AgentDevice, AgentReport, Frame
from vramscope.core.session.schema import AGENT_COLUMNS
from vramscope.core.status.status_report import agent_device_to_dict
from vramscope.core.store.store import Store
from vramscope.core.units import GiB, MiB

DEV = AgentDevice(
    device="cuda:0",
    allocated=3 * GiB,
    reserved=5 * GiB,
    inactive_split=768 * MiB,
    peak_allocated=4 * GiB,
    num_alloc_retries=7,
    num_ooms=2,
)


def test_each_declared_figure_is_sent_by_the_agent_and_kept_by_a_session():
    fields = {f.name for f in dataclasses.fields(AgentDevice)}
    for f in DEVICE_FIELDS:
        assert f.key in fields and f.key in ALLOCATOR_FIGURES and f.key in AGENT_COLUMNS


def test_status_json_and_prometheus_carry_every_declared_figure():
    store = Store()
    store.append(Frame(time=1.0, agents=(AgentReport(pid=4242, start_time=1.0, devices=(DEV,)),)))
    shown = agent_device_to_dict(DEV)
    families = {fam.name: fam for fam in StoreCollector(store).collect()}
    for f in DEVICE_FIELDS:
        assert shown[f.key] == f.value(DEV) is not None
        (sample,) = families[f.metric].samples
        assert sample.value == f.value(DEV) and sample.labels["pid"] == "4242"
    assert [f.metric for f in DEVICE_FIELDS] == [
        "vramscope_agent_allocated_bytes",
        "vramscope_agent_reserved_bytes",
        "vramscope_agent_inactive_split_bytes",
        "vramscope_agent_peak_allocated_bytes",
        "vramscope_agent_alloc_retries",
        "vramscope_agent_ooms",
    ]


def test_a_figure_not_reported_is_left_out_never_zero():
    store = Store()
    gone = dataclasses.replace(DEV, num_ooms=None)
    store.append(Frame(time=1.0, agents=(AgentReport(pid=4242, start_time=1.0, devices=(gone,)),)))
    families = {fam.name: fam for fam in StoreCollector(store).collect()}
    assert families["vramscope_agent_ooms"].samples == []
    assert agent_device_to_dict(gone)["num_ooms"] is None

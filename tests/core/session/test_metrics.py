"""Prometheus endpoint: the current frame, loopback by default, n/a left out."""

from __future__ import annotations

import urllib.request

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from vramscope.core.export.metrics import (
    PROCESS_MEMORY_METRIC,
    MetricsServer,
    is_loopback,
    parse_address,
    serve_metrics,
)
from vramscope.core.processes.owner_labels import OWNER_LABELS, owner_values
from vramscope.core.store.store import Store

from tests.core.session.helpers import frame


def _process_key(gpu: str, pid: str, process: str, mig: str, info=None) -> tuple:
    """A per-process series' key: its own labels and who it belongs to (core/processes/owner_labels.py)."""
    owners = zip(OWNER_LABELS, owner_values(info))
    return (
        PROCESS_MEMORY_METRIC,
        tuple(sorted((("gpu", gpu), ("mig", mig), ("pid", pid), ("process", process), *owners))),
    )


def _scrape(url: str) -> dict:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_serves_the_latest_frame_on_loopback():
    store = Store()
    store.append(frame(3))
    server = serve_metrics(store, "127.0.0.1:0")
    try:
        assert server.host == "127.0.0.1" and not server.exposed
        got = _scrape(server.url)
        f = frame(3)
        key = (
            "vramscope_gpu_memory_used_bytes",
            (("gpu", "0"), ("memory", ""), ("name", "Test GPU A"), ("uuid", "GPU-aaaa"), ("vendor", "")),
        )
        assert got[key] == f.gpus[0].used
        assert (
            got[_process_key("0", "4242", "python3", "", f.gpus[0].processes[0].info)]
            == f.gpus[0].processes[0].used
        )
        # Xorg's memory is not available: no sample at all, never a 0
        assert not [
            k for k in got if k[0] == "vramscope_process_memory_used_bytes" and ("pid", "900") in k[1]
        ]
        assert not [k for k in got if k[0] == "vramscope_gpu_temperature_celsius" and ("gpu", "1") in k[1]]
        assert (
            got[
                (
                    "vramscope_agent_bucket_bytes",
                    (("bucket", "optimizer_state"), ("device", "cuda:0"), ("pid", "4242"), ("rank", "")),
                )
            ]
            == 1 << 30
        )
        store.append(frame(4))  # the next scrape sees the next pass
        assert _scrape(server.url)[key] == frame(4).gpus[0].used
    finally:
        server.close()


def test_default_is_loopback_and_elsewhere_is_warned():
    assert parse_address("9464") == ("127.0.0.1", 9464)
    assert parse_address(":9464") == ("127.0.0.1", 9464)
    assert parse_address("[::1]:9464") == ("::1", 9464)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    warnings = []
    server = serve_metrics(Store(), "0.0.0.0:0", warn=warnings.append)
    try:
        assert server.exposed and "other machines" in warnings[0]
    finally:
        server.close()
    assert MetricsServer.__init__.__defaults__[0] == "127.0.0.1"


@given(st.integers(0, 65535))
def test_port_round_trip(port):
    assert parse_address(f"127.0.0.1:{port}") == ("127.0.0.1", port)
    assert parse_address(str(port)) == ("127.0.0.1", port)


@pytest.mark.parametrize("bad", ["localhost:http", "127.0.0.1:70000", "[::1]9464", "x:"])
def test_bad_addresses_are_refused_with_a_message(bad):
    with pytest.raises(ValueError, match="port|PORT|range"):
        parse_address(bad)


def test_mig_slices_and_their_processes_are_labelled_with_the_slice():
    import dataclasses

    from vramscope.core.samples import GpuProcess, GpuSample, MigSlice

    uuid = "MIG-1f2e3d4c-0000-5555-aaaa-000000000001"
    proc = GpuProcess(pid=77, used=18 << 30, mig_uuid=uuid)
    gpu = GpuSample(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-h100",
        total=80 << 30,
        used=20 << 30,
        mig_mode=True,
        processes=(proc,),
        slices=(
            MigSlice(
                index=6,
                uuid=uuid,
                profile="3g.40gb",
                gpu_instance_id=1,
                compute_instance_id=0,
                total=40 << 30,
                used=20 << 30,
                free=20 << 30,
                processes=(proc,),
            ),
        ),
    )
    store = Store()
    store.append(dataclasses.replace(frame(1), gpus=(gpu,), agents=()))
    server = serve_metrics(store, "127.0.0.1:0")
    try:
        got = _scrape(server.url)
    finally:
        server.close()
    slice_labels = (
        ("compute_instance", "0"),
        ("gpu", "0"),
        ("gpu_instance", "1"),
        ("mig", uuid),
        ("profile", "3g.40gb"),
    )
    assert got[("vramscope_mig_memory_total_bytes", slice_labels)] == 40 << 30
    assert got[("vramscope_mig_memory_used_bytes", slice_labels)] == 20 << 30
    assert got[_process_key("0", "77", "", uuid)] == 18 << 30

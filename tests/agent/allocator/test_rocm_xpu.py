"""The agent on a ROCm build (torch.version.hip set, torch.cuda is HIP) and on
torch.xpu: it says which runtime it reads, its figures are the allocator's,
and what XPU does not give is named and None, never 0."""

from __future__ import annotations

from types import SimpleNamespace

from vramscope.sources.demo.allocator_replay import memory_stats_dict
from vramscope.agent.allocator.stats import StatsReader, default_provider
from vramscope.agent.allocator.stats_cuda import TorchCudaProvider, runtime_of
from vramscope.agent.allocator.stats_xpu import TorchXpuProvider

GiB = 1 << 30


class _Device:
    """What one GPU answers, as the real module does on that build."""

    def __init__(self, stats: dict, props):
        self.stats, self.props = stats, props

    def is_available(self):
        return True

    def is_initialized(self):
        return True

    def device_count(self):
        return 1

    def memory_stats(self, index):
        return dict(self.stats)

    def memory_stats_as_nested_dict(self, index):
        return {"allocated_bytes": {"all": {"current": self.stats["allocated_bytes.all.current"]}}}

    def get_device_properties(self, index):
        return self.props


def rocm_torch(stats):
    # a ROCm 6.2 wheel: version.hip set, version.cuda None; the MI300X's properties
    props = SimpleNamespace(
        name="AMD Instinct MI300X", total_memory=192 * GiB, gcnArchName="gfx942:sramecc+:xnack-", uuid=None
    )
    return SimpleNamespace(
        version=SimpleNamespace(hip="6.2.41133-dd7f95766", cuda=None), cuda=_Device(stats, props), xpu=None
    )


def xpu_torch(stats):
    props = SimpleNamespace(
        name="Intel(R) Arc(TM) B580 Graphics", total_memory=12 * GiB, driver_version="1.6.31294+20"
    )
    return SimpleNamespace(
        version=SimpleNamespace(hip=None, cuda=None, xpu="20250101"),
        cuda=SimpleNamespace(is_available=lambda: False),
        xpu=_Device(stats, props),
    )


def test_runtime_strings():
    assert runtime_of(rocm_torch({})) == "ROCm 6.2.41133-dd7f95766"
    assert runtime_of(SimpleNamespace(version=SimpleNamespace(hip=None, cuda="12.4"))) == "CUDA 12.4"


def test_rocm_build_reads_torch_cuda_and_says_rocm():
    stats = memory_stats_dict(3 * GiB, 4 * GiB, num_device_alloc=7)
    torch = rocm_torch(stats)
    provider = default_provider(torch)
    assert isinstance(provider, TorchCudaProvider)
    reader = StatsReader(provider, min_gap=0.0)
    fields = reader.read("sample")["cuda:0"]  # ROCm devices are "cuda" to PyTorch
    assert (fields["allocated"], fields["reserved"], fields["alloc_count"]) == (3 * GiB, 4 * GiB, 7)
    assert fields["runtime"] == "ROCm 6.2.41133-dd7f95766"
    assert fields["total"] == 192 * GiB and "missing" not in fields


def test_xpu_reads_what_it_has_and_names_what_it_lacks():
    full = memory_stats_dict(GiB, 2 * GiB)
    # an XPU build without the retry / device-call counters and the split figure
    lacking = ("num_alloc_retries", "num_device_alloc", "num_device_free", "inactive_split_bytes.all.current")
    stats = {k: v for k, v in full.items() if k not in lacking}
    torch = xpu_torch(stats)
    assert isinstance(default_provider(torch), TorchXpuProvider)
    reader = StatsReader(TorchXpuProvider(torch), min_gap=0.0)
    fields = reader.read("sample")["xpu:0"]
    assert (fields["allocated"], fields["reserved"]) == (GiB, 2 * GiB)
    assert fields["num_alloc_retries"] is None and fields["inactive_split"] is None
    assert fields["alloc_count"] is None
    assert set(fields["missing"]) == {"num_alloc_retries", "alloc_count", "free_count", "inactive_split"}
    assert fields["runtime"] == "XPU (driver 1.6.31294+20)"


def test_the_monitor_shows_the_runtime_and_what_is_missing():
    from vramscope.core.samples import AgentDevice
    from vramscope.core.status.status_report import agent_device_to_dict
    from vramscope.ui.agents.agent_device import device_title

    dev = AgentDevice(
        device="xpu:0", allocated=GiB, reserved=2 * GiB, runtime="XPU", missing=("num_alloc_retries",)
    )
    assert agent_device_to_dict(dev)["missing"] == ["num_alloc_retries"]
    title = device_title(dev)
    assert "(XPU)" in title and "n/a on this backend: num_alloc_retries" in title
    rocm = AgentDevice(device="cuda:0", allocated=GiB, reserved=GiB, runtime="ROCm 6.2.41133")
    assert "(ROCm 6.2.41133)" in device_title(rocm)


def test_outside_pytorch_on_an_amd_card_from_its_fdinfo_figure():
    """A ROCm agent's device is "cuda:0" with a uuid NVML does not know: on the one
    card its process holds (an AMD card read through DRM), outside PyTorch is that
    card's per-process figure minus PyTorch's reserved."""
    from vramscope.core.samples import AgentBuckets, AgentDevice, AgentReport, GpuProcess, GpuSample
    from vramscope.sources.agents.agent_reports import with_outside as _with_outside

    proc = GpuProcess(pid=4242, used=5 * GiB)
    nvidia = GpuSample(
        index=0, uuid="GPU-8e3a4c1b", vendor="NVIDIA", processes=(GpuProcess(pid=77, used=GiB),)
    )
    amd = GpuSample(index=1, vendor="AMD", pci_bus_id="0000:03:00.0", processes=(proc,))
    report = AgentReport(
        pid=4242,
        start_time=1.0,
        devices=(
            AgentDevice(
                device="cuda:0",
                gpu_uuid="58ff7f3c-0000-0000-0000-000000000000",
                reserved=4 * GiB,
                runtime="ROCm 6.2.41133-dd7f95766",
                buckets=AgentBuckets(weights=2 * GiB),
            ),
        ),
    )
    got = _with_outside(report, amd, proc, (nvidia, amd))
    assert got.devices[0].buckets.outside_pytorch == GiB

"""Runtime-suspended GPUs are left asleep; /dev/nvidia* holders NVML does not list are shown.

Through the real pynvml against the fake libnvidia-ml.so.1; sysfs and /proc
are fixture trees (their roots are injectable)."""

from __future__ import annotations

import os
import pathlib
import time

from fakenvml import GiB, FakeGpu, FakeProcess, FakeState
from vramscope.sources.nvml.device_holders import DeviceHolderScanner, scan
from vramscope.sources.nvml.nvml_source import NvmlSource
from vramscope.sources.machine.processes import ProcessCache
from vramscope.sources.nvml.sysfs import is_nvidia, nvidia_bus_ids, runtime_suspended, sysfs_bus_id


def pci_device(sysfs: pathlib.Path, bus: str, status: str, vendor="0x10de", cls="0x030200"):
    d = sysfs / "bus" / "pci" / "devices" / bus
    (d / "power").mkdir(parents=True, exist_ok=True)
    (d / "vendor").write_text(vendor + "\n")
    (d / "class").write_text(cls + "\n")
    (d / "power" / "runtime_status").write_text(status + "\n")


def two_gpus() -> FakeState:
    return FakeState(gpus=[FakeGpu(used=GiB), FakeGpu(used=2 * GiB)])


def calls(fake_nvml) -> int:
    return fake_nvml.lib.fakeNvmlCalls()


def test_a_suspended_gpu_is_shown_asleep_and_not_queried(fake_nvml, tmp_path):
    sysfs = tmp_path / "sys"
    pci_device(sysfs, "0000:01:00.0", "active")
    pci_device(sysfs, "0000:02:00.0", "active")
    fake_nvml.write(two_gpus())
    src = NvmlSource(sysfs_root=str(sysfs), holders=DeviceHolderScanner(proc_root=str(tmp_path)))
    try:
        first = src.sample(time.time())
        assert [g.asleep for g in first.gpus] == [False, False]
        before = calls(fake_nvml)
        src.sample(time.time())
        awake_cost = calls(fake_nvml) - before

        pci_device(sysfs, "0000:02:00.0", "suspended")
        before = calls(fake_nvml)
        frame = src.sample(time.time())
        asleep_cost = calls(fake_nvml) - before
        gpu0, gpu1 = frame.gpus
        assert not gpu0.asleep and gpu0.used == GiB
        assert gpu1.asleep and gpu1.used is None and gpu1.pci_bus_id == "00000000:02:00.0"
        assert gpu1.name == first.gpus[1].name  # what was known stays shown
        # every per-GPU call of GPU 1 is gone: one GPU's share of a pass
        per_gpu = (awake_cost - 1) // 2  # 1: the device count
        assert asleep_cost == awake_cost - per_gpu

        pci_device(sysfs, "0000:02:00.0", "active")  # it woke (someone started CUDA)
        assert src.sample(time.time()).gpus[1].used == 2 * GiB
    finally:
        src.close()


def test_asleep_from_the_start_is_found_through_sysfs_bus_order(fake_nvml, tmp_path):
    sysfs = tmp_path / "sys"
    pci_device(sysfs, "0000:00:02.0", "active", vendor="0x8086", cls="0x030000")  # iGPU
    pci_device(sysfs, "0000:01:00.0", "suspended")
    pci_device(sysfs, "0000:01:00.1", "active", cls="0x040300")  # its HDMI audio
    fake_nvml.write(FakeState(gpus=[FakeGpu(used=GiB)]))
    src = NvmlSource(sysfs_root=str(sysfs), holders=DeviceHolderScanner(proc_root=str(tmp_path)))
    try:
        frame = src.sample(time.time())
        [gpu] = frame.gpus
        assert gpu.asleep and gpu.name is None and gpu.pci_bus_id == "00000000:01:00.0"
    finally:
        src.close()


def test_sysfs_helpers():
    assert sysfs_bus_id("00000000:0A:00.0") == "0000:0a:00.0"
    assert sysfs_bus_id("garbage") is None


def test_other_vendors_and_missing_files_are_never_asleep(tmp_path):
    pci_device(tmp_path, "0000:03:00.0", "suspended", vendor="0x1002")
    assert not is_nvidia("00000000:03:00.0", str(tmp_path))
    assert runtime_suspended("00000000:03:00.0", str(tmp_path))  # suspended, but not ours
    assert not is_nvidia("00000000:04:00.0", str(tmp_path))
    assert not runtime_suspended("00000000:04:00.0", str(tmp_path))
    assert nvidia_bus_ids(str(tmp_path / "none")) == []


# -- /dev/nvidia* holders -----------------------------------------------------------------


def proc_with_fds(root: pathlib.Path, pid: int, targets: list[str]) -> None:
    fd = root / str(pid) / "fd"
    fd.mkdir(parents=True)
    for i, target in enumerate(targets):
        os.symlink(target, fd / str(i))


def test_scan_finds_holders_where_fds_are_readable(tmp_path):
    proc_with_fds(tmp_path, 100, ["/dev/nvidiactl", "/dev/nvidia0", "/dev/null", "socket:[1]"])
    proc_with_fds(tmp_path, 200, ["/dev/null"])
    (tmp_path / "300").mkdir()  # no fd dir readable: skipped, not an error
    (tmp_path / "self").mkdir()
    assert scan(str(tmp_path)) == {100: ("/dev/nvidia0", "/dev/nvidiactl")}


def test_scanner_rescans_only_after_its_interval(tmp_path):
    clock = [0.0]
    scanner = DeviceHolderScanner(interval=10, proc_root=str(tmp_path), clock=lambda: clock[0])
    assert scanner.holders() == {}
    proc_with_fds(tmp_path, 100, ["/dev/nvidia0"])
    clock[0] = 5.0
    assert scanner.holders() == {} and scanner.scans == 1  # cached
    clock[0] = 10.0
    assert scanner.holders() == {100: ("/dev/nvidia0",)} and scanner.scans == 2


def test_holders_not_listed_by_nvml_are_in_the_frame(fake_nvml, tmp_path, sleepers):
    listed, unlisted = sleepers(2)
    proc_with_fds(tmp_path, listed, ["/dev/nvidiactl", "/dev/nvidia0"])
    proc_with_fds(tmp_path, unlisted, ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"])
    fake_nvml.write(FakeState(gpus=[FakeGpu(used=GiB, processes=[FakeProcess(listed, GiB)])]))
    src = NvmlSource(processes=ProcessCache(), holders=DeviceHolderScanner(proc_root=str(tmp_path)))
    try:
        frame = src.sample(time.time())
    finally:
        src.close()
    [holder] = frame.device_holders
    assert holder.info.pid == unlisted and holder.info.command == "sleep 300"
    assert holder.devices == ("/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl")

"""PCI power state from sysfs (the root is injectable for tests).

The kernel's runtime power management exposes
``/sys/bus/pci/devices/<domain:bus:dev.fn>/power/runtime_status``
("active", "suspended", "suspending", "resuming", "error", "unsupported";
Documentation/power/runtime_pm.rst). Reading it does not wake the device.
"""

from __future__ import annotations

import os

SYS = "/sys"
NVIDIA_VENDOR = "0x10de"
_DISPLAY_CLASSES = ("0x0300", "0x0302")  # VGA and 3D controllers


def sysfs_bus_id(nvml_bus_id: str) -> str | None:
    """NVML's "00000000:01:00.0" -> sysfs' "0000:01:00.0"."""
    try:
        domain, rest = nvml_bus_id.strip().split(":", 1)
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:
        return None


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def is_nvidia(nvml_bus_id: str, sysfs_root: str = SYS) -> bool:
    """True when sysfs has this bus id as an NVIDIA PCI device (checked once per GPU)."""
    bus = sysfs_bus_id(nvml_bus_id)
    return bus is not None and _read(f"{sysfs_root}/bus/pci/devices/{bus}/vendor") == NVIDIA_VENDOR


def runtime_suspended(nvml_bus_id: str, sysfs_root: str = SYS) -> bool:
    """True when the PCI device is runtime-suspended (one small sysfs read)."""
    bus = sysfs_bus_id(nvml_bus_id)
    return (
        bus is not None and _read(f"{sysfs_root}/bus/pci/devices/{bus}/power/runtime_status") == "suspended"
    )


def nvidia_bus_ids(sysfs_root: str = SYS) -> list[str]:
    """NVIDIA display devices' bus ids (NVML form), in bus order."""
    base = f"{sysfs_root}/bus/pci/devices"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for name in names:
        if _read(f"{base}/{name}/vendor") != NVIDIA_VENDOR:
            continue
        cls = _read(f"{base}/{name}/class") or ""
        if cls[:6] in _DISPLAY_CLASSES:
            domain, rest = name.split(":", 1)
            out.append(f"{int(domain, 16):08X}:{rest.upper()}")
    return out

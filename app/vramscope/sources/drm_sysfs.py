"""AMD and Intel GPUs as the kernel's sysfs shows them (the root is injectable).

Every DRM device is ``/sys/class/drm/cardN`` (and its render node
``renderDN``), whose ``device`` is the PCI device: ``uevent`` names the
driver and the slot (``DRIVER=amdgpu``, ``PCI_SLOT_NAME=0000:03:00.0``),
``vendor``/``device`` the PCI ids. What each driver adds:

- amdgpu (Documentation/gpu/amdgpu/driver-misc.rst, thermal.rst):
  ``mem_info_vram_total``/``_used`` (bytes; ``mem_info_gtt_*``, system memory the
  card maps, is not its memory and is not shown), ``gpu_busy_percent``, ``product_name`` where the board's FRU says it, and the
  hwmon ``temp1_input`` (m°C), ``power1_average``/``power1_input`` and
  ``power1_cap`` (µW);
- xe (drivers/gpu/drm/xe/xe_tile_sysfs.c): ``tile<N>/physical_vram_size_bytes``;
  no device-wide VRAM use and no busy % (used is then the processes' fdinfo
  sum, and says so);
- i915: no VRAM figures in sysfs at all.

A figure a device does not expose is None with its reason in ``not_reported``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from vramscope.core.samples import AMD, INTEL, NVIDIA
from vramscope.sources.drm_fdinfo import read_bounded
from vramscope.sources.pci_names import device_name

SYS = "/sys"
VENDOR_IDS = {0x1002: AMD, 0x8086: INTEL, 0x10DE: NVIDIA}
_CARD = re.compile(r"^card\d+$")
_NODE = re.compile(r"^(card|renderD)\d+$")
_SMALL = 4096


@dataclass(frozen=True, slots=True)
class DrmDevice:
    """One GPU of a DRM driver, as sysfs has it this pass."""

    card: str  # "card1"
    pdev: str | None  # "0000:03:00.0"
    driver: str | None  # "amdgpu", "xe", "i915"
    vendor: str | None  # AMD / Intel / NVIDIA
    device_id: int | None
    name: str
    nodes: tuple[str, ...] = ()  # "card1", "renderD128"
    vram_total: int | None = None
    vram_used: int | None = None
    busy_percent: int | None = None
    temperature: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    not_reported: tuple[tuple[str, str], ...] = ()


def _text(path: str) -> str | None:
    try:
        return read_bounded(path, _SMALL).strip()
    except OSError:
        return None


def _int(path: str, base: int = 10) -> int | None:
    text = _text(path)
    try:
        return int(text, base) if text else None
    except ValueError:
        return None


def _uevent(device_dir: str) -> dict[str, str]:
    out = {}
    for line in (_text(f"{device_dir}/uevent") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def _hwmon(device_dir: str) -> tuple[int | None, float | None, float | None]:
    """(°C, W, limit W) from the device's first hwmon directory."""
    try:
        names = sorted(n for n in os.listdir(f"{device_dir}/hwmon") if n.startswith("hwmon"))
    except OSError:
        return None, None, None
    if not names:
        return None, None, None
    base = f"{device_dir}/hwmon/{names[0]}"
    milli = _int(f"{base}/temp1_input")
    power = _int(f"{base}/power1_average")
    if power is None:
        power = _int(f"{base}/power1_input")
    cap = _int(f"{base}/power1_cap")
    if cap is None:
        cap = _int(f"{base}/power1_max")
    return (
        None if milli is None else milli // 1000,
        None if power is None else power / 1e6,
        None if cap is None or cap <= 0 else cap / 1e6,
    )


def _xe_vram_total(device_dir: str) -> int | None:
    try:
        tiles = sorted(n for n in os.listdir(device_dir) if re.match(r"^tile\d+$", n))
    except OSError:
        return None
    sizes = [_int(f"{device_dir}/{t}/physical_vram_size_bytes") for t in tiles]
    sizes = [s for s in sizes if s]
    return sum(sizes) if sizes else None


def read_device(sys_root: str, card: str, nodes: tuple[str, ...] = ()) -> DrmDevice | None:
    """One card's figures; None where it is not a PCI GPU."""
    base = f"{sys_root}/class/drm/{card}/device"
    uevent = _uevent(base)
    vendor_id = _int(f"{base}/vendor", 16)
    if vendor_id is None:
        return None
    device_id = _int(f"{base}/device", 16)
    vendor = VENDOR_IDS.get(vendor_id)
    driver = uevent.get("DRIVER")
    name = _text(f"{base}/product_name") or device_name(vendor_id, device_id)
    temperature, power, cap = _hwmon(base)
    missing = []
    vram_total = _int(f"{base}/mem_info_vram_total")
    vram_used = _int(f"{base}/mem_info_vram_used")
    busy = _int(f"{base}/gpu_busy_percent")
    if driver == "xe":
        vram_total = vram_total or _xe_vram_total(base)
        if vram_used is None:
            missing.append(
                (
                    "used",
                    "the xe driver gives no device-wide VRAM use: the sum of "
                    "the processes' fdinfo this user can read",
                )
            )
    if vram_total is None:
        missing.append(("total", f"{driver or 'its driver'} exposes no VRAM size in sysfs"))
    if busy is None:
        missing.append(("util_gpu", f"{driver or 'its driver'} exposes no busy % in sysfs"))
    missing.append(("util_memory", "memory-controller % is NVML's (NVIDIA only)"))
    if temperature is None:
        missing.append(("temperature", "no hwmon temperature for this device"))
    if power is None:
        missing.append(("power_w", "no hwmon power reading for this device"))
    return DrmDevice(
        card=card,
        pdev=uevent.get("PCI_SLOT_NAME"),
        driver=driver,
        vendor=vendor,
        device_id=device_id,
        name=name,
        nodes=nodes or (card,),
        vram_total=vram_total,
        vram_used=vram_used,
        busy_percent=busy,
        temperature=temperature,
        power_w=power,
        power_limit_w=cap,
        not_reported=tuple(missing),
    )


def node_slots(sys_root: str = SYS) -> dict[str, str]:
    """DRM node name -> PCI slot ("renderD128" -> "0000:03:00.0")."""
    try:
        names = os.listdir(f"{sys_root}/class/drm")
    except OSError:
        return {}
    out = {}
    for name in names:
        if _NODE.match(name):
            slot = _uevent(f"{sys_root}/class/drm/{name}/device").get("PCI_SLOT_NAME")
            if slot:
                out[name] = slot
    return out


def devices(sys_root: str = SYS, vendors: tuple[str, ...] = (AMD, INTEL)) -> list[DrmDevice]:
    """The AMD and Intel GPUs of this machine in card order. NVIDIA's are NVML's; a
    server's BMC display (ASPEED) or a VM's virtual display (virtio, QXL, bochs) is
    a DRM device too, but no GPU anyone runs work on."""
    slots = node_slots(sys_root)
    cards = sorted((n for n in slots if _CARD.match(n)), key=lambda n: int(n[4:]))
    out = []
    for card in cards:
        slot = slots[card]
        nodes = tuple(sorted(n for n, s in slots.items() if s == slot))
        dev = read_device(sys_root, card, nodes)
        if dev is not None and dev.vendor in vendors:
            out.append(dev)
    return out

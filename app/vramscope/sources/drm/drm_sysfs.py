"""AMD and Intel GPUs as the kernel's sysfs shows them (the root is injectable).

Every DRM device is ``/sys/class/drm/cardN`` (and its render node
``renderDN``), whose ``device`` is the PCI device: ``uevent`` names the
driver and the slot (``DRIVER=amdgpu``, ``PCI_SLOT_NAME=0000:03:00.0``),
``vendor``/``device`` the PCI ids. What each driver adds:

- amdgpu (Documentation/gpu/amdgpu/driver-misc.rst, thermal.rst):
  ``mem_info_vram_total``/``_used`` (bytes; on an APU the firmware's carve-out),
  ``mem_info_gtt_total``/``_used`` (system memory the card maps: an APU's
  memory beside the carve-out, not a discrete card's), ``mem_info_vram_vendor``
  (a discrete card's memory maker; amdgpu hides it where there is none),
  ``gpu_busy_percent``, ``mem_busy_percent`` (the memory controller),
  ``product_name`` where the board's FRU says it, and the hwmon ``temp1_input``
  (m°C), ``power1_average``/``power1_input`` and ``power1_cap`` (µW);
- xe (drivers/gpu/drm/xe/xe_tile_sysfs.c): ``tile<N>/physical_vram_size_bytes``,
  written for discrete cards only; no device-wide VRAM use and no busy % (used
  is then the processes' fdinfo sum, and says so);
- i915: no VRAM figures in sysfs at all (a discrete Arc's size is the
  DRM_I915_QUERY_MEMORY_REGIONS ioctl's, not read here).

A figure a device does not expose is None with its reason in ``not_reported``;
one beyond any real device (a 4,000-digit hwmon value) is None too, said to be
implausible (sources/drm/figure_bounds.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from vramscope.core.samples import AMD, INTEL, NVIDIA
from vramscope.sources.drm.drm_fdinfo import read_bounded
from vramscope.sources.drm.figure_bounds import MAX_BYTES, ImplausibleFigure, bounded_int, implausible_reason
from vramscope.sources.drm.pci_names import device_name

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
    gtt_total: int | None = None  # amdgpu: system memory the card maps
    gtt_used: int | None = None
    vram_vendor: bool = False  # amdgpu names the card's memory maker (a discrete card)
    busy_percent: int | None = None
    memory_busy_percent: int | None = None  # amdgpu: the memory controller's busy %
    temperature: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    not_reported: tuple[tuple[str, str], ...] = ()


def _text(path: str) -> str | None:
    try:
        return read_bounded(path, _SMALL).strip()
    except OSError:
        return None


def _int(
    path: str, base: int = 10, limit: int = MAX_BYTES, implausible: list | None = None, signed: bool = False
) -> int | None:
    """The file's integer; None where absent or not a number, or beyond ``limit``
    (then, with ``implausible``, its reason is added there as (figure, why))."""
    text = _text(path)
    try:
        return bounded_int(text, limit=limit, base=base, signed=signed) if text else None
    except ImplausibleFigure as exc:
        if implausible is not None:
            figure, what = _FIGURE_OF_FILE.get(path.rsplit("/", 1)[1], ("device", path.rsplit("/", 1)[1]))
            implausible.append((figure, implausible_reason(what, exc)))
        return None
    except ValueError:
        return None


# sysfs file -> (the GpuSample figure it gives, how a reason names it)
_FIGURE_OF_FILE = {
    "temp1_input": ("temperature", "hwmon temp1_input"),
    "power1_average": ("power_w", "hwmon power1_average"),
    "power1_input": ("power_w", "hwmon power1_input"),
    "power1_cap": ("power_limit_w", "hwmon power1_cap"),
    "power1_max": ("power_limit_w", "hwmon power1_max"),
    "mem_info_vram_total": ("total", "mem_info_vram_total"),
    "mem_info_vram_used": ("used", "mem_info_vram_used"),
    "mem_info_gtt_total": ("gtt", "mem_info_gtt_total"),
    "mem_info_gtt_used": ("gtt", "mem_info_gtt_used"),
    "gpu_busy_percent": ("util_gpu", "gpu_busy_percent"),
    "mem_busy_percent": ("util_memory", "mem_busy_percent"),
    "physical_vram_size_bytes": ("total", "physical_vram_size_bytes"),
}
MAX_MILLI_C = 1_000_000  # 1,000 °C
MAX_MICRO_W = 100_000_000_000  # 100 kW


def _uevent(device_dir: str) -> dict[str, str]:
    out = {}
    for line in (_text(f"{device_dir}/uevent") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def _hwmon(device_dir: str, implausible: list) -> tuple[int | None, float | None, float | None]:
    """(°C, W, limit W) from the device's first hwmon directory."""
    try:
        names = sorted(n for n in os.listdir(f"{device_dir}/hwmon") if n.startswith("hwmon"))
    except OSError:
        return None, None, None
    if not names:
        return None, None, None
    base = f"{device_dir}/hwmon/{names[0]}"
    milli = _int(f"{base}/temp1_input", limit=MAX_MILLI_C, implausible=implausible, signed=True)
    power = _int(f"{base}/power1_average", limit=MAX_MICRO_W, implausible=implausible)
    if power is None:
        power = _int(f"{base}/power1_input", limit=MAX_MICRO_W, implausible=implausible)
    cap = _int(f"{base}/power1_cap", limit=MAX_MICRO_W, implausible=implausible)
    if cap is None:
        cap = _int(f"{base}/power1_max", limit=MAX_MICRO_W, implausible=implausible)
    return (
        None if milli is None else milli // 1000,
        None if power is None else power / 1e6,
        None if cap is None or cap <= 0 else cap / 1e6,
    )


def _xe_vram_total(device_dir: str, implausible: list) -> int | None:
    try:
        tiles = sorted(n for n in os.listdir(device_dir) if re.match(r"^tile\d+$", n))
    except OSError:
        return None
    sizes = [_int(f"{device_dir}/{t}/physical_vram_size_bytes", implausible=implausible) for t in tiles]
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
    implausible: list[tuple[str, str]] = []
    temperature, power, cap = _hwmon(base, implausible)
    missing = []
    vram_total = _int(f"{base}/mem_info_vram_total", implausible=implausible)
    vram_used = _int(f"{base}/mem_info_vram_used", implausible=implausible)
    busy = _int(f"{base}/gpu_busy_percent", limit=100, implausible=implausible)
    memory_busy = _int(f"{base}/mem_busy_percent", limit=100, implausible=implausible)
    if driver == "xe":
        vram_total = vram_total or _xe_vram_total(base, implausible)
        if vram_used is None:
            missing.append(
                (
                    "used",
                    "the xe driver gives no device-wide VRAM use: the sum of "
                    "the processes' fdinfo this user can read",
                )
            )
    missing += implausible
    shown = {figure for figure, _why in implausible}
    if vram_total is None and "total" not in shown:
        missing.append(("total", f"{driver or 'its driver'} exposes no VRAM size in sysfs"))
    if busy is None and "util_gpu" not in shown:
        missing.append(("util_gpu", f"{driver or 'its driver'} exposes no busy % in sysfs"))
    if memory_busy is None and "util_memory" not in shown:
        missing.append(
            ("util_memory", f"{driver or 'its driver'} exposes no memory-controller busy % in sysfs")
        )
    if temperature is None and "temperature" not in shown:
        missing.append(("temperature", "no hwmon temperature for this device"))
    if power is None and "power_w" not in shown:
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
        gtt_total=_int(f"{base}/mem_info_gtt_total", implausible=missing),
        gtt_used=_int(f"{base}/mem_info_gtt_used", implausible=missing),
        vram_vendor=_text(f"{base}/mem_info_vram_vendor") is not None,
        busy_percent=busy,
        memory_busy_percent=memory_busy,
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

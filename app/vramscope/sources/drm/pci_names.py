"""A GPU's marketing name from its PCI ids.

A few compute cards are known here; the rest come from the system's
``pci.ids`` (the PCI ID Repository, https://pci-ids.ucw.cz/, installed by
hwdata / pciutils), read line by line and at most ``MAX_READ`` bytes; failing
both, "AMD GPU 0x744c".
"""

from __future__ import annotations

import functools

from vramscope.core.samples import AMD, INTEL, NVIDIA

PCI_IDS = ("/usr/share/hwdata/pci.ids", "/usr/share/misc/pci.ids", "/usr/share/pci.ids")
MAX_READ = 4 << 20  # the file is ~1.4 MB
VENDOR_NAMES = {0x1002: AMD, 0x8086: INTEL, 0x10DE: NVIDIA}
KNOWN = {  # (vendor, device) -> name, from the PCI ID Repository
    (0x1002, 0x744C): "AMD Radeon RX 7900 XTX",
    (0x1002, 0x7448): "AMD Radeon PRO W7900",
    (0x1002, 0x74A1): "AMD Instinct MI300X",
    (0x1002, 0x740F): "AMD Instinct MI210",
    (0x1002, 0x738C): "AMD Instinct MI100",
    (0x1002, 0x15BF): "AMD Radeon 780M / 760M (Phoenix)",  # Ryzen 7040 APUs
    (0x8086, 0x56A0): "Intel Arc A770",
    (0x8086, 0x56A1): "Intel Arc A750",
    (0x8086, 0xE20B): "Intel Arc B580",
    (0x8086, 0x64A0): "Intel Arc 130V / 140V (Lunar Lake)",  # integrated
    (0x8086, 0x0BD5): "Intel Data Center GPU Max 1550",
}


def device_name(vendor: int, device: int | None, paths=PCI_IDS) -> str:
    if device is not None:
        known = KNOWN.get((vendor, device)) or _from_pci_ids(vendor, device, tuple(paths))
        if known:
            return known
    who = VENDOR_NAMES.get(vendor, f"{vendor:#06x}")
    return f"{who} GPU" if device is None else f"{who} GPU {device:#06x}"


@functools.lru_cache(maxsize=64)
def _from_pci_ids(vendor: int, device: int, paths: tuple[str, ...]) -> str | None:
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return _lookup(f, vendor, device)
        except OSError:
            continue
    return None


def _lookup(lines, vendor: int, device: int) -> str | None:
    """pci.ids: "vvvv  Vendor" at column 0, "\\tdddd  Device" under it."""
    want_vendor, want_device = f"{vendor:04x}", f"{device:04x}"
    read = 0
    in_vendor = False
    for line in lines:
        read += len(line)
        if read > MAX_READ:
            return None
        if line.startswith("#") or not line.strip():
            continue
        if not line.startswith("\t"):
            if in_vendor:
                return None
            in_vendor = line[:4].lower() == want_vendor
        elif in_vendor and not line.startswith("\t\t") and line[1:5].lower() == want_device:
            name = line[5:].strip()
            prefix = VENDOR_NAMES.get(vendor)
            return f"{prefix} {name}" if prefix and not name.startswith(prefix) else name
    return None

"""A GPU's PCI address as a person reads it: ``01:00.0``, not ``00000000:01:00.0``.

NVML gives the domain in eight hex digits (nvmlPciInfo_t.busId, NVML API
reference); almost every machine has the one domain 0000, which lspci(8) then
leaves out as well ("-D: Always show PCI domain numbers"). A non-zero domain
(several PCI host bridges, VMD, some VMs) is kept, in lspci's four digits.
"""

from __future__ import annotations


def short_bus_id(bus_id: str | None) -> str | None:
    """'00000000:01:00.0' -> '01:00.0'; '00000001:4C:00.0' -> '0001:4c:00.0'; else as given."""
    if not bus_id:
        return bus_id
    domain, sep, rest = bus_id.strip().partition(":")
    if not sep or ":" not in rest:
        return bus_id  # no domain in it (already short) or not a PCI address
    try:
        number = int(domain, 16)
    except ValueError:
        return bus_id
    rest = rest.lower()
    return rest if number == 0 else f"{number:04x}:{rest}"

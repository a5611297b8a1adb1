"""Staged /proc and /sys trees of a machine with AMD and Intel GPUs.

The files are what the kernel documents (Documentation/gpu/drm-usage-stats.rst,
amdgpu's driver-misc.rst) and what amdgpu and xe print: fdinfo with tabs after
the colon, sizes in KiB or bare bytes, amdgpu's older ``drm-memory-*`` keys
beside the newer ``drm-total-*``/``drm-resident-*`` ones, engine time in ns
(amdgpu) and cycle pairs (xe). ``Machine`` stages them; the tests compare what
vramscope shows with ``expected_memory()``.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from dataclasses import dataclass, field

GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10

AMD_SLOT, INTEL_SLOT, NVIDIA_SLOT = "0000:03:00.0", "0000:08:00.0", "0000:01:00.0"


def memory_lines(regions) -> list[str]:
    """The memory keys of drm_print_memory_stats() (drm-usage-stats.rst) for each
    (region, bytes): total and resident as given, shared, active and purgeable 0;
    KiB where at least 1 KiB, bare bytes below."""
    lines = []
    for region, size in regions:
        text = f"{size // KiB} KiB" if size >= KiB else str(size)
        lines += [
            f"drm-total-{region}:\t{text}",
            f"drm-shared-{region}:\t0",
            f"drm-active-{region}:\t0",
            f"drm-resident-{region}:\t{text}",
            f"drm-purgeable-{region}:\t0",
        ]
    return lines


def rtx_4090_beside(fake_nvml, pid: int):
    """The fake NVML's one NVIDIA card beside the staged ones: an RTX 4090 with 5 GiB
    used, ``pid`` holding 3 GiB of it. -> the FakeState written."""
    from fakenvml import FakeGpu, FakeProcess, FakeState

    state = FakeState(
        gpus=[
            FakeGpu(
                name="NVIDIA GeForce RTX 4090",
                total=24 * GiB,
                used=5 * GiB,
                utilization=(60, 20),
                processes=[FakeProcess(pid, 3 * GiB, sm=60)],
            )
        ]
    )
    fake_nvml.write(state)
    return state


def amdgpu_fdinfo(
    client_id: int,
    vram: int,
    gtt: int = 4 * MiB,
    gfx_ns: int = 0,
    legacy_only: bool = False,
    pdev: str = AMD_SLOT,
) -> str:
    """What amdgpu prints for one client: 6.11+ with both key sets, or (legacy_only)
    the older kernels' drm-memory-* keys alone."""
    lines = [
        "pos:\t0",
        "flags:\t02100002",
        "mnt_id:\t26",
        "ino:\t1029",
        "drm-driver:\tamdgpu",
        f"drm-client-id:\t{client_id}",
        f"drm-pdev:\t{pdev}",
        "pasid:\t32776",
    ]
    if not legacy_only:
        lines += memory_lines((("cpu", 0), ("gtt", gtt), ("vram", vram)))
    lines += [
        f"drm-memory-vram:\t{vram // KiB} KiB",
        f"drm-memory-gtt: \t{gtt // KiB} KiB",
        "drm-memory-cpu: \t0 KiB",
        "amd-evicted-vram:\t0 KiB",
        f"amd-requested-vram:\t{vram // KiB} KiB",
        f"drm-engine-gfx:\t{gfx_ns} ns",
        "drm-engine-compute:\t0 ns",
        "drm-engine-dma:\t0 ns",
    ]
    return "\n".join(lines) + "\n"


def amdgpu_5_15_fdinfo(vram: int, gtt: int = 4 * MiB) -> str:
    """What amdgpu printed before the common format (Linux 5.14 to 5.18, Ubuntu
    22.04's 5.15): its own keys, no drm-driver, no client id."""
    return (
        f"pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t623\npdev:\t{AMD_SLOT}\npasid:\t32774\n"
        f"vram mem:\t{vram // KiB} kB\ngtt mem:\t{gtt // KiB} kB\ncpu mem:\t0 kB\ngfx0:\t70.59%\n"
    )


def xe_fdinfo(client_id: int, vram: int, cycles: int = 0, total_cycles: int = 1000) -> str:
    """What xe prints for one client (bare byte counts where small, KiB otherwise)."""
    lines = [
        "pos:\t0",
        "flags:\t02080002",
        "mnt_id:\t24",
        "ino:\t1182",
        "drm-driver:\txe",
        f"drm-client-id:\t{client_id}",
        f"drm-pdev:\t{INTEL_SLOT}",
    ]
    lines += memory_lines((("system", 0), ("gtt", 192 * KiB), ("vram0", vram)))
    lines += [
        f"drm-cycles-rcs:\t{cycles}",
        f"drm-total-cycles-rcs:\t{total_cycles}",
        "drm-cycles-ccs:\t0",
        f"drm-total-cycles-ccs:\t{total_cycles}",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class Fd:
    node: str  # "renderD128", "card1", or any other path ("/dev/nvidia0")
    fdinfo: str | None  # None: the file is gone (the process ended between the reads)
    readable: bool = True
    number: int | None = None  # its fd number (default: 3, 4, ... in order)


@dataclass
class Machine:
    root: pathlib.Path
    fds: dict[int, list[Fd]] = field(default_factory=dict)  # pid -> its fds (fd 3, 4, ...)

    @property
    def proc(self) -> str:
        return str(self.root / "proc")

    @property
    def sys(self) -> str:
        return str(self.root / "sys")

    def stage_sys(self, amd_used: int = 7 * GiB // 2) -> None:
        drm = self.root / "sys" / "class" / "drm"
        _device(drm, "card0", ("renderD128",), NVIDIA_SLOT, "nvidia", 0x10DE, 0x2684, {})
        hw = {
            "hwmon/hwmon3/temp1_input": "55000",
            "hwmon/hwmon3/power1_average": "180000000",
            "hwmon/hwmon3/power1_cap": "303000000",
        }
        _device(
            drm,
            "card1",
            ("renderD129",),
            AMD_SLOT,
            "amdgpu",
            0x1002,
            0x744C,
            {
                "mem_info_vram_total": str(24 * GiB),
                "mem_info_vram_used": str(amd_used),
                "mem_info_gtt_total": str(32 * GiB),
                "mem_info_gtt_used": str(20 * MiB),
                "mem_info_vram_vendor": "samsung",
                "gpu_busy_percent": "37",
                "mem_busy_percent": "12",
                **hw,
            },
        )
        _device(
            drm,
            "card2",
            ("renderD130",),
            INTEL_SLOT,
            "xe",
            0x8086,
            0xE20B,
            {"tile0/physical_vram_size_bytes": str(12 * GiB)},
        )
        # a server's BMC display: a DRM device, no GPU (left out)
        _device(drm, "card3", (), "0000:0a:00.0", "ast", 0x1A03, 0x2000, {})

    def stage_proc(self) -> None:
        for pid, fds in self.fds.items():
            base = self.root / "proc" / str(pid)
            (base / "fd").mkdir(parents=True, exist_ok=True)
            (base / "fdinfo").mkdir(exist_ok=True)
            for n, fd in enumerate(fds, 3):
                n = fd.number if fd.number is not None else n
                target = fd.node if fd.node.startswith("/") else f"/dev/dri/{fd.node}"
                link = base / "fd" / str(n)
                if link.is_symlink():
                    link.unlink()
                link.symlink_to(target)
                info = base / "fdinfo" / str(n)
                if fd.fdinfo is not None:
                    info.write_text(fd.fdinfo)
                    info.chmod(0o644 if fd.readable else 0o600)
                    if not fd.readable and os.geteuid() != 0:
                        info.chmod(0)
            for d in (base, base / "fd", base / "fdinfo"):
                d.chmod(0o755)


def _device(
    drm: pathlib.Path,
    card: str,
    renders: tuple[str, ...],
    slot: str,
    driver: str,
    vendor: int,
    device: int,
    files: dict,
) -> None:
    dev = drm / card / "device"
    dev.mkdir(parents=True, exist_ok=True)
    (dev / "uevent").write_text(
        f"DRIVER={driver}\nPCI_CLASS=30000\nPCI_ID={vendor:04X}:{device:04X}\n"
        f"PCI_SLOT_NAME={slot}\nMODALIAS=pci:v0000{vendor:04X}\n"
    )
    (dev / "vendor").write_text(f"{vendor:#06x}\n")
    (dev / "device").write_text(f"{device:#06x}\n")
    for name, text in files.items():
        (dev / name).parent.mkdir(parents=True, exist_ok=True)
        (dev / name).write_text(text + "\n")
    for render in renders:
        (drm / render).mkdir(parents=True, exist_ok=True)
        link = drm / render / "device"
        if not link.exists():
            link.symlink_to(os.path.relpath(dev, drm / render))


def lab(
    root: pathlib.Path, trainer: int, both: int, arc: int, sharer: int, gone: int, stranger: int | None = None
) -> Machine:
    """The machine the tests stage (PIDs are real processes, so psutil names them):

    - ``trainer`` on the AMD card: client 7 through three fds (dup'ed render node and
      the primary node), 1 GiB resident in VRAM, plus client 8 (older amdgpu keys
      only) with 512 MiB;
    - ``both`` on the NVIDIA card (the fake NVML's list) and the AMD card: 2 GiB;
    - ``arc`` on the Intel card: client 44 through two fds, 768 MiB in vram0;
    - ``sharer`` on the Intel card (client 45, 256 MiB) and holding the trainer's
      AMD client 7 (a passed fd): counted once, for the lower PID;
    - ``gone``: its fd is listed, its fdinfo has gone (it ended meanwhile);
    - ``stranger`` (optional): another user's process whose fdinfo cannot be read.
    """
    m = Machine(root)
    t7 = amdgpu_fdinfo(7, vram=GiB, gfx_ns=5_000_000_000)
    m.fds[trainer] = [
        Fd("renderD129", t7),
        Fd("renderD129", t7),
        Fd("card1", t7),
        Fd("renderD129", amdgpu_fdinfo(8, vram=512 * MiB, legacy_only=True)),
        Fd("/dev/nvidia0", "pos:\t0\nflags:\t02\n"),
    ]
    m.fds[both] = [Fd("/dev/nvidiactl", "pos:\t0\n"), Fd("renderD129", amdgpu_fdinfo(9, vram=2 * GiB))]
    a44 = xe_fdinfo(44, vram=768 * MiB, cycles=100, total_cycles=1000)
    m.fds[arc] = [Fd("renderD130", a44), Fd("renderD130", a44)]
    m.fds[sharer] = [Fd("renderD130", xe_fdinfo(45, vram=256 * MiB)), Fd("renderD129", t7)]
    m.fds[gone] = [Fd("renderD129", None)]
    if stranger is not None:
        m.fds[stranger] = [Fd("renderD129", amdgpu_fdinfo(12, vram=3 * GiB), readable=False)]
    m.stage_sys()
    m.stage_proc()
    return m


def expected_memory(trainer: int, both: int, arc: int, sharer: int) -> dict[str, dict[int, int]]:
    """pdev -> {pid: bytes} that vramscope must show for ``lab``."""
    amd = {trainer: GiB + 512 * MiB, both: 2 * GiB}
    if sharer < trainer:  # client 7 goes to the lower PID that holds it
        amd = {sharer: GiB, trainer: 512 * MiB, both: 2 * GiB}
    return {AMD_SLOT: amd, INTEL_SLOT: {arc: 768 * MiB, sharer: 256 * MiB}}


# --- more machines: an APU, an xe iGPU, an Arc on i915 (KFD: tests/kfd_trees.py) ----------

APU_SLOT, XE_IGPU_SLOT, ARC_SLOT = "0000:c4:00.0", "0000:00:02.0", "0000:03:00.0"


def stage_apu(
    m: Machine, vram_total: int = 512 * MiB, vram_used: int = 300 * MiB, gtt_used: int = 6 * GiB
) -> None:
    """A Ryzen 7840U's Radeon 780M (Phoenix) as amdgpu writes it: the firmware's
    512 MiB carve-out as ``mem_info_vram_total``, the system memory it maps as GTT,
    no ``mem_info_vram_vendor`` (no memory chips of its own)."""
    _device(
        m.root / "sys" / "class" / "drm",
        "card0",
        ("renderD128",),
        APU_SLOT,
        "amdgpu",
        0x1002,
        0x15BF,
        {
            "mem_info_vram_total": str(vram_total),
            "mem_info_vram_used": str(vram_used),
            "mem_info_vis_vram_total": str(vram_total),
            "mem_info_gtt_total": str(30 * GiB),
            "mem_info_gtt_used": str(gtt_used),
            "gpu_busy_percent": "9",
            "mem_busy_percent": "4",
            "hwmon/hwmon5/temp1_input": "48000",
        },
    )


def stage_xe_igpu(m: Machine) -> None:
    """Lunar Lake's Arc 140V on xe: on the root bus, a tile without a VRAM size
    (xe writes physical_vram_size_bytes for discrete cards only)."""
    _device(
        m.root / "sys" / "class" / "drm", "card0", ("renderD128",), XE_IGPU_SLOT, "xe", 0x8086, 0x64A0, {}
    )
    (m.root / "sys" / "class" / "drm" / "card0" / "device" / "tile0").mkdir(exist_ok=True)


def stage_arc_on_i915(m: Machine) -> None:
    """An Arc A770 on mainline i915: behind a PCIe port, no VRAM figure in sysfs."""
    _device(
        m.root / "sys" / "class" / "drm",
        "card1",
        ("renderD129",),
        ARC_SLOT,
        "i915",
        0x8086,
        0x56A0,
        {"hwmon/hwmon2/power1_input": "38000000"},
    )


def xe_igpu_fdinfo(client_id: int, system: int, gtt: int) -> str:
    """What xe prints for a client of an integrated GPU: system, gtt and stolen regions."""
    lines = [
        "pos:\t0",
        "flags:\t02080002",
        "drm-driver:\txe",
        f"drm-client-id:\t{client_id}",
        f"drm-pdev:\t{XE_IGPU_SLOT}",
    ]
    lines += memory_lines((("system", system), ("gtt", gtt), ("stolen", 0)))
    lines += ["drm-cycles-rcs:\t0", "drm-total-cycles-rcs:\t1000"]
    return "\n".join(lines) + "\n"


def i915_fdinfo(client_id: int, local: int, system: int = 2 * MiB, pdev: str | None = ARC_SLOT) -> str:
    """What i915 prints for one client of a discrete card (6.8+: memory regions
    system0, local0 and stolen-local0; engine ns by class)."""
    lines = ["pos:\t0", "flags:\t02100002", "drm-driver:\ti915"]
    if pdev is not None:
        lines.append(f"drm-pdev:\t{pdev}")
    lines.append(f"drm-client-id:\t{client_id}")
    lines += memory_lines((("system0", system), ("local0", local), ("stolen-local0", 0)))
    lines += [
        "drm-engine-render:\t0 ns",
        "drm-engine-copy:\t0 ns",
        "drm-engine-video:\t0 ns",
        "drm-engine-capacity-video:\t2",
        "drm-engine-video-enhance:\t0 ns",
    ]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def as_other_user():
    """Read as an unprivileged user (root reads every file: drop to nobody for the read)."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)

"""Test helper for the fake libnvidia-ml.so.1 (tests/fake_nvml/fake_nvml.c).

- ``build_library(dest)`` compiles the C source with gcc (SONAME
  libnvidia-ml.so.1); variants leave out symbols an old driver lacks.
- ``FakeState`` / ``FakeGpu`` / ``FakeProcess`` describe what the fake
  reports; ``FakeState.to_text()`` writes the line format the C code reads,
  ``FakeState.parse()`` reads it back.
- ``write_state(path, state)`` replaces the state file atomically (rename),
  which the fake notices on its next call.
- ``preload(lib)`` loads the built file into this process so that pynvml's
  own ``CDLL("libnvidia-ml.so.1")`` finds it: the dynamic loader matches an
  already-loaded object by its SONAME.
- ``subprocess_env(lib_dir, state_path)`` is the environment for a child
  process (``vramscope status --json``) that should load the fake.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import pathlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

SOURCE = pathlib.Path(__file__).resolve().parent / "fake_nvml" / "fake_nvml.c"
SONAME = "libnvidia-ml.so.1"

VARIANTS = {
    None: [],
    "no_memory_v2": ["-DFAKE_NVML_NO_MEMORY_V2"],
    "no_proc_v3": ["-DFAKE_NVML_NO_PROC_V3"],
}

GiB = 1 << 30
MiB = 1 << 20


@dataclass
class FakeProcess:
    pid: int
    used: int | None  # None -> NVML_VALUE_NOT_AVAILABLE
    kind: str = "compute"  # "compute" | "graphics"
    sm: int | None = None  # None -> no utilization sample (no SM activity)


@dataclass
class FakeMigDevice:
    """A MIG slice (nvml.h: a MIG device handle under its parent GPU)."""

    profile: str = "3g.40gb"  # the name reads "<parent name> MIG <profile>"
    gi: int = 1  # GPU instance id
    ci: int = 0  # compute instance id
    total: int = 40 * GiB
    used: int = 0
    uuid: str | None = None  # default derived by the fake ("MIG-...")
    processes: list[FakeProcess] = field(default_factory=list)


@dataclass
class FakeGpu:
    name: str = "NVIDIA GeForce RTX 4090"
    uuid: str | None = None  # default derived from the index by the writer
    pci_bus_id: str | None = None
    total: int = 24 * GiB
    reserved: int = 312 * MiB
    used: int = 0  # v2 meaning: excludes reserved
    free: int | None = None  # default: total - reserved - used
    memory_v2: str = "yes"  # "yes" | "no" (NOT_SUPPORTED) | "missing" (FUNCTION_NOT_FOUND)
    memory: bool = True  # False: every memory call NOT_SUPPORTED (unified memory: GB10, Jetson)
    utilization: tuple[int, int] | None = (0, 0)  # (gpu %, memory %) or not supported
    temperature: int | None = 40
    power_mw: int | None = 30_000
    power_limit_mw: int | None = 450_000
    process_utilization: bool = True
    process_api: int = 3
    lost: bool = False
    processes: list[FakeProcess] = field(default_factory=list)
    mig: bool | None = None  # MIG mode; None: the GPU cannot do MIG
    mig_devices: list[FakeMigDevice] = field(default_factory=list)

    def free_bytes(self) -> int:
        return self.total - self.reserved - self.used if self.free is None else self.free


@dataclass
class FakeState:
    gpus: list[FakeGpu] = field(default_factory=list)
    driver_loaded: bool = True
    drop_exited: bool = False  # True: like a real driver, exited processes leave the lists
    driver_version: str = "550.54.14"
    nvml_version: str = "12.550.54.14"
    cuda_driver_version: int = 12040

    def gpu_uuid(self, index: int) -> str:
        gpu = self.gpus[index]
        return gpu.uuid or f"GPU-{index:08x}-fake-4e56-a1b2-{index:012x}"

    def gpu_pci(self, index: int) -> str:
        gpu = self.gpus[index]
        return gpu.pci_bus_id or f"00000000:{index + 1:02X}:00.0"

    def to_text(self) -> str:
        out = [
            "# vramscope fake NVML state",
            f"driver {'loaded' if self.driver_loaded else 'not_loaded'}",
            f"drop_exited {int(self.drop_exited)}",
            f"driver_version {self.driver_version}",
            f"nvml_version {self.nvml_version}",
            f"cuda_driver_version {self.cuda_driver_version}",
        ]
        for i, g in enumerate(self.gpus):
            out += [
                "gpu",
                f"name {g.name}",
                f"uuid {self.gpu_uuid(i)}",
                f"pci_bus_id {self.gpu_pci(i)}",
                f"memory {g.total} {g.reserved} {g.used} {g.free_bytes()}" if g.memory else "memory na",
                f"memory_v2 {g.memory_v2}",
                "utilization na"
                if g.utilization is None
                else f"utilization {g.utilization[0]} {g.utilization[1]}",
                f"temperature {_na(g.temperature)}",
                f"power {_na(g.power_mw)}",
                f"power_limit {_na(g.power_limit_mw)}",
                f"process_utilization {'yes' if g.process_utilization else 'no'}",
                f"process_api {g.process_api}",
                f"lost {int(g.lost)}",
            ]
            out += [_proc_line(p) for p in g.processes]
            out.append(f"mig {'na' if g.mig is None else int(g.mig)}")
            for m in g.mig_devices:
                out.append(f"mig_device {m.gi} {m.ci} {m.profile} {m.total} {m.used}")
                if m.uuid:
                    out.append(f"uuid {m.uuid}")
                out += [_proc_line(p) for p in m.processes]
        return "\n".join(out) + "\n"

    @classmethod
    def parse(cls, text: str) -> "FakeState":
        """Read the line format back (same grammar as the C parser)."""
        st = cls()
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            rest = rest.strip()
            tok = rest.split()
            g = st.gpus[-1] if st.gpus else None
            # after a mig_device line, uuid/proc lines describe that slice
            target = g.mig_devices[-1] if g is not None and g.mig_devices else g
            try:
                if key == "driver":
                    st.driver_loaded = {"loaded": True, "not_loaded": False}[rest]
                elif key == "drop_exited":
                    st.drop_exited = {"1": True, "0": False}[rest]
                elif key == "driver_version":
                    st.driver_version = rest
                elif key == "nvml_version":
                    st.nvml_version = rest
                elif key == "cuda_driver_version":
                    st.cuda_driver_version = int(rest)
                elif key == "gpu":
                    st.gpus.append(FakeGpu(processes=[]))
                elif g is None:
                    raise ValueError("GPU field before 'gpu'")
                elif key == "name":
                    g.name = rest
                elif key == "uuid":
                    target.uuid = rest
                elif key == "pci_bus_id":
                    g.pci_bus_id = rest
                elif key == "memory" and rest == "na":
                    g.memory = False
                elif key == "memory":
                    g.total, g.reserved, g.used, g.free = (int(t) for t in tok)
                    g.memory = True
                elif key == "memory_v2":
                    if rest not in ("yes", "no", "missing"):
                        raise ValueError(rest)
                    g.memory_v2 = rest
                elif key == "utilization":
                    g.utilization = None if rest == "na" else (int(tok[0]), int(tok[1]))
                elif key == "temperature":
                    g.temperature = _opt(rest)
                elif key == "power":
                    g.power_mw = _opt(rest)
                elif key == "power_limit":
                    g.power_limit_mw = _opt(rest)
                elif key == "process_utilization":
                    g.process_utilization = {"yes": True, "no": False}[rest]
                elif key == "process_api":
                    g.process_api = int(rest)
                elif key == "lost":
                    g.lost = {"1": True, "0": False}[rest]
                elif key == "proc":
                    kind, pid, used, sm = tok
                    if kind not in ("compute", "graphics"):
                        raise ValueError(kind)
                    target.processes.append(
                        FakeProcess(
                            pid=int(pid), used=_opt(used), kind=kind, sm=None if sm == "-" else int(sm)
                        )
                    )
                elif key == "mig":
                    g.mig = {"na": None, "0": False, "1": True}[rest]
                elif key == "mig_device":
                    gi, ci, profile, total, used = tok
                    g.mig_devices.append(
                        FakeMigDevice(
                            profile=profile, gi=int(gi), ci=int(ci), total=int(total), used=int(used)
                        )
                    )
                else:
                    raise ValueError(f"unknown key {key!r}")
            except (ValueError, KeyError, IndexError) as exc:
                raise ValueError(f"state line {lineno}: {raw!r}: {exc}") from None
        return st


def _proc_line(p: FakeProcess) -> str:
    sm = "-" if p.sm is None else str(p.sm)
    return f"proc {p.kind} {p.pid} {_na(p.used)} {sm}"


def _na(value) -> str:
    return "na" if value is None else str(value)


def _opt(text: str) -> int | None:
    return None if text == "na" else int(text)


def write_state(path: os.PathLike | str, state: FakeState | str) -> None:
    """Replace the state file atomically (write a temp file, then rename)."""
    path = pathlib.Path(path)
    text = state if isinstance(state, str) else state.to_text()
    fd, tmp = tempfile.mkstemp(prefix=".state-", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def build_library(dest_dir: os.PathLike | str, variant: str | None = None) -> pathlib.Path:
    """Compile the fake into dest_dir/libnvidia-ml.so.1; returns its path."""
    dest = pathlib.Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / SONAME
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise RuntimeError("gcc is needed to build the fake libnvidia-ml.so.1")
    cmd = [
        gcc,
        "-shared",
        "-fPIC",
        "-O2",
        "-Wall",
        "-fvisibility=hidden",
        f"-Wl,-soname,{SONAME}",
        *VARIANTS[variant],
        "-o",
        str(out),
        str(SOURCE),
        "-lpthread",
    ]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


_loaded: dict[str, ctypes.CDLL] = {}


def preload(lib_path: os.PathLike | str) -> ctypes.CDLL:
    """Load the fake into this process and point pynvml at it.

    Once a library with SONAME libnvidia-ml.so.1 is loaded, dlopen of that
    name returns it, so pynvml's ``CDLL("libnvidia-ml.so.1")`` gets the fake.
    If pynvml had already loaded another NVML (a real driver on this
    machine), its handle is swapped for the fake's.
    """
    key = str(pathlib.Path(lib_path).resolve())
    lib = _loaded.get(key)
    if lib is None:
        lib = ctypes.CDLL(key, mode=ctypes.RTLD_GLOBAL)
        lib.fakeNvmlInitCount.restype = ctypes.c_int
        lib.fakeNvmlCalls.restype = ctypes.c_ulonglong
        _loaded[key] = lib
    import pynvml

    if pynvml.nvmlLib is not None and pynvml.nvmlLib._handle != lib._handle:
        with pynvml.libLoadLock:
            pynvml.nvmlLib = ctypes.CDLL(SONAME)
            pynvml._nvmlGetFunctionPointer_cache.clear()
    return lib


def subprocess_env(
    lib_dir: os.PathLike | str | None, state_path: os.PathLike | str | None, base: dict | None = None
) -> dict:
    """Environment for a child process that should load the fake (or, with
    lib_dir None or an empty folder, find no NVML library at all)."""
    env = dict(os.environ if base is None else base)
    env.pop("LD_PRELOAD", None)
    if lib_dir is not None:
        env["LD_LIBRARY_PATH"] = str(lib_dir)
    else:
        env.pop("LD_LIBRARY_PATH", None)
    if state_path is not None:
        env["FAKE_NVML_STATE"] = str(state_path)
    else:
        env.pop("FAKE_NVML_STATE", None)
    return env


def replace(state: FakeState, **changes) -> FakeState:
    """A copy of the state with top-level changes (GPUs deep-copied)."""
    copy = dataclasses.replace(
        state,
        gpus=[
            dataclasses.replace(
                g,
                processes=list(g.processes),
                mig_devices=[dataclasses.replace(m, processes=list(m.processes)) for m in g.mig_devices],
            )
            for g in state.gpus
        ],
    )
    return dataclasses.replace(copy, **changes)


# --- pytest fixtures (imported by tests/conftest.py) -------------------------------

import pytest  # noqa: E402


class FakeNvml:
    """One test's view of the fake: its state file, the library, env vars."""

    def __init__(self, lib_path: pathlib.Path, state_path: pathlib.Path, lib: ctypes.CDLL | None):
        self.lib_path = lib_path
        self.lib_dir = lib_path.parent
        self.state_path = state_path
        self.lib = lib

    def write(self, state: FakeState | str) -> None:
        write_state(self.state_path, state)

    def env(self, base: dict | None = None) -> dict:
        return subprocess_env(self.lib_dir, self.state_path, base)

    @property
    def init_count(self) -> int:
        return self.lib.fakeNvmlInitCount()


@pytest.fixture(scope="session")
def fake_nvml_build(tmp_path_factory):
    """Builds variants of the fake once per session: build(variant) -> path."""
    built: dict = {}

    def build(variant: str | None = None) -> pathlib.Path:
        if variant not in built:
            built[variant] = build_library(tmp_path_factory.mktemp(f"nvml-{variant or 'full'}"), variant)
        return built[variant]

    return build


@pytest.fixture
def fake_nvml(fake_nvml_build, tmp_path, monkeypatch) -> FakeNvml:
    """The fake loaded in this process (pynvml finds it) with a fresh state
    file named by $FAKE_NVML_STATE; NVML init state is reset afterwards."""
    lib_path = fake_nvml_build()
    state_path = tmp_path / "nvml-state.txt"
    write_state(state_path, FakeState())
    monkeypatch.setenv("FAKE_NVML_STATE", str(state_path))
    lib = preload(lib_path)
    lib.fakeNvmlReset()
    yield FakeNvml(lib_path, state_path, lib)
    lib.fakeNvmlReset()


@pytest.fixture
def fake_nvml_files(fake_nvml_build, tmp_path) -> FakeNvml:
    """The fake for child processes only (nothing loaded here)."""
    state_path = tmp_path / "nvml-state.txt"
    write_state(state_path, FakeState())
    return FakeNvml(fake_nvml_build(), state_path, None)


@pytest.fixture
def sleepers():
    """start(n) -> PIDs of real `sleep` processes, ended after the test."""
    procs: list[subprocess.Popen] = []

    def start(n: int = 1, seconds: int = 300) -> list[int]:
        new = [subprocess.Popen(["sleep", str(seconds)]) for _ in range(n)]
        procs.extend(new)
        for p in new:  # settled: exec'd into `sleep` and asleep (a test compares two reads)
            _settled(p.pid)
        return [p.pid for p in new]

    yield start
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def _settled(pid: int, timeout: float = 10.0) -> None:
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            proc = psutil.Process(pid)
            if proc.name() == "sleep" and proc.status() == psutil.STATUS_SLEEPING:
                return
        except psutil.Error:
            return
        time.sleep(0.005)


def gone_pid() -> int:
    """The PID of a process that has just exited (not visible any more)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid

"""NvmlSource through the REAL pynvml against the fake libnvidia-ml.so.1.

The fake (tests/fake_nvml/fake_nvml.c) is loaded into this process; pynvml's
own CDLL("libnvidia-ml.so.1") finds it. PIDs in the state files are real
processes started by the tests, so the psutil enrichment is real too.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakenvml import GiB, MiB, FakeGpu, FakeProcess, FakeState, gone_pid, subprocess_env
from vramscope.core.samples import GHOST, NOT_VISIBLE, VISIBLE
from vramscope.sources.nvml.nvml_source import NO_LIBRARY, NvmlSource
from vramscope.sources.machine.processes import ProcessCache


def one(frame, index=0):
    assert frame.error is None, frame.error
    return frame.gpus[index]


def procs_by_pid(gpu):
    return {p.pid: p for p in gpu.processes}


# -- memory ---------------------------------------------------------------------------


def test_memory_v2_reports_driver_reserved_separately(fake_nvml, source):
    fake_nvml.write(FakeState(gpus=[FakeGpu(total=24 * GiB, reserved=312 * MiB, used=5 * GiB)]))
    gpu = one(source.sample(time.time()))
    assert gpu.total == 24 * GiB
    assert gpu.reserved == 312 * MiB
    assert gpu.used == 5 * GiB
    assert gpu.free == 24 * GiB - 312 * MiB - 5 * GiB


@pytest.mark.parametrize("memory_v2", ["missing", "no"])
def test_driver_without_memory_v2_falls_back_to_v1_and_reserved_is_unknown(fake_nvml, source, memory_v2):
    fake_nvml.write(
        FakeState(gpus=[FakeGpu(total=24 * GiB, reserved=312 * MiB, used=5 * GiB, memory_v2=memory_v2)])
    )
    gpu = one(source.sample(time.time()))
    assert gpu.reserved is None  # not 0: v1 cannot tell
    assert gpu.used == 5 * GiB + 312 * MiB  # v1 counts the reserved memory as used
    assert gpu.total == 24 * GiB
    gpu = one(source.sample(time.time()))  # and it stays that way, without errors
    assert gpu.error is None and gpu.used == 5 * GiB + 312 * MiB


def test_fake_rejects_a_wrong_memory_struct_version_like_a_driver(fake_nvml):
    import pynvml

    fake_nvml.write(FakeState(gpus=[FakeGpu()]))
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_ArgumentVersionMismatch):
            pynvml.nvmlDeviceGetMemoryInfo(handle, version=0x01000028)
        assert pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2).reserved > 0
    finally:
        pynvml.nvmlShutdown()


# -- process lists ----------------------------------------------------------------------


def test_process_memory_not_available_is_none_never_zero(fake_nvml, source, sleepers):
    a, b = sleepers(2)
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(a, None), FakeProcess(b, 3 * GiB)])]))
    procs = procs_by_pid(one(source.sample(time.time())))
    assert procs[a].used is None
    assert procs[b].used == 3 * GiB


def test_process_in_both_lists_is_counted_once_with_the_larger_figure(fake_nvml, source, sleepers):
    a, b, c = sleepers(3)
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(
                    processes=[
                        FakeProcess(a, 1 * GiB, "compute"),
                        FakeProcess(a, 2 * GiB, "graphics"),
                        FakeProcess(b, None, "compute"),
                        FakeProcess(b, 700 * MiB, "graphics"),
                        FakeProcess(c, 64 * MiB, "graphics"),
                    ]
                )
            ]
        )
    )
    gpu = one(source.sample(time.time()))
    assert [p.pid for p in gpu.processes] == [a, b, c]
    procs = procs_by_pid(gpu)
    assert procs[a].used == 2 * GiB and procs[a].kinds == ("compute", "graphics")
    assert procs[b].used == 700 * MiB and procs[b].kinds == ("compute", "graphics")
    assert procs[c].used == 64 * MiB and procs[c].kinds == ("graphics",)


def test_process_lists_follow_the_buffer_too_small_protocol(fake_nvml, source):
    """The fake answers a short buffer like a driver does; the source still
    gets every process of a long list."""
    pids = list(range(5000, 5300))
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(p, MiB) for p in pids])]))
    lib = fake_nvml.lib
    import pynvml

    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        fn = lib.nvmlDeviceGetComputeRunningProcesses_v3
        count = ctypes.c_uint(0)
        assert fn(handle, ctypes.byref(count), None) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        assert count.value == 300
        small = (pynvml.c_nvmlProcessInfo_v3_t * 10)()
        count = ctypes.c_uint(10)
        assert fn(handle, ctypes.byref(count), small) == pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        assert count.value == 300
    finally:
        pynvml.nvmlShutdown()
    gpu = one(source.sample(time.time()))
    assert [p.pid for p in gpu.processes] == pids


def test_older_driver_without_v3_process_lists_uses_v2(fake_nvml, source, sleepers):
    (a,) = sleepers(1)
    fake_nvml.write(FakeState(gpus=[FakeGpu(process_api=2, processes=[FakeProcess(a, GiB)])]))
    gpu = one(source.sample(time.time()))
    assert [(p.pid, p.used) for p in gpu.processes] == [(a, GiB)]


def test_sm_utilization_per_process(fake_nvml, source, sleepers):
    a, b = sleepers(2)
    state = FakeState(
        gpus=[
            FakeGpu(processes=[FakeProcess(a, GiB, sm=87), FakeProcess(b, GiB, sm=None)]),
            FakeGpu(process_utilization=False, processes=[FakeProcess(a, GiB, sm=50)]),
        ]
    )
    fake_nvml.write(state)
    frame = source.sample(time.time())
    gpu0, gpu1 = procs_by_pid(one(frame, 0)), procs_by_pid(one(frame, 1))
    assert gpu0[a].sm == 87
    assert gpu0[b].sm == 0  # NVML gives no sample for a process without SM use
    assert gpu1[a].sm is None  # not supported: unknown, not 0
    frame = source.sample(time.time())  # next pass: only samples newer than the last seen
    assert procs_by_pid(one(frame, 0))[a].sm == 87


# -- psutil enrichment -------------------------------------------------------------------


@pytest.mark.parametrize("host_pids, missing", [(False, NOT_VISIBLE), (True, GHOST)])
def test_real_processes_are_enriched_and_unknown_pids_are_not_visible(
    fake_nvml, sleepers, host_pids, missing
):
    """A PID with no /proc entry is 'not visible' from a container's PID namespace,
    and 'no such process' (a ghost) where the monitor sees the host's PIDs."""
    source = NvmlSource(processes=ProcessCache(host_pids=host_pids), retry_interval=5.0)
    (a,) = sleepers(1)
    gone = gone_pid()
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(processes=[FakeProcess(a, GiB), FakeProcess(gone, MiB)]),
                FakeGpu(processes=[FakeProcess(a, 2 * GiB)]),
            ]
        )
    )
    frame = source.sample(time.time())
    proc = procs_by_pid(one(frame, 0))[a]
    real = psutil.Process(a)
    assert proc.info.visibility == VISIBLE
    assert proc.info.command == "sleep 300"
    assert proc.info.user == real.username()
    assert proc.info.start_time == real.create_time()
    assert procs_by_pid(one(frame, 1))[a].info == proc.info  # one lookup, shared
    ghost = procs_by_pid(one(frame, 0))[gone]
    assert ghost.info.visibility == missing and ghost.info.command is None
    assert ghost.used == MiB  # still shown with its memory
    assert frame.host_pids is host_pids
    source.close()


def test_each_distinct_pid_is_looked_up_once_per_pass(fake_nvml, sleepers):
    pids = sleepers(3)
    fake_nvml.write(
        FakeState(gpus=[FakeGpu(processes=[FakeProcess(p, MiB) for p in pids]) for _ in range(4)])
    )
    seen = []

    class Counting(ProcessCache):
        def lookup_many(self, many, stats=None):
            many = list(many)
            seen.append(many)
            return super().lookup_many(many, stats)

    src = NvmlSource(processes=Counting())
    try:
        src.sample(time.time())
    finally:
        src.close()
    assert len(seen) == 1 and sorted(seen[0]) == sorted(pids)


# -- failures ----------------------------------------------------------------------------


def test_lost_gpu_is_reported_while_the_others_keep_updating_and_comes_back(fake_nvml, source):
    state = FakeState(
        gpus=[
            FakeGpu(name="GPU A", used=1 * GiB),
            FakeGpu(name="GPU B", used=2 * GiB),
            FakeGpu(name="GPU C", used=3 * GiB),
        ]
    )
    fake_nvml.write(state)
    frame = source.sample(time.time())
    assert [g.error for g in frame.gpus] == [None, None, None]

    state.gpus[1].lost = True
    state.gpus[0].used = 4 * GiB
    state.gpus[2].used = 6 * GiB
    fake_nvml.write(state)
    frame = source.sample(time.time())
    assert frame.error is None
    lost = frame.gpus[1]
    assert lost.error == "GPU is lost"
    assert lost.name == "GPU B" and lost.used is None and lost.processes == ()
    assert (frame.gpus[0].used, frame.gpus[2].used) == (4 * GiB, 6 * GiB)
    assert frame.gpus[0].error is None and frame.gpus[2].error is None
    assert "GPU is lost" in source.gpu_errors(1).values()

    state.gpus[1].lost = False
    state.gpus[1].used = 7 * GiB
    fake_nvml.write(state)
    frame = source.sample(time.time())
    assert frame.gpus[1].error is None and frame.gpus[1].used == 7 * GiB


def test_gpu_lost_from_the_start_is_picked_up_when_it_answers(fake_nvml, source):
    state = FakeState(gpus=[FakeGpu(name="GPU A"), FakeGpu(name="GPU B", lost=True)])
    fake_nvml.write(state)
    frame = source.sample(time.time())
    assert frame.gpus[0].name == "GPU A" and frame.gpus[0].error is None
    assert frame.gpus[1].error == "GPU is lost" and frame.gpus[1].name is None
    state.gpus[1].lost = False
    fake_nvml.write(state)
    frame = source.sample(time.time())
    assert frame.gpus[1].name == "GPU B" and frame.gpus[1].error is None
    assert frame.gpus[1].uuid == state.gpu_uuid(1)


def test_no_driver_then_driver_appears_without_restart(fake_nvml):
    fake_nvml.write(FakeState(driver_loaded=False, gpus=[FakeGpu(name="Late GPU")]))
    src = NvmlSource(retry_interval=3.0)
    try:
        t0 = 1000.0
        frame = src.sample(t0)
        assert frame.gpus == () and "driver not loaded" in frame.error.lower()
        fake_nvml.write(FakeState(driver_loaded=True, gpus=[FakeGpu(name="Late GPU")]))
        frame = src.sample(t0 + 1)  # retries are rate-limited
        assert frame.error is not None and src.init_attempts == 1
        frame = src.sample(t0 + 3)
        assert frame.error is None and frame.gpus[0].name == "Late GPU"
        assert src.init_attempts == 2
    finally:
        src.close()
    assert fake_nvml.init_count == 0  # close() shut NVML down


def test_library_missing_then_installed_is_picked_up(fake_nvml_files, tmp_path):
    """No libnvidia-ml.so.1 at all: a plain message; once the library appears
    in the search path, the next retry finds it (a child process, since this
    one already has the fake loaded)."""
    empty = tmp_path / "lib"
    empty.mkdir()
    fake_nvml_files.write(FakeState(gpus=[FakeGpu(name="Installed GPU")]))
    script = textwrap.dedent(f"""
        import shutil
        from vramscope.sources.nvml.nvml_source import NvmlSource
        src = NvmlSource(retry_interval=2.0)
        first = src.sample(100.0)
        print(repr(first.error), len(first.gpus))
        shutil.copy({str(fake_nvml_files.lib_path)!r}, {str(empty / "libnvidia-ml.so.1")!r})
        second = src.sample(102.0)
        print(repr(second.error), [g.name for g in second.gpus])
        src.close()
    """)
    env = subprocess_env(empty, fake_nvml_files.state_path)
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    if "could not be loaded" not in r.stdout:
        pytest.skip("a real libnvidia-ml.so.1 is installed on this machine")
    first, second = r.stdout.splitlines()
    assert first == f"{NO_LIBRARY!r} 0"
    assert second == "None ['Installed GPU']"


def test_eight_gpus_by_a_hundred_processes(fake_nvml, source, sleepers):
    real = sleepers(20)
    gpus = []
    for g in range(8):
        procs = [
            FakeProcess(
                real[i % 20] if i < 20 else 100_000 + g * 1000 + i, (g * 100 + i + 1) * MiB, sm=i % 100
            )
            for i in range(100)
        ]
        gpus.append(FakeGpu(name=f"GPU {g}", used=g * GiB, processes=procs))
    fake_nvml.write(FakeState(gpus=gpus))
    frame = source.sample(time.time())
    assert frame.error is None and len(frame.gpus) == 8
    for g, gpu in enumerate(frame.gpus):
        assert gpu.name == f"GPU {g}" and gpu.used == g * GiB
        assert len(gpu.processes) == 100
        assert sum(p.used for p in gpu.processes) == sum((g * 100 + i + 1) * MiB for i in range(100))
        assert gpu.processes[0].info.command == "sleep 300"
        assert gpu.processes[50].info.visibility in (NOT_VISIBLE, GHOST)


def test_state_file_round_trips_through_the_c_fake(fake_nvml):
    """What a state file says is what pynvml reads (spot check of every field)."""
    import pynvml

    state = FakeState(
        driver_version="535.161.07",
        cuda_driver_version=12020,
        gpus=[
            FakeGpu(
                name="NVIDIA A100-SXM4-80GB",
                total=80 * GiB,
                reserved=600 * MiB,
                used=10 * GiB,
                utilization=(93, 41),
                temperature=71,
                power_mw=312_500,
                power_limit_mw=400_000,
                processes=[FakeProcess(42, None, "graphics", sm=5)],
            )
        ],
    )
    fake_nvml.write(state)
    pynvml.nvmlInit()
    try:
        assert pynvml.nvmlSystemGetDriverVersion() == "535.161.07"
        assert pynvml.nvmlSystemGetCudaDriverVersion() == 12020
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        assert pynvml.nvmlDeviceGetName(h) == "NVIDIA A100-SXM4-80GB"
        assert pynvml.nvmlDeviceGetUUID(h) == state.gpu_uuid(0)
        assert pynvml.nvmlDeviceGetPciInfo(h).busId == state.gpu_pci(0)
        u = pynvml.nvmlDeviceGetUtilizationRates(h)
        assert (u.gpu, u.memory) == (93, 41)
        assert pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU) == 71
        assert pynvml.nvmlDeviceGetPowerUsage(h) == 312_500
        assert pynvml.nvmlDeviceGetEnforcedPowerLimit(h) == 400_000
        assert pynvml.nvmlDeviceGetComputeRunningProcesses_v3(h) == []
        [p] = pynvml.nvmlDeviceGetGraphicsRunningProcesses_v3(h)
        assert (p.pid, p.usedGpuMemory) == (42, None)
    finally:
        pynvml.nvmlShutdown()


# -- the state file format ------------------------------------------------------------------

_names = (
    st.text(
        alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 -_.()"), min_size=1, max_size=60
    )
    .map(str.strip)
    .filter(bool)
)
_bytes = st.integers(min_value=0, max_value=2**62)
_pct = st.integers(min_value=0, max_value=100)
_opt_u32 = st.none() | st.integers(min_value=0, max_value=2**32 - 1)
_procs = st.lists(
    st.builds(
        FakeProcess,
        pid=st.integers(1, 2**22),
        used=st.none() | _bytes,
        kind=st.sampled_from(["compute", "graphics"]),
        sm=st.none() | _pct,
    ),
    max_size=8,
)
_gpus = st.builds(
    FakeGpu,
    name=_names,
    total=_bytes,
    reserved=_bytes,
    used=_bytes,
    free=_bytes,
    memory_v2=st.sampled_from(["yes", "no", "missing"]),
    utilization=st.none() | st.tuples(_pct, _pct),
    temperature=_opt_u32,
    power_mw=_opt_u32,
    power_limit_mw=_opt_u32,
    process_utilization=st.booleans(),
    process_api=st.sampled_from([2, 3]),
    lost=st.booleans(),
    processes=_procs,
)
_states = st.builds(
    FakeState,
    gpus=st.lists(_gpus, max_size=4),
    driver_loaded=st.booleans(),
    driver_version=_names,
    nvml_version=_names,
    cuda_driver_version=st.integers(0, 99999),
)


@settings(deadline=None)  # a state file written and parsed: slow on a loaded box, not wrong
@given(_states)
def test_state_writer_and_parser_round_trip(state):
    text = state.to_text()
    back = FakeState.parse(text)
    assert back.to_text() == text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=_states.filter(lambda s: s.driver_loaded))
def test_c_fake_reads_what_the_writer_wrote(fake_nvml, state):
    import pynvml

    fake_nvml.write(state)
    pynvml.nvmlInit()
    try:
        assert pynvml.nvmlDeviceGetCount() == len(state.gpus)
        for i, g in enumerate(state.gpus):
            if g.lost:
                with pytest.raises(pynvml.NVMLError_GpuIsLost):
                    pynvml.nvmlDeviceGetHandleByIndex(i)
                continue
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            assert pynvml.nvmlDeviceGetName(h) == g.name
            m = pynvml.nvmlDeviceGetMemoryInfo(h)
            assert (m.total, m.free) == (g.total, g.free_bytes())
            compute = [(p.pid, p.used) for p in g.processes if p.kind == "compute"]
            listed = (
                pynvml.nvmlDeviceGetComputeRunningProcesses_v3(h)
                if g.process_api == 3
                else pynvml.nvmlDeviceGetComputeRunningProcesses_v2(h)
            )
            assert [(p.pid, p.usedGpuMemory) for p in listed] == compute
    finally:
        pynvml.nvmlShutdown()


def test_preloaded_fake_is_what_pynvml_loads(fake_nvml):
    import pynvml

    pynvml.nvmlInit()
    try:
        assert pynvml.nvmlLib._handle == fake_nvml.lib._handle
        assert os.path.samefile(fake_nvml.lib_path, fake_nvml.lib._name)
    finally:
        pynvml.nvmlShutdown()

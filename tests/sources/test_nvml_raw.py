"""The process lists and SM samples read raw (sources/nvml/nvml_raw.py) give what
pynvml's public calls give, through the REAL pynvml against the fake
libnvidia-ml.so.1: the same entries, the same errors, and pynvml's own call
where its private function lookup is missing or differs."""

from __future__ import annotations

import ctypes
import time
import types

import pynvml
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakenvml import GiB, MiB, FakeGpu, FakeProcess, FakeState
from vramscope.sources.nvml import nvml_source as nvml_module
from vramscope.sources.nvml.nvml_source import NvmlSource
from vramscope.sources.nvml.nvml_raw import (
    LIST_FIELDS,
    SAMPLE_FIELDS,
    ProcessListRead,
    RawReads,
    UtilizationRead,
    row_format,
)

LISTS = [
    f"nvmlDeviceGet{kind}RunningProcesses_{version}"
    for kind in ("Compute", "Graphics")
    for version in ("v3", "v2")
]


@pytest.fixture
def nvml(fake_nvml):
    pynvml.nvmlInit()
    yield pynvml
    pynvml.nvmlShutdown()


def public_list(name, handle):
    return [(e.pid, e.usedGpuMemory) for e in getattr(pynvml, name)(handle)]


def outcome(fn, *args):
    """What a call answers: its value, or the NVML error code it raises."""
    try:
        return fn(*args)
    except pynvml.NVMLError as exc:
        return ("NVMLError", exc.value)


def without_private_lookup():
    """pynvml as a release without ``_nvmlGetFunctionPointer`` would be."""
    module = types.ModuleType("pynvml")
    module.__dict__.update(vars(pynvml))
    del module._nvmlGetFunctionPointer
    return module


# -- the layout: one struct format per pynvml structure ---------------------------------

U32, U64 = st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1)


@given(st.lists(st.tuples(U32, U64, U32, U32), max_size=30))
def test_process_entries_unpack_as_their_attributes_read(values):
    for struct_type in (pynvml.c_nvmlProcessInfo_v3_t, pynvml.c_nvmlProcessInfo_v2_t):
        array = (struct_type * max(1, len(values)))()
        for item, (pid, used, gi, ci) in zip(array, values):
            item.pid, item.usedGpuMemory, item.gpuInstanceId, item.computeInstanceId = pid, used, gi, ci
        rows = row_format(struct_type, LIST_FIELDS)
        size = ctypes.sizeof(struct_type)
        got = list(rows.iter_unpack(ctypes.string_at(array, len(values) * size)))
        assert got == [(pid, used) for pid, used, _gi, _ci in values]


@given(st.lists(st.tuples(U32, U64, U32, U32), max_size=30))
def test_utilisation_samples_unpack_as_their_attributes_read(values):
    struct_type = pynvml.c_nvmlProcessUtilizationSample_t
    array = (struct_type * max(1, len(values)))()
    for item, (pid, stamp, sm, mem) in zip(array, values):
        item.pid, item.timeStamp, item.smUtil, item.memUtil = pid, stamp, sm, mem
    rows = row_format(struct_type, SAMPLE_FIELDS)
    got = list(rows.iter_unpack(ctypes.string_at(array, len(values) * ctypes.sizeof(struct_type))))
    assert got == [(pid, stamp, sm) for pid, stamp, sm, _mem in values]


def test_a_layout_it_cannot_read_gives_no_format():
    class Named(ctypes.Structure):
        _fields_ = [("pid", ctypes.c_char * 4), ("usedGpuMemory", ctypes.c_ulonglong)]

    class Swapped(ctypes.Structure):
        _fields_ = [("usedGpuMemory", ctypes.c_ulonglong), ("pid", ctypes.c_uint)]

    assert row_format(Named, LIST_FIELDS) is None
    assert row_format(Swapped, LIST_FIELDS) is None  # fields not in the order asked
    assert row_format(pynvml.c_nvmlMemory_t, LIST_FIELDS) is None  # no such fields


# -- against the fake: the same answers as pynvml's calls -------------------------------

ENTRY = st.tuples(st.integers(1, 4_000_000), st.one_of(st.none(), st.integers(0, 2**40)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    compute=st.lists(ENTRY, max_size=40),
    graphics=st.lists(ENTRY, max_size=10),
    api=st.sampled_from([3, 2]),
)
def test_raw_lists_answer_what_pynvml_answers(fake_nvml, compute, graphics, api):
    """Any lists (a PID twice, "not available" figures, none at all), either
    driver generation: every call answers the same entries, or the same error."""
    processes = [FakeProcess(pid, used, "compute") for pid, used in compute]
    processes += [FakeProcess(pid, used, "graphics") for pid, used in graphics]
    fake_nvml.write(FakeState(gpus=[FakeGpu(process_api=api, processes=processes)]))
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        reads = RawReads(pynvml)
        for name in LISTS:
            raw = outcome(reads.process_list(name), handle)
            assert raw == outcome(public_list, name, handle)
            if raw and raw[0] == "NVMLError":
                assert name.endswith("_v3") and api == 2 and raw[1] == pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
        assert outcome(reads.process_list(LISTS[0 if api == 3 else 1]), handle) == compute
    finally:
        pynvml.nvmlShutdown()


def test_a_list_longer_than_any_first_buffer_is_read_whole(nvml, fake_nvml):
    pids = list(range(5000, 5500))  # 500: the fake's most per list
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(p, p * MiB) for p in pids])]))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    name = "nvmlDeviceGetComputeRunningProcesses_v3"
    entries = ProcessListRead(nvml, name)(handle)
    assert entries == [(p, p * MiB) for p in pids] == public_list(name, handle)


@pytest.mark.parametrize("counted, listed", [(100, 205), (100, 206), (0, 5)])
def test_processes_started_between_the_two_calls_are_handled_as_pynvml_does(
    nvml, fake_nvml, monkeypatch, counted, listed
):
    """The list grows between the call that counts and the call that fills:
    a buffer of count * 2 + 5 entries holds it or the call fails with
    NVML_ERROR_INSUFFICIENT_SIZE -- raw and public alike."""
    fake_nvml.write(
        FakeState(gpus=[FakeGpu(processes=[FakeProcess(p, GiB) for p in range(7000, 7000 + listed)])])
    )
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    lookup = pynvml._nvmlGetFunctionPointer

    def growing(name):
        real = lookup(name)
        if "RunningProcesses" not in name:
            return real

        def call(device, count, buffer):
            ret = real(device, count, buffer)
            if buffer is None and ret == pynvml.NVML_ERROR_INSUFFICIENT_SIZE:
                count._obj.value = counted  # fewer when counted than when filled
            return ret

        return call

    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer", growing)
    name = "nvmlDeviceGetComputeRunningProcesses_v3"
    raw = outcome(ProcessListRead(pynvml, name), handle)
    assert raw == outcome(public_list, name, handle)
    if listed <= counted * 2 + 5:
        assert [pid for pid, _used in raw] == list(range(7000, 7000 + listed))
    else:
        assert raw == ("NVMLError", pynvml.NVML_ERROR_INSUFFICIENT_SIZE)


def test_raw_samples_answer_what_pynvml_answers(nvml, fake_nvml):
    fake_nvml.write(
        FakeState(
            gpus=[
                FakeGpu(
                    processes=[FakeProcess(11, GiB, sm=87), FakeProcess(12, GiB), FakeProcess(13, MiB, sm=3)]
                    + [FakeProcess(11, MiB, "graphics", sm=50), FakeProcess(14, MiB, "graphics", sm=9)]
                ),
                FakeGpu(processes=[FakeProcess(11, GiB)]),  # no process uses the SMs
                FakeGpu(process_utilization=False, processes=[FakeProcess(11, GiB, sm=5)]),
            ]
        )
    )
    utilization = RawReads(nvml).utilization
    busy, idle, unsupported = (nvml.nvmlDeviceGetHandleByIndex(i) for i in range(3))
    before = int(time.time() * 1e6)
    pids, sms, stamps = utilization(busy, 0)
    public = UtilizationRead.public(nvml.nvmlDeviceGetProcessUtilization(busy, 0))
    assert (pids, sms) == (public[0], public[1]) == ([11, 13, 14], [87, 3, 9])
    assert all(stamp >= before for stamp in stamps)
    assert outcome(utilization, busy, int(time.time() * 1e6) + 10**9) == (
        "NVMLError",
        pynvml.NVML_ERROR_NOT_FOUND,
    )  # nothing newer than the last seen
    for handle, code in ((idle, pynvml.NVML_ERROR_NOT_FOUND), (unsupported, pynvml.NVML_ERROR_NOT_SUPPORTED)):
        assert outcome(utilization, handle, 0) == ("NVMLError", code)
        assert outcome(nvml.nvmlDeviceGetProcessUtilization, handle, 0) == ("NVMLError", code)


# -- pynvml's own calls where its private lookup is missing or differs ------------------


def test_without_the_private_lookup_the_public_calls_answer(nvml, fake_nvml):
    fake_nvml.write(
        FakeState(gpus=[FakeGpu(processes=[FakeProcess(21, GiB, sm=40), FakeProcess(22, None, "graphics")])])
    )
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    reads = RawReads(without_private_lookup())
    assert reads.process_list("nvmlDeviceGetComputeRunningProcesses_v3")(handle) == [(21, GiB)]
    assert reads.process_list("nvmlDeviceGetGraphicsRunningProcesses_v3")(handle) == [(22, None)]
    pids, sms, _stamps = reads.utilization(handle, 0)
    assert (pids, sms) == ([21], [40])
    assert reads.process_list("nvmlDeviceGetComputeRunningProcesses_v9") is None  # no such call


def test_a_private_lookup_that_differs_is_tried_once_then_the_public_call_answers(nvml, fake_nvml):
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(31, GiB, sm=12)])]))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    module = without_private_lookup()
    tried = []

    def other_signature(*args):  # as another release might have it
        tried.append(args)
        raise TypeError("_nvmlGetFunctionPointer() takes (library, name)")

    module._nvmlGetFunctionPointer = other_signature
    reads = RawReads(module)
    name = "nvmlDeviceGetComputeRunningProcesses_v3"
    for _ in range(3):
        assert reads.process_list(name)(handle) == [(31, GiB)]
        assert reads.utilization(handle, 0)[:2] == ([31], [12])
    assert len(tried) == 2  # once for the list, once for the samples


def test_a_lost_gpu_is_not_available_through_the_raw_reads(nvml, fake_nvml):
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(41, GiB, sm=1)])]))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    fake_nvml.write(FakeState(gpus=[FakeGpu(lost=True, processes=[FakeProcess(41, GiB, sm=1)])]))
    reads = RawReads(nvml)
    lost = ("NVMLError", pynvml.NVML_ERROR_GPU_IS_LOST)
    assert outcome(reads.process_list("nvmlDeviceGetComputeRunningProcesses_v3"), handle) == lost
    assert outcome(reads.utilization, handle, 0) == lost


# -- the pass: the same frame, raw or through pynvml's calls ----------------------------


def test_a_pass_reports_the_same_whether_read_raw_or_through_pynvml(fake_nvml, sleepers, monkeypatch):
    a, b, c = sleepers(3)
    busy = [
        FakeProcess(a, GiB, sm=40),
        FakeProcess(a, 2 * GiB),  # listed twice: the larger figure
        FakeProcess(b, None),  # not available: None, never 0
        FakeProcess(b, 700 * MiB, "graphics", sm=7),
        FakeProcess(c, 64 * MiB, "graphics"),
    ]
    other = FakeGpu(processes=[FakeProcess(c, 3 * GiB, sm=99)])
    no_sm = FakeGpu(process_utilization=False, processes=[FakeProcess(a, MiB, sm=5)])
    lost = FakeGpu(lost=True, processes=[FakeProcess(b, GiB)])
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=busy), other, no_sm, lost]))
    raw = NvmlSource(retry_interval=5.0)
    raw.sample(time.time())  # initialised with the raw reads
    monkeypatch.setattr(nvml_module, "RawReads", lambda module: RawReads(without_private_lookup()))
    public = NvmlSource(retry_interval=5.0)
    try:

        def seen(frame):
            return [
                (g.error, [(p.pid, p.used, p.kinds, p.sm, p.mig_uuid) for p in g.processes])
                for g in frame.gpus
            ]

        for _ in range(2):
            now = time.time()
            got = seen(raw.sample(now))
            assert got == seen(public.sample(now))
        assert got[0][1] == [
            (a, 2 * GiB, ("compute",), 40, None),
            (b, 700 * MiB, ("compute", "graphics"), 7, None),
            (c, 64 * MiB, ("graphics",), 0, None),
        ]
        assert got[1][1] == [(c, 3 * GiB, ("compute",), 99, None)]
        assert got[2][1] == [(a, MiB, ("compute",), None, None)]  # no per-process SM: unknown
        assert got[3][0] and not got[3][1]  # lost
    finally:
        raw.close()
        public.close()

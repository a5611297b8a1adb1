"""What one NVML pass hands on, pass after pass: frozen values that stay the
same objects while nothing about a process changed, and are new values with
the new figures as soon as something did (real pynvml against the fake
libnvidia-ml.so.1, real processes for the host side)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenvml import GiB, MiB, FakeGpu, FakeProcess, FakeState
from vramscope.sources.nvml import nvml_processes
from vramscope.sources.nvml.nvml_source import NvmlSource
from vramscope.sources.nvml.nvml_raw import UtilizationRead


@pytest.fixture
def source(fake_nvml):
    src = NvmlSource(retry_interval=5.0)
    yield src
    src.close()


def by_pid(gpu):
    return {p.pid: p for p in gpu.processes}


def test_an_unchanged_gpu_hands_on_the_same_values_and_a_moved_figure_only_that_process_anew(
    fake_nvml, source, sleepers
):
    a, b, c = sleepers(3)
    state = FakeState(
        gpus=[
            FakeGpu(processes=[FakeProcess(a, GiB, sm=40), FakeProcess(b, 2 * GiB), FakeProcess(c, None)]),
            FakeGpu(processes=[FakeProcess(a, MiB)]),
        ]
    )
    fake_nvml.write(state)
    source.sample(time.time())  # the first pass has no host CPU figure yet
    first = source.sample(time.time())
    second = source.sample(time.time())
    assert second.gpus[0].processes is first.gpus[0].processes
    assert second.gpus[1] is first.gpus[1]  # nothing about GPU 1 changed: the same sample

    moved = dataclasses.replace(
        state,
        gpus=[
            FakeGpu(processes=[FakeProcess(a, GiB, sm=40), FakeProcess(b, 3 * GiB), FakeProcess(c, None)]),
            FakeGpu(processes=[FakeProcess(a, MiB)]),
        ],
    )
    fake_nvml.write(moved)
    third = source.sample(time.time())
    before, after = by_pid(second.gpus[0]), by_pid(third.gpus[0])
    assert after[b].used == 3 * GiB and before[b].used == 2 * GiB  # the old value is left as it was
    assert after[b].info is before[b].info and after[b].identity == before[b].identity
    assert after[a] is before[a] and after[c] is before[c]
    assert after[c].used is None  # still "not available", never 0
    assert [p.pid for p in third.gpus[0].processes] == [a, b, c]


def test_a_process_leaving_and_a_new_one_arriving_change_the_list(fake_nvml, source, sleepers):
    a, b, c = sleepers(3)
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(a, GiB), FakeProcess(b, GiB)])]))
    source.sample(time.time())  # the first pass has no host CPU figure yet
    first = source.sample(time.time())
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(a, GiB), FakeProcess(c, GiB)])]))
    second = source.sample(time.time())
    assert [p.pid for p in second.gpus[0].processes] == [a, c]
    assert by_pid(second.gpus[0])[a] is by_pid(first.gpus[0])[a]
    assert by_pid(second.gpus[0])[c].info.pid == c


def test_host_cpu_of_a_busy_process_moves_while_its_gpu_figures_stay(fake_nvml, source):
    busy = subprocess.Popen(
        [sys.executable, "-c", "print('up', flush=True)\nwhile True: pass"], stdout=subprocess.PIPE, text=True
    )
    try:
        # past its start-up (reading its modules it may be in disk sleep: another status, so
        # another description); from here its state is running, whatever the load
        assert busy.stdout.readline().strip() == "up"
        fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(busy.pid, GiB)])]))
        first = source.sample(time.time())
        assert first.gpus[0].processes[0].cpu_percent is None  # no figure before a second pass
        time.sleep(0.5)
        second = source.sample(time.time())
        proc = second.gpus[0].processes[0]
        assert proc.cpu_percent is not None and proc.cpu_percent > 5
        assert proc.host_memory and proc.host_memory > 0
        assert proc.info is first.gpus[0].processes[0].info
    finally:
        busy.kill()
        busy.wait()
        busy.stdout.close()


def test_sm_of_a_process_whose_samples_stop_falls_to_zero_after_the_window(
    fake_nvml, source, sleepers, monkeypatch
):
    monkeypatch.setattr(nvml_processes, "SM_SAMPLE_WINDOW", 0.3)
    (a,) = sleepers(1)
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(a, GiB, sm=70)])]))
    assert source.sample(time.time()).gpus[0].processes[0].sm == 70
    fake_nvml.write(FakeState(gpus=[FakeGpu(processes=[FakeProcess(a, GiB, sm=None)])]))
    assert source.sample(time.time()).gpus[0].processes[0].sm == 70  # its last sample is recent
    time.sleep(0.5)
    assert source.sample(time.time()).gpus[0].processes[0].sm == 0


def test_a_gpu_without_per_process_utilisation_keeps_sm_unknown_pass_after_pass(fake_nvml, source, sleepers):
    (a,) = sleepers(1)
    fake_nvml.write(
        FakeState(gpus=[FakeGpu(process_utilization=False, processes=[FakeProcess(a, GiB, sm=50)])])
    )
    for _ in range(3):
        assert source.sample(time.time()).gpus[0].processes[0].sm is None


# -- the utilisation samples as columns -------------------------------------------------

SAMPLE = st.tuples(
    st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1)
)  # pid, timeStamp, smUtil


@given(st.lists(SAMPLE, min_size=1, max_size=40), st.integers(0, 5), st.data())
def test_sample_columns_match_the_fields_however_the_samples_come(values, spare, data):
    import pynvml

    array = (pynvml.c_nvmlProcessUtilizationSample_t * (len(values) + spare))()
    for item, (pid, ts, sm) in zip(array, values):
        item.pid, item.timeStamp, item.smUtil = pid, ts, sm
    n = len(values)
    shape = data.draw(st.sampled_from(["slice", "offset slice", "picked", "plain objects"]))
    if shape == "slice":  # what pynvml answers
        samples = array[0:n]
    elif shape == "offset slice":
        samples = array[1 : n + 1] if spare else array[0:n]
    elif shape == "picked":
        samples = [array[i] for i in data.draw(st.permutations(range(n)))]
    else:
        samples = [types.SimpleNamespace(pid=p, timeStamp=t, smUtil=s) for p, t, s in values]
    pids, sms, stamps = UtilizationRead.public(samples)
    assert list(pids) == [s.pid for s in samples]
    assert list(sms) == [s.smUtil for s in samples]
    assert list(stamps) == [s.timeStamp for s in samples]

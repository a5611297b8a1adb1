"""One read of /proc/<pid>/stat per process and pass, shared by the process
cache (identity, status, parent) and the host figures (CPU, resident memory)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.samples import EXITED, VISIBLE
from vramscope.sources.machine.host_usage import HostUsage
from vramscope.sources.machine.proc_stat import STATES, StatReader, parse_stat, read_stat
from vramscope.sources.machine.processes import ProcessCache


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_process_that_exits_reads_as_gone_and_its_file_is_closed(sleepers):
    (pid,) = sleepers(1)
    reader = StatReader()
    before = open_fds()
    first = reader.read_many([pid])[pid]
    assert first is not None and first.status in ("sleeping", "running")
    assert open_fds() == before + 1  # held for the next pass
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    assert reader.read_many([pid]) == {pid: None}
    assert open_fds() == before


def test_files_of_processes_no_longer_asked_for_are_closed(sleepers):
    pids = sleepers(3)
    reader = StatReader()
    before = open_fds()
    reader.read_many(pids)
    assert open_fds() == before + 3
    reader.read_many(pids[:1])
    assert open_fds() == before + 1
    reader.close()
    assert open_fds() == before


def test_at_most_keep_files_are_held_and_the_rest_are_still_read(sleepers):
    pids = sleepers(4)
    reader = StatReader(keep=2)
    before = open_fds()
    got = reader.read_many(pids)
    assert all(got[p] is not None for p in pids)
    assert open_fds() == before + 2
    again = reader.read_many(pids)  # the same processes, held or not
    assert {p: (s.start_ticks, s.ppid) for p, s in again.items()} == {
        p: (s.start_ticks, s.ppid) for p, s in got.items()
    }
    reader.close()


def test_a_held_file_gives_the_figures_a_fresh_read_gives():
    busy = subprocess.Popen([sys.executable, "-c", "b = bytearray(32 << 20)\nwhile True: pass"])
    try:
        deadline = time.monotonic() + 10
        while read_stat(busy.pid).rss < 32 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)  # until it holds its 32 MiB
        reader = StatReader()
        reader.read_many([busy.pid])
        held = reader.read_many([busy.pid])[busy.pid]
        fresh = read_stat(busy.pid)
        assert held.start_ticks == fresh.start_ticks and held.ppid == fresh.ppid == os.getpid()
        assert held.cpu_seconds <= fresh.cpu_seconds
        assert fresh.rss >= 32 << 20
        reader.close()
    finally:
        busy.kill()
        busy.wait()


COMM = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\n"), min_size=0, max_size=15
)


@given(
    COMM,
    st.sampled_from(sorted(STATES)),
    st.integers(0, 2**22),
    st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.integers(0, 2**50),
    st.integers(0, 2**30),
)
def test_parse_stat_reads_the_fields_whatever_the_command_name(comm, state, ppid, utime, stime, start, rss):
    # proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    # utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss ...
    fields = [
        state,
        ppid,
        1,
        1,
        0,
        -1,
        4194304,
        5,
        0,
        0,
        0,
        utime,
        stime,
        0,
        0,
        20,
        0,
        1,
        0,
        start,
        8192,
        rss,
    ]
    line = f"42 ({comm}) " + " ".join(map(str, fields)) + " 18446744073709551615 1 1 0 0 0\n"
    got = parse_stat(line.encode("utf-8", "surrogateescape"))
    page = os.sysconf("SC_PAGE_SIZE")
    tick = os.sysconf("SC_CLK_TCK")
    assert got is not None
    assert (got.status, got.ppid, got.start_ticks, got.rss) == (STATES[state], ppid, start, rss * page)
    assert got.cpu_seconds == (utime + stime) / tick


@given(st.binary(max_size=300))
def test_parse_stat_never_raises_on_garbage(data):
    got = parse_stat(data)
    assert got is None or got.ppid >= 0


def test_host_figures_come_from_the_pass_read_without_reading_again():
    def no_read(pid):
        raise AssertionError("read again")

    usage = HostUsage(clock=iter([0.0, 2.0]).__next__, reader=no_read)
    first = parse_stat(b"7 (x) S 1 1 1 0 -1 0 0 0 0 0 100 0 0 0 20 0 1 0 5 0 10")
    later = parse_stat(b"7 (x) S 1 1 1 0 -1 0 0 0 0 0 300 0 0 0 20 0 1 0 5 0 10")
    assert usage.read([7], {7: first})[7][0] is None  # no CPU figure on the first pass
    percent, rss = usage.read([7], {7: later})[7]
    tick = os.sysconf("SC_CLK_TCK")
    assert percent == round(100.0 * (200 / tick) / 2.0, 1)
    assert rss == 10 * os.sysconf("SC_PAGE_SIZE")


def test_a_pid_gone_in_the_pass_read_has_no_host_figures_not_zeros():
    usage = HostUsage(reader=lambda pid: (1.0, 1))
    assert usage.read([7], {7: None}) == {7: (None, None)}


def test_the_cache_reads_a_process_gone_in_the_pass_read_as_exited(sleepers):
    (pid,) = sleepers(1)
    cache = ProcessCache(host_pids=False)  # a container's view: a missing PID proves nothing
    reader = StatReader()
    first = cache.lookup_many([pid], reader.read_many([pid]))[pid]
    assert first.visibility == VISIBLE
    assert cache.lookup_many([pid], reader.read_many([pid]))[pid] is first  # nothing changed
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    gone = cache.lookup_many([pid], reader.read_many([pid]))[pid]
    assert gone.visibility == EXITED and gone.status == "exited"
    assert gone.command == first.command  # what it was is kept

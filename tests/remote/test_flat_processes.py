"""Stream version 4: each process one flat JSON object of atoms
(core/stream/flat_processes.py). Whatever a process holds comes back exactly,
through whole frames and deltas; a stranger's object of the wrong shape is
refused with one line, as the codec refuses one; a version 3 stream is still
read; and a message of many processes no longer makes the window's garbage
collector track objects per process."""

from __future__ import annotations

import collections
import dataclasses
import gc
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remote.test_stream_deltas import read, wire
from remote.test_stream_protocol import argument, opt_float, opt_int, opt_text
from vramscope.core.processes.process_text import MAX_COMMAND_CHARS
from vramscope.core.samples import Container, Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.processes.slurm_jobs import SlurmJob
from vramscope.core.stream import flat_processes, protocol
from vramscope.core.stream.codec import LIMIT_FLOAT, MAX_TEXT
from vramscope.core.stream.delta_reader import FrameAssembler
from vramscope.core.stream.deltas import FrameDiffer
from vramscope.core.stream.flat_processes import INFO_PREFIX, process_from_wire, process_to_wire

unicode_argument = st.one_of(
    argument, st.sampled_from(["", " ", "日本語", "--név=é", "a b", "\U0001f600", "\\0"])
)
containers = st.builds(
    Container,
    runtime=st.sampled_from(["docker", "podman", "cri"]),
    id=opt_text,
    name=opt_text,
    pod=opt_text,
    namespace=opt_text,
)
infos = st.builds(
    ProcessInfo,
    pid=st.integers(1, 12),
    start_time=opt_float,
    user=opt_text,
    name=opt_text,
    cmdline=st.none() | st.lists(unicode_argument, max_size=4).map(tuple),  # () and None apart
    ppid=st.none() | st.integers(0, 9999),
    status=opt_text,
    visibility=st.sampled_from(["ok", "access-denied", "exited", "not-visible", "no-such-process"]),
    parent_alive=st.none() | st.booleans(),
    container=st.none() | containers,
    ns_pid=st.none() | st.integers(1, 2**22),
    notebook=opt_text,
    slurm=st.none()
    | st.builds(
        SlurmJob, st.integers(1, 2**32), opt_text, st.none() | st.integers(0, 2**31), opt_text, opt_text
    ),
)
procs = st.builds(
    GpuProcess,
    pid=st.integers(1, 12),
    used=opt_int,
    kinds=st.lists(st.sampled_from(["compute", "graphics", "", "é"]), max_size=3).map(tuple),
    sm=st.none() | st.integers(0, 100),
    info=st.none() | infos,
    has_agent=st.booleans(),
    mig_uuid=st.none() | st.sampled_from(["MIG-a", "MIG-b"]),
    cpu_percent=st.none() | st.floats(0, 6400),
    host_memory=opt_int,
)
gpus = st.builds(
    GpuSample,
    index=st.integers(0, 3),
    used=opt_int,
    processes=st.lists(procs, max_size=6, unique_by=lambda p: (p.pid, p.mig_uuid)).map(tuple),
)
frames = st.builds(
    Frame,
    time=st.floats(0, 2e9),
    gpus=st.lists(gpus, max_size=3, unique_by=lambda g: g.index).map(tuple),
)


def flat(proc: GpuProcess) -> dict:
    return process_to_wire(proc, None if proc.info is None else flat_processes.info_to_wire(proc.info))


@settings(max_examples=300, deadline=None)
@given(procs)
def test_a_process_survives_the_wire_exactly(proc):
    on_wire = wire(flat(proc))
    assert process_from_wire(on_wire) == proc
    assert on_wire == wire(
        flat_processes._process_fields(proc, None)
    )  # the hand-written writer is the class's
    nested = [k for k, v in on_wire.items() if isinstance(v, (dict, list))]
    # atoms only, but for a container and a Slurm job
    assert set(nested) <= {INFO_PREFIX + "container", INFO_PREFIX + "slurm"}


@settings(max_examples=150, deadline=None)
@given(st.lists(frames, min_size=1, max_size=6), st.integers(2, 4))
def test_whole_frames_and_deltas_give_the_reader_the_writers_frames_exactly(stream, keyframe_every):
    writer, reader = FrameDiffer(keyframe_every=keyframe_every), FrameAssembler()
    for frame in stream:
        got, _alerts = read(reader, writer.message(frame, []))
        assert got == frame


def test_an_empty_command_line_and_none_stay_apart_and_every_argument_keeps_its_place():
    for argv in [None, (), ("",), ("", ""), ("python", "", "日本語 x")]:
        proc = GpuProcess(pid=1, used=1, info=ProcessInfo(pid=1, cmdline=argv))
        assert process_from_wire(wire(flat(proc))).info.cmdline == argv
    # a NUL within an argument (none comes from a kernel) cannot split it in two
    odd = GpuProcess(pid=1, used=1, kinds=("a\0b",), info=ProcessInfo(pid=1, cmdline=("x\0y", "z")))
    back = process_from_wire(wire(flat(odd)))
    assert back.info.cmdline == ("x\ufffdy", "z") and back.kinds == ("a\ufffdb",)


def test_an_unchanged_description_is_the_same_object_in_the_next_delta_and_keyframe():
    def frame(k: int, user: str = "ann") -> Frame:
        info = ProcessInfo(pid=7, start_time=1.6e9, user=user, cmdline=("python", "train.py"))
        # a kind that changes makes the process travel whole in the delta (not as figures)
        kinds = ("compute",) if k % 2 else ("compute", "graphics")
        return Frame(
            time=float(k), gpus=(GpuSample(index=0, processes=(GpuProcess(7, k, kinds, info=info),)),)
        )

    # (the reader holds a description as a row of its fields: core/processes/process_columns.py)
    writer, reader = FrameDiffer(keyframe_every=4), FrameAssembler()
    seen = [read(reader, writer.message(frame(k), []))[0].gpus[0].processes for k in range(6)]
    assert [p[0].used for p in seen] == list(range(6))
    assert all(p.infos[0] is seen[0].infos[0] for p in seen)  # deltas 1-3, the keyframe at 4, the delta at 5
    changed = read(reader, writer.message(frame(6, user="bob"), []))[0].gpus[0].processes
    assert changed[0].info.user == "bob" and changed.infos[0] is not seen[0].infos[0]


def test_a_version_3_stream_of_nested_processes_is_still_read():
    frame = Frame(
        time=1.0,
        gpus=(
            GpuSample(index=0, processes=(GpuProcess(4242, 9, info=ProcessInfo(4242, cmdline=("python",))),)),
        ),
    )
    later = dataclasses.replace(
        frame,
        time=2.0,
        gpus=(dataclasses.replace(frame.gpus[0], processes=(GpuProcess(4243, 1, ("graphics",)),)),),
    )
    writer, reader = FrameDiffer(version=3), FrameAssembler(version=3)
    first = writer.message(frame, [])
    assert first["frame"]["gpus"][0]["processes"][0]["info"]["cmdline"] == ["python"]  # nested: version 3
    assert read(reader, first)[0] == frame
    assert read(reader, writer.message(later, []))[0] == later
    # a nested process in a stream that says version 4 is refused, not read without its description
    with pytest.raises(ValueError, match="carries its description flat"):
        FrameAssembler().whole(wire(FrameDiffer(version=3).message(frame, [])))


def test_a_remote_host_announcing_version_4_is_read_and_an_older_reader_is_told_which_it_needs(monkeypatch):
    assert protocol.STREAM_VERSION == 4 and protocol.hello("box", "1.0", 1.0)["version"] == 4
    monkeypatch.setattr(protocol, "READABLE_VERSIONS", (1, 2, 3))
    with pytest.raises(protocol.VersionMismatch, match="speaks stream version 4.*install the same vramscope"):
        protocol.LineDecoder().feed(protocol.encode(protocol.hello("box", "1.0", 1.0)))


# -- a stranger's processes --------------------------------------------------------------

GOOD = {
    "pid": 4242,
    "used": 3,
    "sm": 10,
    "kinds": "graphics\0",
    "i.pid": 4242,
    "i.start_time": 1.6e9,
    "i.user": "ann",
    "i.cmdline": "python\0train.py\0",
    "i.parent_alive": True,
}
PLACES = [
    *GOOD,
    "cpu_percent",
    "mig_uuid",
    "has_agent",
    "i.visibility",
    "i.container",
    "i.ns_pid",
]
strangers = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PLACES), strangers)
def test_any_value_in_any_field_is_a_checked_process_or_a_one_line_refusal(key, value):
    data = json.loads(json.dumps({**GOOD, key: value}))  # NaN and Infinity as a stranger may send them
    try:
        proc = process_from_wire(data)
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("not a GpuProcess")
        return
    # what got through holds what its fields may hold (the codec's checks)
    assert type(proc.pid) is int and abs(proc.pid) < 2**63
    assert all(type(k) is str for k in proc.kinds)
    assert proc.cpu_percent is None or abs(proc.cpu_percent) <= LIMIT_FLOAT
    assert proc.info is not None and all(type(a) is str for a in proc.info.cmdline or ())
    assert proc.info.start_time is None or abs(proc.info.start_time) <= LIMIT_FLOAT
    assert type(proc.info.visibility) is str and proc.info.parent_alive in (None, True, False)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"i.cmdline": "python\0train.py"}, "does not end with NUL"),
        ({"kinds": "compute"}, "does not end with NUL"),
        ({"i.cmdline": ["python", "train.py"]}, "expects a string of NUL-terminated"),
        ({"i.cmdline": "x" * (MAX_TEXT + 1) + "\0"}, f"more than {MAX_TEXT} characters"),
        ({"i.user": "x" * (MAX_TEXT + 1)}, "at most"),
        ({"kinds": None}, "cannot be null"),
        ({"i.visibility": None}, "cannot be null"),
        ({"i.pid": None}, "i.pid cannot be null"),
        ({"used": "12"}, "expected an integer"),
        ({"i.start_time": 1e308}, "finite number"),
        ({"i.ppid": 2**80}, "expected an integer"),
        ({"i.pid": "4242"}, "expected an integer"),
        ({"info": {"pid": 4242}}, "carries its description flat"),
        ({"i.container": {"runtime": 7}}, "expected a string"),
    ],
)
def test_a_process_of_the_wrong_shape_is_refused_with_one_line(change, why):
    with pytest.raises(ValueError, match=why) as caught:
        process_from_wire({**GOOD, **change})
    assert "\n" not in str(caught.value)


def test_a_description_without_its_pid_and_a_process_without_its_own_are_refused():
    with pytest.raises(ValueError, match="i.user without i.pid"):
        process_from_wire({"pid": 1, "used": 1, "i.user": "ann"})
    with pytest.raises(ValueError, match="pid"):
        process_from_wire({"used": 1, "i.pid": 1})
    with pytest.raises(ValueError, match="a process must be an object"):
        process_from_wire(["pid", 1])


def test_fields_this_side_does_not_know_are_ignored_prefixed_or_not_as_the_codec_ignores_them():
    proc = process_from_wire({**GOOD, "fan": 3, "i.cgroup": {"x": [1]}, "i.": 1, "i.pid.x": "y"})
    assert proc == process_from_wire(GOOD)


def test_a_command_line_of_megabytes_is_kept_to_what_a_local_one_is():
    huge = "\0".join(["python"] + ["x" * 60_000] * 100) + "\0"  # 6 MB, each argument within MAX_TEXT
    proc = process_from_wire({**GOOD, "i.cmdline": huge})
    assert sum(map(len, proc.info.cmdline[:-1])) == MAX_COMMAND_CHARS
    assert proc.info.cmdline[-1].endswith("more characters not kept]")


def test_a_stranger_s_bad_process_in_a_delta_or_a_keyframe_is_refused_and_the_next_keyframe_read():
    frame = Frame(time=1.0, gpus=(GpuSample(index=0, processes=(GpuProcess(1, 1),)),))
    writer, reader = FrameDiffer(), FrameAssembler()
    read(reader, writer.message(frame, []))
    bad = {"type": "delta", "seq": 2, "time": 2.0, "g": {"0": {"p": [{**GOOD, "i.cmdline": "no end"}]}}}
    with pytest.raises(ValueError, match="a delta that does not fit.*does not end with NUL"):
        reader.delta(bad)
    keyframe = wire(writer.message(frame, []))
    keyframe["type"] = protocol.FRAME
    keyframe["frame"] = {"time": 3.0, "gpus": [{"index": 0, "processes": [{**GOOD, "used": "many"}]}]}
    with pytest.raises(ValueError, match="not a Frame.*expected an integer"):
        reader.whole(keyframe)
    with pytest.raises(ValueError, match="not a Frame.*processes expects a list"):
        reader.whole({**keyframe, "frame": {"time": 3.0, "gpus": [{"index": 0, "processes": None}]}})
    fine = {**keyframe, "frame": {"time": 4.0, "gpus": [{"index": 0, "processes": [GOOD]}]}}
    assert reader.whole(fine)[0].gpus[0].processes[0].info.cmdline == ("python", "train.py")


# -- what the window's garbage collector sees ---------------------------------------------


def test_a_message_of_many_processes_holds_no_tracked_object_per_process_but_its_values():
    n = 4096
    frame = Frame(
        time=1.0,
        gpus=tuple(
            GpuSample(
                index=g,
                processes=tuple(
                    GpuProcess(
                        pid,
                        pid,
                        ("graphics",) if pid % 3 == 0 else ("compute",),
                        sm=pid % 100,
                        info=ProcessInfo(
                            pid, 1.6e9, "ann", "python", ("python", f"train_{pid}.py", "--lr", "3e-4")
                        ),
                    )
                    for pid in range(g * n // 4, (g + 1) * n // 4)
                ),
            )
            for g in range(4)
        ),
    )
    line = protocol.encode(FrameDiffer().message(frame, []))
    nested = protocol.encode(FrameDiffer(version=3).message(frame, []))
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        message = json.loads(line)
        parsed = len(gc.get_objects()) - before
        old = json.loads(nested)
        parsed_nested = len(gc.get_objects()) - before - parsed
        del old
    finally:
        gc.enable()
    assert parsed < 50 and parsed_nested > 2 * n  # version 3: a description and its command line each
    FrameAssembler().whole(json.loads(line))  # (the readers' first-time caches: types, plans)
    gc.collect()
    before = collections.Counter(map(type, gc.get_objects()))
    got, _alerts = FrameAssembler().whole(message)
    del message
    gc.collect()
    gc.collect()  # (a row met before its command line's tuple was let go is let go at the next)
    grown = collections.Counter(map(type, gc.get_objects()))
    grown.subtract(before)
    assert got == frame
    # no GpuProcess or ProcessInfo (the reader holds rows of atoms:
    # core/processes/process_columns.py), no dict or list (the wire's) and no tuple (the
    # command lines, the rows: the collector lets a tuple of atoms go)
    assert grown[ProcessInfo] == grown[GpuProcess] == 0
    assert grown[dict] < 64 and grown[list] < 64 and grown[tuple] < 64

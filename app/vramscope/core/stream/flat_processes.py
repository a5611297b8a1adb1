"""A process on the stream's wire as one flat JSON object of atoms (stream
version 4), written and read here.

Up to version 3 a process travelled as the codec writes any dataclass,
``{"pid": ..., "kinds": [...], "info": {..., "cmdline": [...]}}``. CPython's
json builds a list, and a dict that holds a list or a dict, as objects the
garbage collector tracks; a dict of atoms only (str, int, float, bool, None)
it leaves untracked (``gc.is_tracked``,
https://docs.python.org/3/library/gc.html#gc.is_tracked). At 16 GPUs x 1,024
processes the nested form made ~50-65k tracked objects per message, all alive
until it was decoded: enough to set off full collections in the reading
window. From version 4 a process is one object of atoms::

    {"pid": 4242, "used": 3221225472, "sm": 10,          # GpuProcess's fields as before
     "kinds": "graphics\\u0000",                            # a list of strings: see below
     "i.pid": 4242, "i.start_time": 1.6e9, "i.user": "ann",  # ProcessInfo's, under INFO_PREFIX
     "i.cmdline": "python\\u0000train.py\\u0000",
     "i.container": {"runtime": "docker", "id": "..."}}    # (rare) still an object

These are the processes of a GPU: a whole frame's ``gpus[].processes`` and a
delta's ``p`` (core/stream/deltas.py). A MIG slice's own list of its processes
(a copy of some of its GPU's; at most 7 slices a GPU) travels with the GPU's
fields, nested as in version 3.

A field at its default is left out, as the codec does (core/stream/codec.py);
a process with a description always has ``i.pid`` (the description's one
required field), one without has no ``i.`` field. A list of strings (the
command line, the kinds) is one string in which each entry is followed by NUL:
lossless, since an argument cannot hold a NUL (execve(2) takes NUL-terminated
strings; one from elsewhere is sent with U+FFFD for its NUL): ``()`` is
``""``, ``("",)`` is ``"\\u0000"``; a non-empty one that
does not end with NUL is refused. Reading checks each field as the codec does
(ints within int64, finite floats within its limit, strings of at most
``MAX_TEXT`` characters, lists of at most ``MAX_ITEMS`` entries, the command
line cut as a local one is) and ignores a field it does not know, prefixed or
not (a newer writer's); what does not fit is a ValueError of one line.

A description that reads as before is kept as one object by the reader
(core/stream/delta_reader.py holds it as a row: core/processes/process_columns.py), not
here.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Iterator
from typing import Any

from vramscope.core.processes.process_text import capped_cmdline
from vramscope.core.samples import Frame, GpuProcess, GpuSample, ProcessInfo
from vramscope.core.stream import codec
from vramscope.core.stream.protocol import GPUS, PROCESSES, Wire

FLAT_SINCE = 4  # the first stream version whose processes travel flat
INFO_PREFIX = "i."  # ProcessInfo's fields within a process's object
END = "\0"  # follows each string of a list of strings
INFO, KINDS, CMDLINE = "info", "kinds", "cmdline"
INFO_PID = INFO_PREFIX + "pid"


def is_flat(version: object) -> bool:
    """Whether a stream of this (hello's) version sends its processes flat."""
    return type(version) is int and version >= FLAT_SINCE


# -- writing ---------------------------------------------------------------------------


def strings_to_wire(values: tuple[str, ...]) -> str:
    """A list of strings as one: each followed by NUL. A NUL within one (no
    argument holds one; a value from elsewhere might) is sent as U+FFFD, the
    Unicode replacement character, so that the entries stay as many."""
    if not values:
        return ""
    out = END.join(values) + END
    if out.count(END) != len(values):
        out = END.join(v.replace(END, "\ufffd") for v in values) + END
    return out


def info_to_wire(info: ProcessInfo) -> Wire:
    """A description's fields under INFO_PREFIX (defaults left out)."""
    names, defaults, get = codec._fields(ProcessInfo)
    out: Wire = {}
    for name, default, v in zip(names, defaults, get(info)):
        if v is default or (type(v) is type(default) and v == default):
            continue
        # (ProcessInfo.cmdline: a tuple of strings where it is not its default, None)
        out[INFO_PREFIX + name] = (
            strings_to_wire(typing.cast(tuple[str, ...], v)) if name == CMDLINE else codec.to_wire(v)
        )
    return out


_COMPUTE = GpuProcess.__dataclass_fields__[KINDS].default
# the GpuProcess fields process_to_wire writes by hand; a class with others is written field by field
_PROCESS_FIELDS = ("pid", "used", KINDS, "sm", INFO, "has_agent", "mig_uuid", "cpu_percent", "host_memory")


def process_to_wire(proc: GpuProcess, info: Wire | None) -> Wire:
    """A process as one flat object, its description's wire ``info`` (``info_to_wire``)
    already made: the writer makes it once per description (16k processes a second)."""
    if codec._fields(GpuProcess)[0] != _PROCESS_FIELDS:
        return _process_fields(proc, info)
    out: Wire = {"pid": proc.pid, "used": proc.used}
    if proc.kinds != _COMPUTE:
        out[KINDS] = strings_to_wire(proc.kinds)
    if proc.sm is not None:
        out["sm"] = proc.sm
    if info:
        out.update(info)
    if proc.has_agent is not False:
        out["has_agent"] = proc.has_agent
    if proc.mig_uuid is not None:
        out["mig_uuid"] = proc.mig_uuid
    if proc.cpu_percent is not None:
        out["cpu_percent"] = proc.cpu_percent
    if proc.host_memory is not None:
        out["host_memory"] = proc.host_memory
    return out


def _process_fields(proc: GpuProcess, info: Wire | None) -> Wire:
    """``process_to_wire`` from the class's fields (any the hand-written one does not know)."""
    names, defaults, get = codec._fields(GpuProcess)
    out: Wire = {}
    for name, default, v in zip(names, defaults, get(proc)):
        if v is default or (type(v) is type(default) and v == default):
            continue
        # (GpuProcess.info: a ProcessInfo where it is not its default, None; kinds: strings)
        if name == INFO:
            out.update(info if info is not None else info_to_wire(typing.cast(ProcessInfo, v)))
        else:
            out[name] = (
                strings_to_wire(typing.cast(tuple[str, ...], v)) if name == KINDS else codec.to_wire(v)
            )
    return out


# -- reading ---------------------------------------------------------------------------


def strings_from_wire(value: object, name: str) -> tuple[str, ...]:
    """A list of strings from its one string (``strings_to_wire``); TypeError/ValueError
    when it is none (no string, no final NUL, too many or too long entries)."""
    if type(value) is not str:
        raise TypeError(f"{name} expects a string of NUL-terminated entries, got {codec.shown(value)}")
    if not value:
        return ()
    if value[-1] != END:
        raise ValueError(f"{name} does not end with NUL: {codec.shown(value)}")
    parts = value[:-1].split(END)
    if len(parts) > codec.MAX_ITEMS:
        raise ValueError(f"{name} has more than {codec.MAX_ITEMS} entries")
    if max(map(len, parts)) > codec.MAX_TEXT:
        raise ValueError(f"{name} holds a string of more than {codec.MAX_TEXT} characters")
    return tuple(parts)


# a kinds string -> its tuple: one per value, not one per process
_KINDS_SEEN: dict[object, tuple[str, ...]] = {}


def _kinds(value: object) -> tuple[str, ...]:
    known = _KINDS_SEEN.get(value) if type(value) is str else None
    if known is None:
        known = strings_from_wire(value, KINDS)
        if len(_KINDS_SEEN) < 64:
            _KINDS_SEEN[value] = known
    return known


def _cmdline(value: object) -> tuple[str, ...] | None:
    argv = strings_from_wire(value, CMDLINE)
    return capped_cmdline(argv) if argv else argv  # a remote's 8 MB argv kept as a local one is


@functools.cache
def _plan() -> dict[str, tuple[str, codec.Convert, bool, bool]]:
    """wire key -> (field name, its check (the codec's), nullable, of the description)."""
    out = {}
    for cls, prefix in ((GpuProcess, ""), (ProcessInfo, INFO_PREFIX)):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if not f.init or (cls, f.name) == (GpuProcess, INFO):
                continue
            convert = {KINDS: _kinds, CMDLINE: _cmdline}.get(f.name) or codec._converter(
                hints[f.name], (cls, f.name)
            )
            out[prefix + f.name] = (f.name, convert, codec._nullable(f, hints[f.name]), cls is ProcessInfo)
    return out


def process_from_wire(data: object) -> GpuProcess:
    """The GpuProcess a flat object describes (the codec's checks); ValueError (one
    line) when it does not fit."""
    try:
        return _process(data)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise ValueError(f"not a GpuProcess: {str(exc)[:200]}") from None


def _process(data: object) -> GpuProcess:
    if type(data) is not dict:
        raise TypeError(f"a process must be an object, got {codec.shown(data)}")
    if INFO in data:
        raise TypeError(f"a process carries its description flat ({INFO_PREFIX}* fields), not as {INFO}")
    described = INFO_PID in data
    info = None
    # field -> its value, each checked by that field's converter (the codec's, _plan)
    info_kw: dict[str, Any] | None = {} if described else None
    plan = _plan()
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        entry = plan.get(key)
        if entry is None:
            continue  # a field this side does not know (a newer writer's)
        name, convert, nullable, of_info = entry
        if of_info:
            if info_kw is None:
                raise TypeError(f"{key} without {INFO_PID}")
            into = info_kw
        else:
            into = kwargs
        if value is None:
            if not nullable:
                raise TypeError(f"{key} cannot be null")
            into[name] = None
        else:
            try:
                into[name] = convert(value)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{key}: {exc}") from None
    if info_kw is not None:
        info = ProcessInfo(**info_kw)
        kwargs[INFO] = info
    return GpuProcess(**kwargs)


def processes_from_wire(value: object) -> tuple[GpuProcess, ...]:
    """A GPU's list of flat processes; ValueError when it does not fit."""
    return tuple(each_process(value))


def each_process(value: object) -> Iterator[GpuProcess]:
    """A GPU's list of flat processes, read one at a time as they are taken (a
    reader that keeps them in another form holds no 16k GpuProcess values at
    once); ValueError, here or as they are read, when it does not fit."""
    if type(value) is not list:
        raise ValueError(f"not a GpuSample: processes expects a list, got {codec.shown(value)}")
    if len(value) > codec.MAX_ITEMS:
        raise ValueError(f"not a GpuSample: processes has more than {codec.MAX_ITEMS} entries")
    return (process_from_wire(p) for p in value)


def read_process(data: object, version: object) -> GpuProcess:
    """One process of a delta's ``p`` in a stream of ``version`` (flat from version 4)."""
    if is_flat(version):
        return process_from_wire(data)
    return codec.from_wire(GpuProcess, data)


def read_frame(
    decoder: codec.FrameDecoder,
    data: object,
    version: object,
    processes: Callable[[GpuSample, object], tuple[GpuProcess, ...]] | None = None,
) -> Frame:
    """A whole frame's wire dict in a stream of ``version``: from version 4 its GPUs'
    processes are flat (read here), the rest as the codec
    reads it (``decoder``); ValueError when it does not fit. ``processes(gpu,
    wire)``: a GPU's processes from its wire list (default: a tuple of
    GpuProcess, ``processes_from_wire``)."""
    gpus = data.get(GPUS) if type(data) is dict else None
    if type(data) is not dict or not is_flat(version) or type(gpus) is not list:
        return decoder.decode(data)  # (the codec refuses what is not a frame)
    lists = [g.get(PROCESSES, ()) if type(g) is dict else () for g in gpus]
    bare = [{k: v for k, v in g.items() if k != PROCESSES} if type(g) is dict else g for g in gpus]
    frame = decoder.decode({**data, GPUS: bare})
    read = processes or (lambda _gpu, wire: processes_from_wire(wire))
    try:
        return dataclasses.replace(
            frame,
            gpus=tuple(
                dataclasses.replace(gpu, processes=read(gpu, procs)) if procs != () else gpu
                for gpu, procs in zip(frame.gpus, lists)
            ),
        )
    except ValueError as exc:
        raise ValueError(f"not a Frame: {str(exc)[:200]}") from None

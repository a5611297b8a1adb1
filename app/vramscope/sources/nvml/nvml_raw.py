"""NVML's process lists and per-process SM samples, read without an object per entry.

pynvml answers ``nvmlDevice{Compute,Graphics}RunningProcesses_v3/_v2`` with
one ``nvmlFriendlyObject`` per process entry, built attribute by attribute
(``nvmlStructToFriendlyObject``), and ``nvmlDeviceGetProcessUtilization`` with
one ctypes structure per sample: ~2 us an entry, most of a pass over a busy
GPU. The readers here make the same NVML C calls, in the same order and with
the same structure versions and buffer sizes as pynvml (nvidia-ml-py's
``pynvml.py``): the list calls once with no buffer to learn the count
(NVML_SUCCESS then means no process), then with ``count * 2 + 5`` entries of
``c_nvmlProcessInfo_v3_t`` / ``_v2_t``; the samples once with no buffer, then
with ``count`` entries of ``c_nvmlProcessUtilizationSample_t``; any other
answer raises ``NVMLError`` as pynvml's call does, so the source's one error
wrapper (``NvmlSource._call``) handles them alike. The filled array is read
in one ``struct.iter_unpack`` over its bytes, the layout taken from pynvml's
own structure type (field offsets and ctypes type codes), so a pynvml with
another layout is read as it lays it out.

The C function comes from pynvml's ``_nvmlGetFunctionPointer`` (how every
pynvml call finds its symbol; private, but in every nvidia-ml-py release).
Where it or the structure type is missing, or the raw read fails other than
with an NVML error, the reader uses the public pynvml call from then on and
turns its objects into the same answer.

Answers: a list of ``(pid, used bytes or None)`` per process entry (None where
NVML says NVML_VALUE_NOT_AVAILABLE, as pynvml makes it); the samples as three
lists ``(pids, SM %s, timestamps)``.
"""

from __future__ import annotations

import ctypes
import logging
import operator
import struct

from vramscope.sources.nvml.nvml_errors import INSUFFICIENT_SIZE, SUCCESS

log = logging.getLogger(__name__)

# the structure type pynvml's list call of each version uses
LIST_STRUCTS = {"_v3": "c_nvmlProcessInfo_v3_t", "_v2": "c_nvmlProcessInfo_v2_t"}
LIST_FIELDS = ("pid", "usedGpuMemory")
SAMPLE_STRUCT = "c_nvmlProcessUtilizationSample_t"
SAMPLE_FIELDS = ("pid", "timeStamp", "smUtil")  # in the structure's order
UTILIZATION_CALL = "nvmlDeviceGetProcessUtilization"
NOT_AVAILABLE = (1 << 64) - 1  # NVML_VALUE_NOT_AVAILABLE as an unsigned long long (nvml.h)
_USED = operator.itemgetter(1)


# (ctypes type code, size) -> the struct code of that size and sign (c_ulong is 8
# bytes on 64-bit Linux, "L" in struct's standard sizes 4)
_INTEGER_CODES = {
    (ctypes_code, size): (struct_code.upper() if ctypes_code.isupper() else struct_code)
    for ctypes_code in "bBhHiIlLqQ"
    for size, struct_code in ((1, "b"), (2, "h"), (4, "i"), (8, "q"))
}


def row_format(struct_type, names: tuple[str, ...]) -> struct.Struct | None:
    """A ``struct`` format that reads ``names`` (in the structure's order) from
    one element of an array of ``struct_type``, the rest skipped; None where
    the layout is not one it can read (then the public call is used)."""
    try:
        types = dict(struct_type._fields_)
        fields = sorted((getattr(struct_type, name).offset, name) for name in names)
        if [name for _offset, name in fields] != list(names):
            return None
        fmt, at = "=", 0
        for offset, name in fields:
            size = ctypes.sizeof(types[name])
            code = _INTEGER_CODES.get((getattr(types[name], "_type_", None), size))
            if code is None or offset < at:
                return None
            fmt += f"{offset - at}x{code}" if offset > at else code
            at = offset + size
        rest = ctypes.sizeof(struct_type) - at
        if rest < 0:
            return None
        return struct.Struct(fmt + (f"{rest}x" if rest else ""))
    except (AttributeError, KeyError, TypeError, ValueError, struct.error):
        return None


class RawCall:
    """One NVML call read raw, the public pynvml call as its fallback."""

    def __init__(self, nvml, name: str, struct_name: str | None, fields: tuple[str, ...]):
        self.nvml = nvml
        self.name = name  # the pynvml (and NVML) function name
        struct_type = getattr(nvml, struct_name, None) if struct_name else None
        self.struct_type = struct_type
        self.rows = None if struct_type is None else row_format(struct_type, fields)
        self.pointer = getattr(nvml, "_nvmlGetFunctionPointer", None)
        self.raw = self.rows is not None and callable(self.pointer)

    def __call__(self, handle, *args):
        if self.raw:
            try:
                return self.read(handle, *args)
            except self.nvml.NVMLError:
                raise
            except Exception as exc:  # noqa: BLE001 - this pynvml differs: use its public call
                log.debug("reading %s raw failed (%r): using pynvml's call", self.name, exc)
                self.raw = False
        return self.public(getattr(self.nvml, self.name)(handle, *args))

    def entries(self, array, count: int) -> list[tuple]:
        size = self.rows.size
        return list(self.rows.iter_unpack(ctypes.string_at(array, count * size)))


class ProcessListRead(RawCall):
    """``nvmlDevice{Compute,Graphics}RunningProcesses_v3/_v2(handle)`` -> [(pid, used or None)]."""

    def __init__(self, nvml, name: str):
        super().__init__(nvml, name, LIST_STRUCTS.get(name[-3:]), LIST_FIELDS)

    def read(self, handle):
        fn = self.pointer(self.name)
        count = ctypes.c_uint(0)
        ret = fn(handle, ctypes.byref(count), None)
        if ret == SUCCESS:
            return []  # no running processes
        if ret != INSUFFICIENT_SIZE:
            raise self.nvml.NVMLError(ret)
        count.value = count.value * 2 + 5  # room for processes started in between (as pynvml)
        array = (self.struct_type * count.value)()
        ret = fn(handle, ctypes.byref(count), array)
        if ret != SUCCESS:
            raise self.nvml.NVMLError(ret)
        entries = self.entries(array, count.value)
        if entries and max(map(_USED, entries)) == NOT_AVAILABLE:  # (the largest value there is)
            entries = [(pid, None if used == NOT_AVAILABLE else used) for pid, used in entries]
        return entries

    @staticmethod
    def public(answer) -> list[tuple]:
        return [(e.pid, e.usedGpuMemory) for e in answer]


_readers: dict[type, tuple] = {}


class UtilizationRead(RawCall):
    """``nvmlDeviceGetProcessUtilization(handle, last seen)`` -> (pids, SM %s, timestamps)."""

    def __init__(self, nvml):
        super().__init__(nvml, UTILIZATION_CALL, SAMPLE_STRUCT, SAMPLE_FIELDS)

    def read(self, handle, last_seen: int):
        fn = self.pointer(self.name)
        count = ctypes.c_uint(0)
        stamp = ctypes.c_ulonglong(last_seen)
        ret = fn(handle, None, ctypes.byref(count), stamp)
        if ret != INSUFFICIENT_SIZE:
            raise self.nvml.NVMLError(ret)  # (SUCCESS too: pynvml raises it)
        array = (self.struct_type * count.value)()
        ret = fn(handle, array, ctypes.byref(count), stamp)
        if ret != SUCCESS:
            raise self.nvml.NVMLError(ret)
        if not count.value:
            return [], [], []
        pids, stamps, sms = map(list, zip(*self.entries(array, count.value)))
        return pids, sms, stamps

    @staticmethod
    def public(samples) -> tuple[list, list, list]:
        """(pids, SM %s, timestamps) of pynvml's samples, read through the
        structure's own field descriptors (the same values as its attributes,
        without pynvml's Python ``__getattribute__`` for each)."""
        if not samples:
            return [], [], []
        cls = type(samples[0])
        readers = _readers.get(cls)
        if readers is None:
            names = ("pid", "smUtil", "timeStamp")
            if issubclass(cls, ctypes.Structure):
                readers = tuple(getattr(cls, name).__get__ for name in names)
            else:
                readers = tuple(operator.attrgetter(name) for name in names)
            _readers[cls] = readers
        return tuple(list(map(read, samples)) for read in readers)


class RawReads:
    """The raw readers of one pynvml module, made once each."""

    def __init__(self, nvml):
        self.nvml = nvml
        self._lists: dict[str, ProcessListRead | None] = {}
        self.utilization = UtilizationRead(nvml)

    def process_list(self, name: str) -> ProcessListRead | None:
        """The reader of list call ``name``; None where this pynvml has no such call."""
        try:
            return self._lists[name]
        except KeyError:
            reader = ProcessListRead(self.nvml, name) if hasattr(self.nvml, name) else None
            self._lists[name] = reader
            return reader

"""Out-of-memory capture.

Where the build has it, ``torch._C._cuda_attach_out_of_memory_observer``
calls us on the thread whose allocation failed, after the allocator has
released its lock, with (device, requested bytes, device allocated/limit,
device free). We record the requested size, the device total and free, the
bucket breakdown at that instant and the largest live blocks (from a
snapshot; stack frames are dropped). When memory history recording is on
(``torch.cuda.memory._record_memory_history``) the full snapshot is also
written as a memory_viz-compatible pickle (protocol 4).

Builds without the observer still get an OOM event: the agent sees
``num_ooms`` rise between two samples (requested size unknown there).

The post-mortem (agent/oom/postmortem.py, agent/oom/oom_report.py) adds the
allocator's summary at that instant, the largest live tensors where sites
were recorded, and keeps the report for the training process's stderr at exit.
"""

from __future__ import annotations

import os
import pickle
import stat
import time

from vramscope.agent import sampling

from vramscope.agent.oom import postmortem
from vramscope.agent.tensors.buckets import collect, measure
from vramscope.agent.protocol import EventKind

LARGEST_BLOCKS = 10


def attach_observer(callback) -> bool:
    """Attach ``callback(device, alloc, device_allocated, device_free)``; False if unsupported."""
    try:
        import torch

        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is None or not torch.cuda.is_available():
            return False
        attach(callback)
        return True
    except Exception:
        return False


def largest_blocks(snapshot: dict, device: int | None = None, n: int = LARGEST_BLOCKS) -> list[dict]:
    """The n largest allocated blocks in a memory snapshot (no stack frames)."""
    blocks = []
    for seg in snapshot.get("segments", ()) or ():
        if device is not None and seg.get("device", device) != device:
            continue
        for b in seg.get("blocks", ()) or ():
            if b.get("state") != "active_allocated":
                continue
            blocks.append(
                {
                    "size": int(b.get("size", 0)),
                    "requested_size": int(b.get("requested_size", b.get("size", 0))),
                    "address": int(b.get("address", 0)),
                    "segment_type": seg.get("segment_type"),
                    "stream": seg.get("stream"),
                }
            )
    blocks.sort(key=lambda b: b["size"], reverse=True)
    return blocks[:n]


def snapshot_dir() -> str:
    env = os.environ.get("VRAMSCOPE_SNAPSHOT_DIR")
    if env:
        return env
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "vramscope", "snapshots")


def dump_snapshot(
    snapshot: dict, pid: int, when: float | None = None, directory: str | None = None, prefix: str = "oom"
) -> str:
    """Write a memory_viz-compatible pickle (protocol 4), 0600; return its path."""
    directory = directory or snapshot_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when or time.time()))
    path = os.path.join(directory, f"{prefix}-{pid}-{stamp}.pickle")
    # never through a link, never blocking on a FIFO someone left at the name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file; no snapshot written")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    return path


def build_oom_event(
    device: int | None,
    requested: int | None,
    device_free: int | None,
    device_total: int | None,
    devices: dict,
    buckets: dict,
    snapshot: dict | None,
    snapshot_path: str | None,
    source: str,
) -> dict:
    """The event payload: what was asked, what was there, what filled it."""
    name = f"cuda:{device}" if device is not None else None
    stats = devices.get(name) if name else None
    return {
        "device": name,
        "requested": requested,
        "device_free": device_free,
        "device_total": device_total,
        "allocated": stats.get("allocated") if stats else None,
        "reserved": stats.get("reserved") if stats else None,
        "stats": stats,
        "buckets": buckets.get(name) if name else None,  # the failing device's five buckets
        "buckets_by_device": buckets,
        "largest_blocks": largest_blocks(snapshot, device) if snapshot else [],
        "snapshot_path": snapshot_path,
        "source": source,  # "observer" or "num_ooms"
    }


class OomWatch:
    """The OOMs seen: recorded with the figures at that instant, kept for the exit. Uses:
    the ``measurer`` (its reader), the ``instant`` (the tensors measured), the
    ``registry`` (the owners), the gradient ``ledger``, the ``allocator`` watch and
    ``steps`` (the post-mortem's), and callables ``emit`` (an OOM event) and ``error``."""

    def __init__(self, measurer, instant, registry, ledger, allocator, steps, emit, error):
        self._measurer = measurer
        self._instant = instant
        self._registry = registry
        self._ledger = ledger
        self._allocator = allocator
        self._steps = steps
        self._emit = emit
        self._error = error
        self.last_num_ooms: dict[str, int] = {}  # device -> the allocator's num_ooms last seen
        self.reports: list[dict] = []  # OOM post-mortems, said on stderr at exit
        self.observer_attached = False  # the allocator's OOM observer (builds that have it)

    def record(self, device: int | None, requested: int | None, device_free: int | None, source: str) -> None:
        """An OOM seen now (the observer, on the allocating thread): the
        allocator's figures, a fresh walk and the buckets at this instant, the largest blocks."""
        reader = self._measurer.reader
        provider = reader.provider if reader is not None else None
        devices = reader.read(EventKind.OOM) if reader is not None else {}
        if source == "observer":
            # num_ooms already counts this one: the sampler must not report it twice
            for name, fields in devices.items():
                if fields.get("num_ooms") is not None:
                    self.last_num_ooms[name] = max(fields["num_ooms"], self.last_num_ooms.get(name, 0))
        registry = self._registry
        try:  # the instant matters: a fresh walk (it allocates nothing on the device)
            owners = registry.owners = collect(registry.models(), registry.optimizers())
            # the allocating thread (training or autograd's): gradients readable here
            self._instant.tensors = measure(owners)
            self._ledger.note_all(owners.params, owners.devices, settled=False)
        except Exception as exc:
            self._error(exc)
        snapshot = path = None
        total = None
        if provider is not None:
            try:
                total = provider.device_info(device).get("total") if device is not None else None
                snapshot = provider.snapshot(device)
                if provider.history_enabled():
                    path = dump_snapshot(snapshot, os.getpid())
            except Exception as exc:
                self._error(exc)
        event = build_oom_event(
            device,
            requested,
            device_free,
            total,
            devices,
            sampling.buckets_now(self._instant, devices),
            snapshot,
            path,
            source,
        )
        try:
            report = postmortem.complete(
                event,
                device,
                snapshot,
                step=self._steps.count,
                allocator=self._allocator,
                provider=provider,
            )
            if len(self.reports) < postmortem.MAX_REPORTS:
                self.reports.append(report)
        except Exception as exc:
            self._error(exc)
        self._emit(EventKind.OOM, event)

    def check_num_ooms(self, devices: dict) -> None:
        """At a sample: an OOM event for each device whose ``num_ooms`` rose since the last."""
        for name, fields in devices.items():
            n = fields.get("num_ooms")
            if n is None:
                continue
            prev = self.last_num_ooms.get(name)
            self.last_num_ooms[name] = max(n, prev or 0)
            if prev is not None and n > prev:
                index = int(name.split(":")[1]) if ":" in name else None
                self._emit(
                    EventKind.OOM,
                    build_oom_event(
                        index,
                        None,
                        None,
                        fields.get("total"),
                        devices,
                        sampling.buckets_now(self._instant, devices),
                        None,
                        None,
                        "num_ooms",
                    ),
                )

"""The ranks of one distributed job, together: what each holds, the imbalance,
and the rank that holds much more than the others.

Ranks belong to one job when their agents name the same rendezvous
(``MASTER_ADDR:MASTER_PORT`` or torchelastic's run id, from the rank's
environment: agent/serving/paths.py) or, without one, when they are ranks with the
same parent process (one ``torchrun`` launcher). What a rank holds: on a GPU
what PyTorch reserved plus what is outside PyTorch (the process's device
memory); on the CPU the tensors the agent counted.

A rank is named when it holds over HEAVY times the median of the others and
at least HEAVY_FLOOR more: a sharding or data imbalance (uneven FSDP
shards, rank 0 keeping the full state dict, a longer sequence bucket) that
makes one rank run out of memory first.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from vramscope.core.samples import AgentReport, Frame, ProcessIdentity
from vramscope.core.units import MiB, fmt_bytes

HEAVY = 1.25
HEAVY_FLOOR = 64 * MiB


@dataclass(frozen=True, slots=True)
class Job:
    key: str  # "rendezvous 127.0.0.1:29500" or "torchrun pid 4242"
    world_size: int | None
    ranks: tuple[AgentReport, ...]  # by rank
    held: tuple[int | None, ...]  # per rank, in that order
    imbalance: float | None  # (max - min) / mean of what the ranks hold
    heavy: tuple[tuple[int | None, int, int], ...]  # (rank, held, over the others' median)

    @property
    def identities(self) -> tuple[ProcessIdentity, ...]:
        return tuple(r.identity for r in self.ranks)

    def text(self) -> str:
        here = len(self.ranks)
        of = f"{here} of {self.world_size} ranks here" if self.world_size else f"{here} ranks"
        held = " / ".join(f"r{r.rank} {fmt_bytes(h)}" for r, h in zip(self.ranks, self.held))
        bits = [f"Job {self.key}", of, f"held {held}"]
        if self.imbalance is not None:
            bits.append(f"imbalance {self.imbalance:.0%}")
        for name, what in (
            ("fsdp_unsharded", "FSDP all-gathered now"),
            ("ddp_buckets", "DDP gradient buckets"),
        ):
            per = [(r.rank, _sharded(r, name)) for r in self.ranks]
            if any(v is not None for _, v in per):
                bits.append(f"{what} " + " / ".join(f"r{k} {fmt_bytes(v)}" for k, v in per))
        line = " · ".join(bits)
        for rank, held_, over in self.heavy:
            line += (
                f" — rank {rank} holds {fmt_bytes(held_)}, {fmt_bytes(over)} more than the "
                "median of the others"
            )
        return line


def _sharded(report: AgentReport, name: str) -> int | None:
    """A rank's FSDP2 unsharded copies or DDP buckets (agent/tensors/sharded.py), all devices."""
    per = (report.sharded or {}).get(name)
    if not isinstance(per, dict):
        return None
    values = [v for v in per.values() if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    return sum(values) if values or not per else None


def held_by(report: AgentReport) -> int | None:
    """What one rank holds on its device (see the module doc)."""
    gpu = [d for d in report.devices if not d.device.startswith("cpu")]
    for d in gpu:
        if d.reserved is not None:
            outside = d.buckets.outside_pytorch if d.buckets is not None else None
            return d.reserved + (outside or 0)
    for d in gpu + [d for d in report.devices if d.device.startswith("cpu")]:
        b = d.buckets
        if b is not None:
            known = [
                v for v in (b.weights, b.gradients, b.optimizer_state, b.other_allocated) if v is not None
            ]
            if known:
                return sum(known)
    return None


def _parent(report: AgentReport, frame: Frame | None) -> int | None:
    for gpu in frame.gpus if frame is not None else ():
        for p in gpu.processes:
            if p.pid == report.pid and p.info is not None:
                return p.info.ppid
    return None


def job_key(report: AgentReport, frame: Frame | None = None) -> str | None:
    if report.rank is None and report.world_size is None:
        return None
    if report.rendezvous:
        return f"rendezvous {report.rendezvous}"
    parent = _parent(report, frame)
    return f"torchrun pid {parent}" if parent else None


def jobs(reports: Iterable[AgentReport], frame: Frame | None = None) -> list[Job]:
    """The distributed jobs among ``reports``, largest first (ended ranks in their own)."""
    groups: dict[str, list[AgentReport]] = {}
    for r in reports:
        key = job_key(r, frame)
        if key is not None:  # (a restarted job reuses its rendezvous: ended ranks apart)
            groups.setdefault(key if r.connected else f"{key} (ended)", []).append(r)
    out = []
    for key, ranks in groups.items():
        ranks.sort(key=lambda r: (r.rank if r.rank is not None else 1 << 30, r.pid))
        held = tuple(held_by(r) for r in ranks)
        known = [h for h in held if h is not None]
        imbalance = None
        if len(known) >= 2 and sum(known) != 0:
            imbalance = (max(known) - min(known)) / (sum(known) / len(known))
        heavy = []
        for r, h in zip(ranks, held):
            others = [o for o, rr in zip(held, ranks) if rr is not r and o is not None]
            if h is None or not others:
                continue
            median = statistics.median(others)
            if h > HEAVY * median and h - median >= HEAVY_FLOOR:
                heavy.append((r.rank, h, int(h - median)))
        world = next((r.world_size for r in ranks if r.world_size), None)
        out.append(Job(key, world, tuple(ranks), held, imbalance, tuple(heavy)))
    out.sort(key=lambda j: -len(j.ranks))
    return out

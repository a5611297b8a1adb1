"""The ranks of one distributed job, shown together in the agents tab: a header
line above the job's rank sections with what each rank holds, the imbalance,
and the rank that holds much more than the others (core/processes/rank_groups.py)."""

from __future__ import annotations

from typing import NamedTuple

from PySide6.QtWidgets import QLabel

from vramscope.core.processes.rank_groups import Job, jobs
from vramscope.ui.qt import theme


class JobSlot(NamedTuple):
    """The agents list's key of a job's header (beside the processes' identities)."""

    key: str


class JobHeader(QLabel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.job: Job | None = None
        theme.follow(self, self._restyle)

    def show_job(self, job: Job) -> None:
        self.job = job
        self.setText(job.text())
        self.setToolTip(
            "Ranks of one job: the same rendezvous (MASTER_ADDR:PORT) or the same "
            "torchrun parent. Held: reserved + outside PyTorch on the rank's GPU "
            "(the counted tensors on the CPU). Imbalance: (largest - smallest) / mean."
        )
        self._restyle(theme.current())

    def _restyle(self, s: theme.Scheme) -> None:
        color = s.WARNING if self.job is not None and self.job.heavy else s.TEXT
        self.setStyleSheet(f"QLabel {{ color: {color}; font-weight: 600; padding: 4px 2px 0 2px; }}")


def ranks_together(reports, frame) -> tuple[list, dict]:
    """(the list's keys in order: a job's slot, then its ranks, at its first rank's place;
    slot -> Job)."""
    found = jobs(reports, frame)
    slot_of = {ident: JobSlot(job.key) for job in found for ident in job.identities}
    by_slot = {JobSlot(job.key): job for job in found}
    order, placed = [], set()
    for r in reports:
        slot = slot_of.get(r.identity)
        if slot is None:
            order.append(r.identity)
        elif slot not in placed:
            placed.add(slot)
            order.append(slot)
            order.extend(by_slot[slot].identities)
    return order, by_slot

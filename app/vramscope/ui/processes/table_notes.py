"""The lines around the process table that are not rows: memory by user (and
by Slurm job and pod) above it, the processes holding /dev/nvidia* without
being on the driver's lists below it. User, job and command names are
strangers' text: shown as plain text, one line each."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy

from vramscope.core.processes.owner_labels import POD, SLURM_JOB
from vramscope.core.processes.user_totals import UserTotal
from vramscope.core.samples import gpu_label
from vramscope.core.status.terminal_text import visible
from vramscope.core.units import fmt_gib
from vramscope.ui.qt import theme
from vramscope.ui.qt.safe_text import plain, tip

USERS_SHOWN = 6  # "Memory by user": the biggest users named, the rest in the tooltip


class TableNotes:
    """``users`` (above the table) and ``holders`` (below it, hidden while none)."""

    def __init__(self):
        self.users = plain(QLabel())  # user names are strangers' text
        self.users.setObjectName("userTotals")
        theme.styled(self.users, lambda s: f"color: {s.MUTED};")
        self.users.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # a shared box's long list is cut at the table's edge, never widening the window
        self.users.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.holders = QLabel()  # /dev/nvidia* open without being on NVML's lists
        self.holders.setObjectName("deviceHolders")
        theme.styled(self.holders, lambda s: f"color: {s.WARNING}; padding: 0 4px;")
        self.holders.setWordWrap(True)
        self.holders.hide()

    def show_totals(self, totals: list[UserTotal], gpu_labels: dict | None = None, owners=()) -> None:
        """``gpu_labels``: index -> "GPU 0" / "lab2 GPU 0", as the cards name them;
        ``owners``: per-Slurm-job and per-pod totals (core/processes/scheduler_totals.py), a line each kind."""
        lines, hidden = [], []
        for title, kind, of in (
            ("user", "users", totals),
            ("Slurm job", "jobs", [t for t in owners if t.kind == SLURM_JOB]),
            ("pod", "pods", [t for t in owners if t.kind == POD]),
        ):
            parts = [user_text(t, gpu_labels or {}) for t in of]  # the biggest first
            if not parts:
                continue
            shown = "   ·   ".join(parts[:USERS_SHOWN])
            if len(parts) > USERS_SHOWN:
                shown += f"   ·   + {len(parts) - USERS_SHOWN} more {kind} (hover for all)"
                hidden.extend(parts)
            lines.append(f"Memory by {title}:  {shown}")
        plain(self.users).setText("\n".join(map(visible, lines)))  # each line escaped: one line each
        self.users.setToolTip(tip("\n".join(hidden)) if hidden else "")

    def show_holders(self, holders) -> None:
        """The frame's ``device_holders`` (none: the line hides)."""
        self.holders.setVisible(bool(holders))
        if holders:
            self.holders.setText(
                "Holding /dev/nvidia* without being listed by the driver: "
                + "; ".join(
                    f"pid {h.info.pid} {h.info.user or ''} ({h.info.command or 'command n/a'})"
                    for h in holders
                )
            )


def user_text(total, gpu_labels: dict) -> str:
    """'alice 14.20 GiB (GPU 0: 12.00, GPU 1: 2.20)' (a UserTotal or a job's or pod's OwnerTotal)."""
    text = f"{total.label} {fmt_gib(total.used, 2)}"
    name = {g: gpu_labels.get(g) or gpu_label(g) for g, _b in total.per_gpu}
    if len(total.per_gpu) > 1:
        text += " (" + ", ".join(f"{name[g]}: {b / (1 << 30):.2f}" for g, b in total.per_gpu) + ")"
    elif total.per_gpu:
        text += f" on {name[total.per_gpu[0][0]]}"
    return text

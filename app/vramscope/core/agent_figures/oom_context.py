"""The monitor's part of an OOM post-mortem: what NVML saw on the same GPU.

When an OOM event reaches the monitor (sources/agents/agent_client.py, the frame it arrived
with: within a sampling interval of the OOM), the other processes on that GPU
and this process's memory outside PyTorch's cache (NVML's figure minus
reserved) are added to the event's data, so the window, the recorded session
and ``vramscope export --format oom-report`` build the report
(agent/oom/oom_report.py) with the shortfall split into other processes and
outside PyTorch instead of one combined figure.
"""

from __future__ import annotations

from vramscope.agent.oom import oom_report
from vramscope.core.agent_figures.module_figures import disjoint
from vramscope.core.status.terminal_text import visible_fields
from vramscope.core.processes.process_names import display_name

OTHERS = "gpu_processes"
OUTSIDE = "outside_pytorch"
MAX_OTHERS = 32


def others_on(processes, pid: int) -> list[dict]:
    """The other processes holding memory on the GPU (largest first, bounded)."""
    out = []
    for p in processes:
        if p.pid == pid or not p.used:
            continue
        # named as the table names it ("Jupyter kernel · analysis.ipynb", not "python3")
        name = (display_name(p.info) or p.info.name) if p.info is not None else None
        out.append({"pid": p.pid, "name": name, "used": p.used})
    out.sort(key=lambda p: p["used"], reverse=True)
    return out[:MAX_OTHERS]


def note(data: dict, processes, proc, reserved: int | None) -> None:
    """Add NVML's view (the GPU's ``processes``) to an OOM event's data, once (the first
    frame it arrived with)."""
    if OTHERS in data:
        return
    data[OTHERS] = others_on(processes, proc.pid)
    data[OUTSIDE] = max(0, proc.used - reserved) if proc.used is not None and reserved is not None else None


def report_of(data: dict, modules=None) -> dict:
    """The post-mortem of an OOM event's data, with NVML's view where it was noted.
    The data came from another process (an agent, a session file): every text in it
    is escaped (core/status/terminal_text.py), so no report -- the window's, the Markdown
    export, a terminal that shows it -- carries its control characters."""
    data = visible_fields(data)
    if modules is not None:
        modules = visible_fields(modules)
    return oom_report.build_report(
        data,
        modules=modules if modules is not None else data.get("modules"),
        tensors=data.get("tensors"),
        others=data.get(OTHERS),
        outside_pytorch=data.get(OUTSIDE),
    )


def module_dicts(modules, device: str | None) -> list[dict] | None:
    """An agent report's per-module figures (ModuleFigures) measured on ``device``, each
    counted once (a parent that holds its children is not added to them), as the
    report takes them; None when there are none."""
    mine = [m for m in modules or () if m.device in (device, None)]
    return [m.as_dict() for m in disjoint(mine)] or None

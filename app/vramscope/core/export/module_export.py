"""Per-module figures in exports.

- CSV: per recorded module row, ``module.<figure>.<name>`` (bytes; a figure
  not available is left out and ``module.why.<name>`` says why) and
  ``module.measured_step.<name>``; ``gpu`` is the NVML index of the agent's
  device where it is a GPU of the session.
- Perfetto: per agent process and top-level module a counter track
  ``module <name>`` with one series per figure available.
"""

from __future__ import annotations

from vramscope.core.agent_figures.module_figures import FIGURES


def csv_rows(ctx, reader, a: float, b: float) -> list[tuple]:
    """(time, host, gpu, pid, metric, value) rows of the modules recorded in [a, b)."""
    rows = []
    for t, proc, m in reader.samples.modules(a, b):
        rec = ctx.procs.get(proc)
        if rec is None:
            continue
        host = ctx.process_host(proc)
        rows.append((t, host, "", rec.pid, f"module.measured_step.{m.name}", m.measured_step))
        for f in FIGURES:
            value = getattr(m, f)
            if value is not None:
                rows.append((t, host, "", rec.pid, f"module.{f}.{m.name}", value))
        if m.why is not None:
            rows.append((t, host, "", rec.pid, f"module.why.{m.name}", ctx.redactor.text(m.why) or ""))
    return rows


def trace_counters(ctx, reader, a: float, b: float, us):
    """Counter events: a track per agent process and top-level module."""
    for t, proc, m in reader.samples.modules(a, b):
        if proc not in ctx.procs or not m.top_level:
            continue
        args = {f: getattr(m, f) for f in FIGURES if getattr(m, f) is not None}
        if args:
            yield {
                "ph": "C",
                "pid": int(ctx.trace_pid_of[proc]),
                "tid": 0,
                "ts": int(us(t)),
                "name": f"module {m.name}",
                "args": args,
            }

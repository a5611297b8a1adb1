"""`vramscope export FILE --format oom-report`: every OOM of a recorded session as Markdown.

Each OOM event the session kept (with the allocator's picture at that
instant and what NVML saw on the GPU: core/agent_figures/oom_context.py), with the
per-module figures the session recorded for that process before it, becomes the report
the window shows (agent/oom/oom_report.py), in full. ``--redact`` replaces user
names and command lines as the other exports do and cuts the file paths of
allocation sites to their file names.

Every text from the session (process names, the OOM data: an agent's, another
user's) is escaped (core/status/terminal_text.py), so ``cat`` of the report replays no
terminal control. A damaged session's report says what could not be read (as
the CSV and trace exports do), never "no out-of-memory event" alone.
"""

from __future__ import annotations

import os
import time

from vramscope.agent.oom import oom_text
from vramscope.core.agent_figures import oom_context
from vramscope.core.safe_io import safe_write
from vramscope.core.export.csv_export import ExportSummary
from vramscope.core.export.redact import Redactor
from vramscope.core.session import module_rows
from vramscope.core.status.terminal_text import visible


NONE = "No out-of-memory event in this session.\n"
NONE_READ = (
    "No out-of-memory event could be read. The session file is damaged: an event "
    "in the part that could not be read is not here.\n"
)
UNREAD = "## What could not be read (the session file is damaged)"


def _site(site) -> str | None:
    """'/home/a/train.py:88 in forward' -> 'train.py:88 in forward' (what is no text: None)."""
    if not isinstance(site, str):
        return None
    return os.path.basename(site.split(":", 1)[0]) + ":" + site.split(":", 1)[1] if ":" in site else site


def export_oom_report(reader, out_path, *, redact: bool = False) -> ExportSummary:
    procs = reader.processes()
    red = Redactor(procs.values(), enabled=redact)
    parts = ["# Out-of-memory post-mortems", ""]
    n = 0
    for ev in reader.recorded.events():
        if ev["kind"] != "oom":
            continue
        data = red.data(dict(ev["data"]))
        if redact:
            for t in data.get("tensors") or ():
                if isinstance(t, dict):
                    t["site"] = _site(t.get("site"))
        rec = procs.get(ev["proc"])
        who = f"PID {rec.pid} ({visible(rec.name)})" if rec is not None else "a process"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ev["t"]))
        # the per-module figures the session recorded for that process up to the OOM, on its
        # device (as the window's OOM view takes them from the agent's report)
        measured = module_rows.modules_at(reader.db, ev["proc"], ev["t"])
        report = oom_context.report_of(data, oom_context.module_dicts(measured, data.get("device")))
        parts.append(oom_text.markdown(report, title=f"{when} · {who}: CUDA out of memory"))
        n += 1
    problems = list(reader.problems)
    if not n:
        parts.append(NONE_READ if problems else NONE)
    if problems:  # said in the report too: it may be read far from the terminal that made it
        parts += [UNREAD, ""] + [f"- {visible(p)}" for p in problems] + [""]
    text = "\n".join(parts)
    with safe_write.replacing(out_path) as f:
        f.write(text.encode("utf-8"))
    return ExportSummary(path=str(out_path), rows=n, bytes=len(text.encode("utf-8")), problems=problems)

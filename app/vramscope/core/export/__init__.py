"""Exporters for recorded sessions (no Qt): CSV long form, Perfetto trace, OOM snapshots."""

from vramscope.core.export.csv_export import ExportSummary, export_csv
from vramscope.core.export.oom_markdown import export_oom_report
from vramscope.core.export.snapshots import copy_snapshots
from vramscope.core.export.trace_export import export_trace

FORMATS = {"csv": export_csv, "perfetto": export_trace, "oom-report": export_oom_report}

__all__ = ["FORMATS", "ExportSummary", "copy_snapshots", "export_csv", "export_oom_report", "export_trace"]

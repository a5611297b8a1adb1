"""Processes as the monitor shows them, Qt-free: the table's rows and columns, groups,
names, owners, per-user and per-scheduler (Slurm job, Kubernetes pod) totals, ranks of
one job, containers read from cgroup text, inference servers, growth and stacking.
Pure functions of frames and text; may import vramscope.core's vocabulary, status
text helpers and settings; never sources, ui or Qt.
"""

"""What this machine's kernel and tools say about its processes: psutil details per
identity (`processes.py`), /proc reads (`proc_stat.py`, `proc_environ.py`), host CPU
and memory (`host_usage.py`), containers and PID namespaces, Kubernetes pod names,
Slurm jobs, inference servers, Jupyter kernels, unified-memory boards, and helper
commands run with bounds (`bounded_command.py`). May import vramscope.core and the
agent's paths; never a GPU backend, the agent client, a remote host or the demo.
"""

"""Who an alert is about, said the way the table says it, and what kind of
process it is (which decides the fix text).

Every alert names a process as "train.py (4242) on GPU 1": the table's label
(core/processes/process_names.py) and the NVML GPU index the cards show -- never the
agent's "cuda:0", which CUDA_VISIBLE_DEVICES renumbers.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable

from vramscope.core.detectors import jupyter
from vramscope.core.detectors.advice import serves_requests
from vramscope.core.processes.process_names import label_for, process_label
from vramscope.core.samples import ACCESS_DENIED, Frame, GpuProcess, GpuSample
from vramscope.core.processes.servers import server_of

# process kinds, as the fix texts distinguish them
AGENT = "agent"  # PyTorch run under the vramscope agent
TRAINING = "training"  # any other compute process (a script without the agent)
SERVER = "server"  # an inference server (core/processes/servers.py)
KERNEL = "jupyter"  # a Jupyter/IPython kernel
OTHER_USER = "other_user"  # the fix for someone else's process, whatever its kind


def _me() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (some containers)
        return None


def find_process(frame: Frame, pid: int, gpu_index: int | None = None) -> GpuProcess | None:
    for gpu, proc in frame.all_processes():
        if proc.pid == pid and (gpu_index is None or gpu.index == gpu_index):
            return proc
    return None


def process_name(frame: Frame, pid: int, gpu: GpuSample | int | None, device: str | None = None) -> str:
    """'train.py (4242) on GPU 1' ('on lab2 GPU 0' for another machine's); the
    agent's device only when no GPU matched."""
    index = gpu.index if isinstance(gpu, GpuSample) else gpu
    proc = find_process(frame, pid, index) or find_process(frame, pid)
    label = process_label(proc) if proc is not None else label_for(pid, None)
    if index is not None and not isinstance(gpu, GpuSample):
        gpu = next((g for g in frame.gpus if g.index == index), None)  # named as its card is
    if isinstance(gpu, GpuSample):
        return f"{label} on {gpu.label}"
    if index is not None:
        return f"{label} on GPU {index}"
    return f"{label} ({device}, GPU not matched)" if device else label


def proc_name(proc: GpuProcess, gpu: GpuSample) -> str:
    return f"{process_label(proc)} on {gpu.label}"


def agent_pids(frame: Frame) -> frozenset[int]:
    return frozenset(r.pid for r in frame.agents)


def is_other_users(frame: Frame, proc: GpuProcess, me: str | None = None) -> bool:
    """Someone else's process: only its owner (or an administrator) can end it --
    vramscope ends only your own, even as root."""
    info = proc.info
    if info is None:
        return False
    if info.visibility == ACCESS_DENIED:
        return True
    # a simulated workstation's processes stand for the viewer's own
    owner = me if me is not None else (None if frame.simulated else _me())
    return bool(info.user and owner and info.user != owner)


def process_kind(frame: Frame, proc: GpuProcess) -> str:
    """What the process is: KERNEL, SERVER, AGENT or TRAINING (see the module doc).
    Whose it is (``is_other_users``) is a separate question."""
    info = proc.info
    if info is not None and jupyter.is_jupyter_kernel(info.cmdline, info.name):
        return KERNEL  # a notebook is judged as a notebook, agent or not
    if server_of(frame, proc) is not None:
        return SERVER
    if proc.has_agent or proc.pid in agent_pids(frame):
        return AGENT
    return TRAINING


# Fix texts for a process that holds memory it does not use, by kind. Other
# issues add kinds (a process in another container) by adding an entry.
SquatterFix = Callable[[GpuProcess], str]

SQUATTER_FIXES: dict[str, SquatterFix] = {  # the action first: the alerts list shows the first sentence
    TRAINING: lambda proc: (
        "End process if it has nothing left to do. If it waits on purpose, free its tensors "
        "(del, then torch.cuda.empty_cache() inside it) or mute this alert. A finished or "
        "crashed previous run may still be holding VRAM."
    ),
    KERNEL: lambda proc: (
        "Shut it down from Jupyter (Kernel > Shut Down in its notebook) so the notebook "
        "knows, or End process here. A leftover Jupyter kernel keeps every CUDA tensor it "
        "created until it exits. If you still need it, `del` the big tensors and call "
        "torch.cuda.empty_cache() in the notebook to hand the cached blocks back."
    ),
    OTHER_USER: lambda proc: (
        "Ask its owner to end it or free its memory: this process belongs to "
        f"{proc.info.user if proc.info and proc.info.user else 'another user'}, and only its "
        "owner (or an administrator) can end it."
    ),
}


IDLE_SERVER_FIX = (
    "It looks like a server waiting for requests (a --port/--host option or a serving "
    "name): idle between requests is its normal state, not a crashed run. If nobody uses "
    "it, stop it where it was started; if it should give memory back while idle, that is "
    "its own option (a model unload timeout, a smaller cache)."
)


def squatter_fix(kind: str, proc: GpuProcess, frame: Frame | None = None) -> str:
    if frame is not None and is_other_users(frame, proc):
        kind = OTHER_USER
    elif kind == TRAINING and serves_requests(proc.info):
        return IDLE_SERVER_FIX
    return SQUATTER_FIXES.get(kind, SQUATTER_FIXES[TRAINING])(proc)

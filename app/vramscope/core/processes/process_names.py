"""What a process is called everywhere: the table, the legends and the alerts.

One naming, Qt-free, so the diagnostics name a process exactly as the window's
table does ("train.py (4242)").
"""

from __future__ import annotations

import functools
import os

from vramscope.core.samples import GpuProcess, ProcessInfo

_PYTHONS = ("python", "python3", "pythonw")
_LAUNCHERS = ("torchrun", "accelerate", "deepspeed")


def short_name(info: ProcessInfo | None) -> str | None:
    """What an ML engineer calls it: 'Jupyter kernel', 'train.py', 'vllm'."""
    if info is None:
        return None
    return _short_name(info.cmdline or (), info.name)


@functools.lru_cache(maxsize=1 << 14)  # every row of every frame asks; command lines repeat
def _short_name(cmd: tuple[str, ...], name: str | None) -> str | None:
    if any("ipykernel_launcher" in part or "ipykernel" == part for part in cmd):
        return "Jupyter kernel"
    if cmd:
        exe = os.path.basename(cmd[0])
        if exe.startswith(_PYTHONS):
            for i, part in enumerate(cmd[1:], start=1):
                if part == "-m" and i + 1 < len(cmd):
                    return cmd[i + 1]
                if part.startswith("-"):
                    continue
                return os.path.basename(part)
        if exe in _LAUNCHERS and len(cmd) > 1:
            rest = [p for p in cmd[1:] if not p.startswith("-")]
            return f"{exe} {os.path.basename(rest[-1])}" if rest else exe
    return name or (os.path.basename(cmd[0]) if cmd else None)


def label_for(pid: int, info: ProcessInfo | None) -> str:
    """'train.py (4242)'; 'pid 4242' when nothing else is known."""
    name = short_name(info)
    return f"{name} ({pid})" if name else f"pid {pid}"


def process_label(proc: GpuProcess) -> str:
    """The table's name for a GPU process: 'train.py (4242)'."""
    return label_for(proc.pid, proc.info)


_MODEL_FLAGS = ("--model", "--model-path", "--model_name_or_path", "--model-id", "--model_id")


def model_of(cmd: tuple[str, ...]) -> str | None:
    """The model a server or script was started with: `--model X`, `--model=X`,
    `vllm serve X`; its last path part ('meta-llama/Llama-3-8B' -> 'Llama-3-8B')."""
    for i, part in enumerate(cmd):
        flag, eq, value = part.partition("=")
        if flag in _MODEL_FLAGS:
            value = value if eq else (cmd[i + 1] if i + 1 < len(cmd) else "")
            if value and not value.startswith("-"):
                return os.path.basename(value.rstrip("/")) or value
        if (
            part == "serve"
            and i
            and os.path.basename(cmd[i - 1]) == "vllm"
            and i + 1 < len(cmd)
            and cmd[i + 1]
            and not cmd[i + 1].startswith("-")
        ):
            return os.path.basename(cmd[i + 1].rstrip("/")) or cmd[i + 1]
    return None


def display_name(info: ProcessInfo | None) -> str:
    """The table's Name: 'train.py', 'vLLM · Llama-3-8B', 'embed_server · bge-large-en-v1.5',
    'Jupyter kernel · analysis.ipynb', with its container's name after a '·' when it
    runs in one."""
    name = short_name(info)
    if name is None:
        return ""
    cmd = info.cmdline or ()
    if name == "vllm" or name.startswith("vllm.") or (cmd and os.path.basename(cmd[0]) == "vllm"):
        name = "vLLM"
    model = model_of(cmd)
    parts = [name] + ([model] if model else [])
    if info.notebook:  # Jupyter Server's path of the kernel's notebook
        parts.append(os.path.basename(info.notebook.rstrip("/")) or info.notebook)
    container = info.container
    if container is not None and (container.name or container.pod):
        parts.append(container.pod or container.name)
    return " · ".join(parts)

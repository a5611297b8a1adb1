"""Events that come with memory outside PyTorch's allocator, for the monitor to pair
with the jumps of NVML's figure minus PyTorch's reserved.

What grows the CUDA context and the libraries' own memory in a training run:
creating a process group (NCCL's communicators and buffers, from
``init_process_group``), ``torch.compile`` (Triton's kernels and the
inductor's autotuning workspaces), and the first matmul (cuBLAS's workspace,
cuDNN's handles: the first forward, which the agent already reports as
"loaded"). Cheap by construction: ``init_process_group`` is wrapped (one
call per run), and ``torch.compile`` is wrapped so that its first call
registers a callback at the end of each Dynamo compilation
(``torch._dynamo.callback``); nothing runs per step. The wrappers are
installed at agent start -- a script that imported the function by name
before (``from torch.distributed import init_process_group``) keeps the
original, and that event is simply not seen. Standard library + torch only.
"""

from __future__ import annotations

import time

import torch

from vramscope.agent.patches import Patches
from vramscope.agent.protocol import EventKind

MAX_COMPILE_EVENTS = 64  # a run that recompiles without end says so this many times at most


class OutsideEvents:
    def __init__(self, emit, clock=time.time):
        self._emit = emit
        self._clock = clock
        self._patches = Patches()  # init_process_group's and torch.compile's wrappers
        self._compiles = 0
        self._callback = None

    def install(self) -> None:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and hasattr(dist, "init_process_group"):
            self._wrap(dist, "init_process_group", self._after_init)
        if hasattr(torch, "compile"):
            self._wrap(torch, "compile", self._after_compile_call)

    def _wrap(self, owner, name: str, after) -> None:
        def make(original, armed):
            def wrapper(*args, **kwargs):
                out = original(*args, **kwargs)
                if armed.on:
                    try:
                        after(args, kwargs)
                    except Exception:
                        pass
                return out

            return wrapper

        self._patches.wrap(owner, name, make)

    def uninstall(self) -> None:
        self._patches.undo()
        if self._callback is not None:
            try:
                from torch._dynamo.callback import callback_handler

                callback_handler.remove_end_callback(self._callback)
            except Exception:
                pass
            self._callback = None

    def _after_init(self, args, kwargs) -> None:
        backend = kwargs.get("backend", args[0] if args else None)
        self._emit(
            EventKind.PROCESS_GROUP_INIT,
            {
                "backend": str(backend)[:32] if backend is not None else None,
                "text": "process group created (NCCL communicators and buffers live outside PyTorch's "
                "allocator)",
            },
        )

    def _after_compile_call(self, args, kwargs) -> None:
        if self._callback is not None:
            return
        from torch._dynamo.callback import callback_handler

        self._callback = callback_handler.register_end_callback(self._compiled)

    def _compiled(self, *args) -> None:
        self._compiles += 1
        if self._compiles <= MAX_COMPILE_EVENTS:
            self._emit(
                EventKind.COMPILE,
                {
                    "compiles": self._compiles,
                    "text": "torch.compile compiled a graph (Triton kernels, autotuning workspaces)",
                },
            )

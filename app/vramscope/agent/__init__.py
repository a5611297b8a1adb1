"""The vramscope PyTorch agent: runs inside the training process.

    from vramscope import agent
    agent.start(model=model, optimizer=optimizer)   # returns at once
    ...
    agent.step()        # only for loops without a torch.optim optimizer

or, with no code change: ``vramscope run -- python train.py ARGS``.

One agent per process; ``start`` twice is harmless (the second call only
registers what it is given). Standard library + torch only. The agent never
synchronises CUDA, never resets the user's peak counters, and contains its
own errors: when the monitor goes away nothing changes for the training.
"""

from __future__ import annotations

import os
import threading

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vramscope.agent.core import Agent

__all__ = ["start", "watch", "step", "stop", "get", "Agent", "DEFAULT_INTERVAL"]

# The monitor imports vramscope.agent.protocol and .paths (stdlib only) without
# torch; only starting an agent imports torch (through agent.core).
DEFAULT_INTERVAL = 0.5  # seconds between allocator samples
MIN_INTERVAL = 0.05  # the agent samples no faster than this

_lock = threading.Lock()
_agent: Agent | None = None


def __getattr__(name: str) -> Any:  # (Agent, imported when asked for)
    if name == "Agent":
        from vramscope.agent.core import Agent

        return Agent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def start(
    model: object = None, optimizer: object = None, interval: float = DEFAULT_INTERVAL, **options: Any
) -> Agent:
    """Start the agent (once per process) and register ``model``/``optimizer``."""
    global _agent
    with _lock:
        if _agent is None:
            from vramscope.agent.core import Agent

            _agent = Agent(interval=interval, **options)
            if model is not None or optimizer is not None:
                _agent.watch(model=model, optimizer=optimizer)
            _agent.start()
            return _agent
    _agent.watch(model=model, optimizer=optimizer)
    return _agent


def watch(model: object = None, optimizer: object = None) -> Agent:
    """Register more models/optimizers (starts the agent if needed)."""
    return start(model=model, optimizer=optimizer)


def step() -> None:
    """Mark a training step (custom loops without optimizer.step hooks)."""
    a = _agent
    if a is not None:
        a.steps.manual_step()


def stop() -> None:
    global _agent
    with _lock:
        a, _agent = _agent, None
    if a is not None:
        a.stop()


def get() -> Agent | None:
    return _agent


def _after_fork_in_child() -> None:
    global _agent
    a, _agent = _agent, None
    if a is not None:
        a.disable_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

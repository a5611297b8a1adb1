"""Every error in the agent is caught and counted; the training never sees one (nor a warning)."""

from __future__ import annotations


class ErrorCount:
    """Called with an exception: counts it and keeps its text (the STATUS reply, a sample's
    own figures). The agent's collaborators take this callable, nothing more."""

    def __init__(self) -> None:
        self.count = 0
        self.last: str | None = None

    def __call__(self, exc: BaseException) -> None:
        self.count += 1
        self.last = f"{type(exc).__name__}: {exc}"

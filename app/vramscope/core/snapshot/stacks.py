"""Frames and stacks of a snapshot, each interned once.

A frame (``Frame`` in ``torch.cuda.memory._snapshot``'s docs: filename, line,
name; the FX fields where ``augment_with_fx_traces`` added them) is kept once
as a tuple, its other fields beside it; a stack is a tuple of frame ids,
innermost first as PyTorch writes them, kept once. The C++ snapshot shares
one dict per distinct frame, so a stack is first looked up by the identities
of its first and last frame dicts and its length, confirmed by comparing the
lists (identical elements compare at C speed), and only then interned by
content. Text fields of another kind are kept as their repr, bounded.
"""

from __future__ import annotations

from vramscope.core.snapshot.safe_load import SnapshotError


def not_a_snapshot(what: str) -> SnapshotError:
    return SnapshotError(f"not a PyTorch memory snapshot: {what}")


def text(v, limit: int = 4096) -> str:
    """A frame's text field as a string (a non-string one by its repr), bounded."""
    text = v if type(v) is str else repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


class Stacks:
    """Frames and stacks, each interned once."""

    def __init__(self):
        self.frames: list[tuple[str, int | None, str]] = []
        self.frame_extra: dict[int, dict] = {}
        self.stacks: list[tuple[int, ...]] = [()]  # stack 0: no frames
        self._frame_ids: dict = {}
        self._stack_ids: dict = {(): 0}
        # (id of the first frame dict, id of the last, length) -> (a frames list, its stack id),
        # while the unpickled objects live: a stack seen again is found without hashing it
        self._by_identity: dict = {}
        # stack id -> the frame dicts first seen for it, while loading natively (core/snapshot/native.py)
        self._canonical: list[tuple] = [()]

    def frame(self, d) -> int:
        if type(d) is not dict:
            raise not_a_snapshot(f"a frame is a {type(d).__name__}, not a dict")
        extra = {k: v for k, v in d.items() if k not in ("filename", "line", "name")}
        line = d.get("line")
        if line is not None and type(line) is not int:
            line = text(line)  # not a line number: kept as text
        key = (text(d.get("filename", "")), line, text(d.get("name", "")))
        try:
            full = (key, repr(sorted(extra.items(), key=repr))) if extra else key
        except RecursionError:
            raise not_a_snapshot("a frame's field is nested too deeply") from None
        got = self._frame_ids.get(full)
        if got is None:
            got = self._frame_ids[full] = len(self.frames)
            self.frames.append(key)
            if extra:
                self.frame_extra[got] = extra
        return got

    def stack(self, frames) -> int:
        """The stack id of a list of frame dicts (interned)."""
        if not frames:
            return 0
        if type(frames) not in (list, tuple):
            raise not_a_snapshot(f"frames is a {type(frames).__name__}, not a list")
        key = (id(frames[0]), id(frames[-1]), len(frames))
        rep = self._by_identity.get(key)
        if rep is not None and rep[0] == frames:  # the same frame dicts (or equal ones)
            return rep[1]
        content = tuple(self.frame(f) for f in frames)
        got = self._stack_ids.get(content)
        if got is None:
            got = self._stack_ids[content] = len(self.stacks)
            self.stacks.append(content)
        self._by_identity[key] = (frames, got)
        return got

    def intern(self, frames) -> tuple[int, tuple]:
        """(stack id, the stack's canonical frame dicts) of a list of frame dicts: the native
        reader's miss (it keeps the canonical frames, and finds them again by identity)."""
        if type(frames) not in (list, tuple):
            raise not_a_snapshot(f"frames is a {type(frames).__name__}, not a list")
        if not frames:
            return 0, ()
        content = tuple(self.frame(f) for f in frames)
        got = self._stack_ids.get(content)
        if got is None:
            got = self._stack_ids[content] = len(self.stacks)
            self.stacks.append(content)
        while len(self._canonical) <= got:
            self._canonical.append(())
        if not self._canonical[got]:
            self._canonical[got] = tuple(frames)
        return got, self._canonical[got]

    def done_loading(self) -> None:
        """Forget identities (they are valid only while the loaded objects live)."""
        self._by_identity = {}
        self._canonical = [()]

    def frames_of(self, stack: int) -> list[tuple[str, int | None, str]]:
        return [self.frames[i] for i in self.stacks[stack]] if stack >= 0 else []

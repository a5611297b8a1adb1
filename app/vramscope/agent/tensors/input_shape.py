"""The micro-batch and sequence length the run is measured at: the leading
dimensions of the first tensor a watched model's training forward receives.

The what-if planner (core/planner/what_if.py) scales what was measured to
another micro-batch or sequence length, so it must know what it measured
at. A forward pre-hook (``with_kwargs``: Hugging Face models take
``input_ids=`` as a keyword) on each registered top-level model reads the
shape of the first tensor argument -- a few attribute reads, no tensor data,
under a microsecond beside a forward -- on forwards with autograd on only
(an evaluation's batch is not the training one). A post-hook notes the
size of the output the loss is computed on: a loss saves a tensor that size
for its backward (cross-entropy its log-softmax, MSE the difference),
outside every module of the model.

Which dimension is what: dimension 0 is the batch. A sequence length is
named only where the input says so: integer token ids of shape (batch,
seq), or floats of shape (batch, seq, features). A (batch, features) matrix
or an image (batch, channels, height, width) has no sequence. Standard
library + torch only; every hook returns at once under ``torch.compile``
tracing (no graph break). In the agent both hooks run on full steps only:
on quiet ones they are out of the model's hook dicts (agent/steps/steps.py,
``ModelHooks.quiet_also``), so the figures are the last full step's.
"""

from __future__ import annotations

import torch
from torch.compiler import is_compiling

from vramscope.agent.steps.phases import _first_grad_tensor

TOKEN_KEYS = ("input_ids", "inputs_embeds", "x", "input", "pixel_values")  # looked at first


def _first_tensor(args, kwargs):
    for a in args[:4]:
        if isinstance(a, torch.Tensor):
            return a
    if kwargs:
        for key in TOKEN_KEYS:
            v = kwargs.get(key)
            if isinstance(v, torch.Tensor):
                return v
        for v in list(kwargs.values())[:8]:
            if isinstance(v, torch.Tensor):
                return v
    return None


def batch_and_seq(t) -> tuple[int | None, int | None]:
    """(micro-batch, sequence length or None) of a model's input tensor."""
    shape = t.shape
    if len(shape) == 0:
        return None, None
    batch = int(shape[0])
    seq = None
    if len(shape) == 2 and not t.is_floating_point():
        seq = int(shape[1])  # token ids
    elif len(shape) == 3 and t.is_floating_point():
        seq = int(shape[1])  # embeddings or features per position
    return batch, seq


class InputShape:
    """The last training forward's (batch, seq) over the watched models."""

    def __init__(self):
        self.batch: int | None = None
        self.seq: int | None = None
        self.model: str | None = None
        self.output_bytes: int | None = None  # the first output tensor's bytes
        self._handles: list = []
        self.errors = 0

    def attach(self, model) -> list:
        """Hook ``model``; returns the two hooks' handles."""
        handles = [
            model.register_forward_pre_hook(self._pre, with_kwargs=True),
            model.register_forward_hook(self._post),
        ]
        self._handles.extend(handles)
        return handles

    def detach_all(self) -> None:
        for h in self._handles:
            try:
                h.remove()
            except Exception:
                pass
        self._handles = []

    def _pre(self, module, args, kwargs):
        if is_compiling() or not torch.is_grad_enabled():
            return None
        try:
            t = _first_tensor(args, kwargs)
            if t is not None:
                self.batch, self.seq = batch_and_seq(t)
                self.model = type(module).__name__
        except Exception:
            self.errors += 1
        return None

    def _post(self, module, args, output):
        if is_compiling() or not torch.is_grad_enabled():
            return None
        try:
            t = _first_grad_tensor(output)
            if t is not None:
                self.output_bytes = t.numel() * t.element_size()
        except Exception:
            self.errors += 1
        return None

    def report(self) -> dict | None:
        """What the sample item carries ("input"); None before a training forward."""
        if self.batch is None:
            return None
        return {"batch": self.batch, "seq": self.seq, "model": self.model, "output_bytes": self.output_bytes}

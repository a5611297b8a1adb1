"""The tensors and the allocator at one instant.

On the training thread nothing changes the tensors while it reads (it is the
thread that changes them), so one allocator reading and one measurement of
the owners' tensors (``.grad`` read directly) describe one instant. The
agent thread runs beside the training thread: ``zero_grad`` may free
gradients, a first optimizer step may make state, between its allocator
reading and its measurement -- for one sample "activations" would hold a
freed gradient (+64 % seen, issue 23). So it measures before and after the
reading and keeps a reading only when nothing changed around it (the
gradient ledger's fingerprint and the measured bytes); after READ_TRIES the
gradients and activations say n/a with the reason (buckets.CHANGED).
"""

from __future__ import annotations

import time

from vramscope.agent.tensors.buckets import (
    CHANGED,
    GRADIENTS,
    GRADIENTS_UNKNOWN,
    OPTIMIZER_STATE,
    UNOWNED,
    measure,
    UNMET_STATE,
    unseen_note,
)
from vramscope.agent.allocator.peak_window import merge_peaks
from vramscope.agent.protocol import PEAK_BOUND, TENSOR_BUCKETS

READ_TRIES = 3  # the agent thread's tries at one consistent instant


class Instant:
    """The tensor buckets last measured and why a figure is n/a. Uses: the ``registry``
    (the owners, walked), the gradient ``ledger``, the ``unseen`` gradients' watch
    (agent/tensors/unseen_grads.py), ``error`` (counts an exception) and ``unmet_state``
    (an optimizer the agent has not met stepped: its state is not in the figures)."""

    def __init__(self, registry, ledger, unseen, error, unmet_state=None):
        self._registry = registry
        self._ledger = ledger
        self._unseen = unseen
        self._error = error
        # () -> bool: an optimizer the agent has not met has stepped (agent/steps/stretch.py)
        self._unmet_state = unmet_state
        self.tensors: dict[str, dict[str, int | None]] | None = None  # device -> bucket -> bytes
        self.measured = None  # the owners the last buckets were measured from
        # (why activations + temporaries are not known, why gradients are not known)
        # (why activations + temporaries, gradients, optimizer state are not known)
        self.notes: tuple[str | None, str, str | None] = (None, GRADIENTS_UNKNOWN, None)
        self.last_measure_seconds: float | None = None

    def registered(self) -> bool:
        return self._registry.registered()

    def consistent_read(self, read) -> dict:
        """Agent thread: the allocator (``read()``) and the tensors at one instant. The
        training thread runs meanwhile (``zero_grad`` freeing gradients, a first step
        making optimizer state): the tensors are measured before and after the
        allocator's reading, and only a reading with nothing changed around it counts;
        after READ_TRIES the gradients and activations say n/a (CHANGED)."""
        ledger = self._ledger
        peaks: dict[str, tuple] = {}  # device -> (peak, bound) over this sample's tries
        devices: dict = {}
        for _ in range(READ_TRIES):
            before = ledger.fingerprint()
            self.measure_now(False)
            first = self.tensors
            devices = read()
            for name, fields in devices.items():  # each read takes its window's peak: keep all
                peaks[name] = merge_peaks(
                    peaks.get(name), fields.get("peak_allocated"), fields.get(PEAK_BOUND)
                )
            self.measure_now(False)
            if ledger.fingerprint() == before and self.tensors == first:
                break
        else:
            self.tensors = {d: dict(per, gradients=None) for d, per in (self.tensors or {}).items()}
            self.notes = (self.notes[0], CHANGED, self.notes[2])
        for name, (peak, bound) in peaks.items():
            if name in devices:
                devices[name]["peak_allocated"], devices[name][PEAK_BOUND] = peak, bound
        return devices

    def measure_now(self, read_grads: bool) -> None:
        """The tensor buckets now, from the cached owners (None before any registration).
        ``read_grads``: the training thread, which reads ``.grad`` and notes it in the
        ledger; the agent thread takes the ledger's figures, or none while it is stale."""
        registry = self._registry
        owners = self.measured = registry.owners
        self.notes = (None, GRADIENTS_UNKNOWN, None)
        if owners is None:
            self.tensors = {} if registry.registered() else None
            return
        if owners.unowned:
            self.notes = (UNOWNED, GRADIENTS_UNKNOWN, None)
        t0 = time.perf_counter()
        ledger = self._ledger
        try:
            if read_grads:  # (settled when no forward's backward is pending: the ledger is current)
                # every ``.grad`` noted, then the ledger's sum: a gradient is memory held for a
                # gradient until it is freed (one kept alive past ``zero_grad`` still counts), the
                # agent thread's figure too
                ledger.note_all(owners.params, owners.devices, settled=not ledger.forward_pending)
                self.tensors = measure(owners, grads=ledger.per_device())
                registry.settle(owners)
            elif ledger.stale and owners.params:
                self.tensors = measure(owners, grads_known=False)
            else:
                self.tensors = measure(owners, grads=ledger.per_device())
        except Exception as exc:  # a state dict changed size under us: the next sample
            self.tensors = None
            self._error(exc)
        self._without_unseen()
        self._without_unmet_state()
        self.last_measure_seconds = time.perf_counter() - t0

    def _without_unseen(self) -> None:
        """Gradients n/a (with the reason) while a backward fed parameters no walk has found
        (agent/tensors/unseen_grads.py): the ledger and ``.grad`` of the known ones leave theirs out."""
        tensors = self.tensors
        n = self._unseen.count() if tensors is not None else 0
        if tensors is None or n == 0:
            return
        out = {d: per | {GRADIENTS: None} for d, per in tensors.items()}
        for device in self._unseen.devices():
            out.setdefault(device, dict.fromkeys(TENSOR_BUCKETS, 0) | {GRADIENTS: None})
        self.tensors = out
        self.notes = (self.notes[0], unseen_note(n), self.notes[2])

    def _without_unmet_state(self) -> None:
        """Optimizer state n/a (with the reason) while an optimizer the agent has not met
        has stepped: its state is memory, held, that no figure here holds."""
        tensors, unmet = self.tensors, self._unmet_state
        if not tensors or unmet is None or not unmet():
            return
        self.tensors = {d: per | {OPTIMIZER_STATE: None} for d, per in tensors.items()}
        self.notes = (self.notes[0], self.notes[1], UNMET_STATE)

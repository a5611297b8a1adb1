"""Where the planner's model shape comes from when it is read, not typed: a
config.json or a model name, counted at once when that is quick (the hand
formulas, transformers already loaded), else on a worker thread (counting on
the meta device, fetching config.json from the Hub) so the window never
waits. Only the newest request's answer is taken."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject

from vramscope.core.planner import PlanError
from vramscope.core.planner.configs import model_type_of, shape_with_checkpoint
from vramscope.core.planner.hand_counts import HAND_FAMILIES
from vramscope.ui.qt.bridge import Bridge
from vramscope.ui.qt.imported_sources import forget_imported_sources


def shape_of(loaded, field: str):
    """The shape of a LoadedConfig: the checkpoint's count where its headers are known."""
    try:
        return shape_with_checkpoint(loaded.config, loaded.checkpoint)
    except PlanError as exc:
        raise PlanError(field, exc.message) from None


class ShapeLoader(QObject):
    """``on_status(text)`` says what is being read; ``on_shape(source, shape or
    PlanError)`` gives the answer of the newest request."""

    def __init__(self, on_status, on_shape, parent=None):
        super().__init__(parent)
        self.on_status = on_status
        self.on_shape = on_shape
        self.key = None  # the newest request: (source, path or name)
        self.where = ""
        self._bridge = Bridge(self)

    def count(self, key, loaded, where: str) -> None:
        """Count ``loaded`` now when it is quick, else on a thread."""
        self.where = where
        try:
            quick = model_type_of(loaded.config) in HAND_FAMILIES or "transformers" in sys.modules
        except PlanError:
            quick = True
        if quick:
            self.key = key
            try:
                result = shape_of(loaded, key[0])
            except PlanError as exc:
                result = exc
            self._loaded(key, result)
        else:
            self.on_status(f"counting on the meta device ({where})...")
            self.start(key, lambda: shape_of(loaded, key[0]))

    def start(self, key, job, where: str | None = None) -> None:
        """Run ``job`` (a shape or PlanError) on a worker thread."""
        self.key = key
        if where is not None:
            self.where = where

        def work():
            try:
                return job()
            except PlanError as exc:
                return exc
            except Exception as exc:  # never a traceback in the window
                return PlanError(key[0], f"{type(exc).__name__}: {exc}")

        self._bridge.run_in_thread(
            work,
            lambda result, error: self._loaded(
                key, result if error is None else PlanError(key[0], f"{type(error).__name__}: {error}")
            ),
            name="planner-config",
        )

    def _loaded(self, key, result) -> None:
        forget_imported_sources()  # what the lookup imported (transformers, the Hub client)
        if key != self.key:
            return  # an older request finished after a newer one was made
        if not isinstance(result, PlanError):
            self.on_status(f"{result.params:,} parameters, counted by {result.counted_by}, from {self.where}")
        else:
            self.on_status("")
        self.on_shape(key[0], result)

"""One request -> its Figures (training or inference)."""

from __future__ import annotations

from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.inference_plan import inference_figures
from vramscope.core.planner.request import MODES, Figures, PlanRequest
from vramscope.core.planner.training_plan import training_figures


def figures(req: PlanRequest) -> Figures:
    if req.mode not in MODES:
        raise PlanError("mode", f"is train or infer, not {req.mode!r}")
    if req.mode == "train":
        return training_figures(req)
    return inference_figures(req)

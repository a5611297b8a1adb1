"""Per-module figures for the demo's training run (a GPT-2-small-like model):
the report's weights, gradients and optimizer state split over its modules by
their parameter share, activations as a sampled step would give them -- the
12 blocks' attention and MLP, two blocks checkpointed (not available, with
why), tied embeddings marked shared."""

from __future__ import annotations

import dataclasses

from vramscope.core.agent_figures.module_figures import ModuleFigures
from vramscope.core.units import MiB

EVERY = 10  # the demo agent measures one step in 10
LAYERS = 12
CHECKPOINTED = (10, 11)
CKPT_WHY = "activation checkpointing: recomputed in backward (the inputs it keeps count in the caller)"
# (name, parent, share of the parameters, activations in MiB at a micro-batch of 8 x 1024)
_EMBED = (("transformer.wte", "transformer", 0.3116, 48.0), ("transformer.wpe", "transformer", 0.0063, 0.0))
_BLOCK = (("attn", 0.0190, 420.0), ("mlp", 0.0380, 256.0), ("ln_1", 0.00001, 24.0), ("ln_2", 0.00001, 24.0))
_TAIL = (("transformer.ln_f", "transformer", 0.00001, 24.0), ("lm_head", None, 0.0, 1570.0))


def _rows():
    rows = list(_EMBED)
    for i in range(LAYERS):
        for part, share, act in _BLOCK:
            rows.append((f"transformer.h.{i}.{part}", f"transformer.h.{i}", share, act))
    return rows + list(_TAIL)


def modules_for(report) -> tuple:
    """The report with modules measured at its latest sampled step (none before step 1)."""
    dev = report.devices[0] if report.devices else None
    b = dev.buckets if dev is not None else None
    if b is None or not report.step:
        return report
    step = max(1, report.step - report.step % EVERY)
    leaves = {}
    for name, parent, share, act in _rows():
        block = name.split(".")[2] if name.startswith("transformer.h.") else None
        checkpointed = block is not None and int(block) in CHECKPOINTED
        leaves[name] = (
            parent,
            [int(share * v) if v is not None else None for v in (b.weights, b.gradients, b.optimizer_state)],
            None if checkpointed else int(act * MiB),
            CKPT_WHY if checkpointed else None,
        )
    out = []
    for name, (parent, params, act, why) in leaves.items():
        out.append(
            ModuleFigures(
                name, parent, *params, act, step, dev.device, shared=name == "transformer.wte", why=why
            )
        )
    groups = {f"transformer.h.{i}": "transformer.h" for i in range(LAYERS)}
    groups["transformer.h"] = "transformer"
    groups["transformer"] = None
    for group in sorted(groups, key=lambda g: -g.count(".")):
        kids = [m for m in out if m.parent == group]
        # (a checkpointed block saves nothing in forward: its parent's sum is true)
        sums = [
            sum(getattr(m, f) or 0 for m in kids)
            for f in ("weights", "gradients", "optimizer_state", "activations")
        ]
        checkpointed = group.startswith("transformer.h.") and int(group.rpartition(".")[2]) in CHECKPOINTED
        if checkpointed:
            sums[3] = None
        out.append(
            ModuleFigures(
                group, groups[group], *sums, step, dev.device, why=CKPT_WHY if checkpointed else None
            )
        )
    shared = [dataclasses.replace(m, shared=True) if m.name == "lm_head" else m for m in out]
    return dataclasses.replace(report, modules=tuple(shared))

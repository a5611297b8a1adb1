"""How to make an OOM's request fit: the fixes, what each recovers, which cover the shortfall.

Fixes are ranked by what they recover, and marked where that covers the
shortfall: a smaller micro-batch (activations scale with it; gradient
accumulation keeps the effective batch), activation checkpointing on the
modules whose saved activations cover the shortfall, expandable segments
(the whole pages inside the free slivers, from the snapshot), ending another
process, an 8-bit optimizer (Adam's two fp32 moments at 1 byte each: 3/4 of
the state; Dettmers et al., "8-bit Optimizers via Block-wise Quantization",
2022), LoRA (the frozen base needs no gradients or optimizer state; the
adapters are well under 1 % of the parameters: Hu et al., "LoRA", 2021).
Among the fixes that cover the shortfall, the one that changes the run least
is named first (``least_damaging``), in this order: expandable segments (a
setting), a smaller micro-batch with gradient accumulation (the same effective
batch), checkpointing (recomputation), ending another process (somebody's
work), an 8-bit optimizer (numerics), LoRA (another method) -- the fix the OOM
alert names too, so the alert and the report never disagree.
Standard library only.
"""

from __future__ import annotations

from vramscope.agent.oom.oom_numbers import fmt, whole

LINES_TOP = 3  # modules, tensors, processes named in the short report
LORA_KEEPS = 0.01  # the adapters' share of the gradients and optimizer state kept
EIGHT_BIT_SAVES = 0.75
# how much each fix changes the run, least first (the module docstring says why)
EXPANDABLE, MICRO_BATCH, CHECKPOINTING, END_PROCESS, EIGHT_BIT, LORA = range(6)


def _fix(name: str, recovers, detail: str, short: int, damage: int) -> dict:
    return {
        "fix": name,
        "recovers": recovers,
        "detail": detail,
        "covers": recovers is not None and short > 0 and recovers >= short,
        "damage": damage,
    }


def covering(fixes: list[dict]) -> list[dict]:
    """The fixes that cover the shortfall, the one that changes the run least first."""
    return sorted((f for f in fixes if f.get("covers")), key=lambda f: f.get("damage", END_PROCESS))


def least_damaging(fixes: list[dict]) -> dict | None:
    """The fix that covers the shortfall and changes the run least; None when none covers it."""
    return next(iter(covering(fixes)), None)


def _micro_batch(activations, short: int) -> dict | None:
    if not activations:
        return None
    for k in range(1, 6):
        keep = activations >> k
        if activations - keep >= short:
            break
    return _fix(
        f"micro-batch ÷{1 << k}",
        activations - keep,
        f"activations + temporaries ({fmt(activations)}) scale with the micro-batch; "
        f"gradient accumulation ×{1 << k} keeps the effective batch",
        short,
        MICRO_BATCH,
    )


def _checkpointing(modules, short: int) -> dict | None:
    known = [m for m in modules or () if whole(m.get("activations"))]
    if not known:
        return None
    known.sort(key=lambda m: whole(m["activations"]) or 0, reverse=True)
    chosen, total = [], 0
    for m in known:
        chosen.append(str(m.get("name")))
        total += whole(m["activations"]) or 0
        if total >= short or len(chosen) >= 6:
            break
    return _fix(
        "activation checkpointing on " + ", ".join(chosen),
        total,
        "at most their saved activations (each keeps its input and recomputes the rest in backward)",
        short,
        CHECKPOINTING,
    )


def fixes(
    buckets: dict, allocator: dict | None, modules, others, short: int, expandable_on: bool | None
) -> list[dict]:
    out = []
    act = whole(buckets.get("other_allocated"))
    for f in (_micro_batch(act, short), _checkpointing(modules, short)):
        if f is not None:
            out.append(f)
    rec = whole((allocator or {}).get("expandable_recovers"))
    if rec and not expandable_on:
        out.append(
            _fix(
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                rec,
                "the whole pages inside the free slivers of partly used segments",
                short,
                EXPANDABLE,
            )
        )
    for p in sorted(others or (), key=lambda p: whole(p.get("used")) or 0, reverse=True)[:LINES_TOP]:
        if whole(p.get("used")):
            out.append(
                _fix(
                    f"end PID {p.get('pid')} ({p.get('name') or '?'})",
                    whole(p["used"]),
                    "another process holding memory on this GPU",
                    short,
                    END_PROCESS,
                )
            )
    opt, grads = whole(buckets.get("optimizer_state")), whole(buckets.get("gradients"))
    if opt:
        out.append(
            _fix(
                "8-bit optimizer (bitsandbytes Adam8bit)",
                int(opt * EIGHT_BIT_SAVES),
                "Adam's moments at 1 byte each instead of 4",
                short,
                EIGHT_BIT,
            )
        )
    if opt or grads:
        held = (opt or 0) + (grads or 0)
        out.append(
            _fix(
                "LoRA adapters instead of full fine-tuning",
                int(held * (1 - LORA_KEEPS)),
                "the frozen base needs no gradients or optimizer state",
                short,
                LORA,
            )
        )
    out.sort(key=lambda f: f["recovers"] or 0, reverse=True)
    return out

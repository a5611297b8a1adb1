"""How a plan is said: the one formatting of sizes, the fit verdict and the
text report, shared by `vramscope plan` and the Planner tab.

Sizes: GiB (2**30) in the window; the command line prints decimal GB beside
GiB because published figures (model cards, the ZeRO paper's tables) are
decimal. A size under 1 GiB is said in MiB (``size``; MB beside it), and the
command line's table is in MB/MiB for a model that small, so a 125M model
does not read "0.23 GiB". Values under 0.01 of the unit are said as "< 0.01
MiB", never in exponent notation. Buckets are named as the agents tab names
them ("optimizer state", never ``optimizer_state``: ``bucket_label``).
"""

from __future__ import annotations

from dataclasses import dataclass

from vramscope.agent.protocol import Bucket
from vramscope.core.samples import BUCKET_LABELS
from vramscope.core.units import GB, MB, NA, GiB, MiB

# the planner's bucket keys in words: the agents tab's where it has the bucket
_BUCKET_WORDS = {
    "weights": BUCKET_LABELS[Bucket.WEIGHTS],
    "gradients": BUCKET_LABELS[Bucket.GRADIENTS],
    "optimizer_state": BUCKET_LABELS[Bucket.OPTIMIZER_STATE],
    "master_weights": "master weights",
    "activations": "activations",
    "kv_cache": "KV cache",
    "quantization_metadata": "quantization scales",
    "recurrent_state": "recurrent state",
}


def bucket_label(key: str) -> str:
    return _BUCKET_WORDS.get(key, key.replace("_", " "))


# Common cards by the memory their makers publish (GiB as the driver reports
# it, rounded): what a plan is judged against when this machine has no GPU.
REFERENCE_CARDS = (
    ("a 12 GiB card (RTX 3060 12GB, RTX 4070)", 12 * GiB),
    ("a 16 GiB card (RTX 4060 Ti 16GB, RTX 5080)", 16 * GiB),
    ("a 24 GiB card (RTX 3090, RTX 4090)", 24 * GiB),
    ("a 32 GiB card (RTX 5090)", 32 * GiB),
    ("a 48 GiB card (RTX A6000, L40S)", 48 * GiB),
    ("an 80 GiB card (A100 80GB, H100)", 80 * GiB),
    ("a 141 GB card (H200)", 141 * GB),
    ("a 192 GB card (B200)", 192 * GB),
)
FITS, SHORT, UNKNOWN = "fits", "short", "unknown"
NOT_NOW = "not now"  # fits an empty card, not in what is free on it now


def _fmt(n: int | None, unit: int, name: str) -> str:
    if n is None:
        return NA
    if n != 0 and abs(n) < unit // 100:
        return f"{'-' if n < 0 else ''}< 0.01 {name}"
    return f"{n / unit:,.2f} {name}"


def gib(n: int | None) -> str:
    return _fmt(n, GiB, "GiB")


def gb(n: int | None) -> str:
    return _fmt(n, GB, "GB")


def gb_and_gib(n: int | None) -> str:
    return NA if n is None else f"{gb(n)} ({gib(n)})"


def size(n: int | None) -> str:
    """GiB from 1 GiB on, MiB under it: '23.53 GiB', '476.84 MiB'."""
    if n is not None and abs(n) < GiB:
        return _fmt(n, MiB, "MiB")
    return gib(n)


def decimal_and_binary(n: int | None) -> str:
    """'25.27 GB (23.53 GiB)'; '500.00 MB (476.84 MiB)' under 1 GiB."""
    if n is not None and abs(n) < GiB:
        return f"{_fmt(n, MB, 'MB')} ({_fmt(n, MiB, 'MiB')})"
    return gb_and_gib(n)


def signed_size(n: int) -> str:
    """'+1.20 GiB', '-300.00 MiB' (``size``'s units), never '+0.00'."""
    if n and abs(n) < MiB // 100:
        return f"{'+' if n > 0 else '-'} under 0.01 MiB"
    return ("+" if n > 0 else "") + size(n)


@dataclass(frozen=True, slots=True)
class Verdict:
    state: str  # FITS, SHORT or UNKNOWN (no GPU to compare against)
    text: str


def smallest_card(per_gpu: int) -> str | None:
    return next((name for name, size in REFERENCE_CARDS if per_gpu <= size), None)


def verdict(plan, gpu_note: str | None = None, ask: str = "give the GPU memory size") -> Verdict:
    """The one-line answer: fits or not, on which GPU, by how much."""
    need = plan.per_gpu_total
    if not plan.gpus:
        card = smallest_card(need)
        where = f"fits {card}" if card else "larger than any single card: shard it over GPUs"
        why = f" ({gpu_note})" if gpu_note else ""
        return Verdict(UNKNOWN, f"Needs {size(need)} per GPU: {where}. No GPU to compare against{why}: {ask}")
    short = [g for g in plan.gpus if not g.fits]
    if not short:
        busy = [g for g in plan.gpus if g.fits_now is False]
        if not busy:
            if any(g.free is not None for g in plan.gpus):
                tight = min((g for g in plan.gpus if g.free is not None), key=lambda g: g.margin_now)
                return Verdict(
                    FITS,
                    f"Fits: {size(need)} per GPU, {size(tight.margin_now)} to "
                    f"spare now on {tight.name} ({size(tight.free)} free of "
                    f"{size(tight.total)})",
                )
            tight = min(plan.gpus, key=lambda g: g.margin)
            return Verdict(
                FITS,
                f"Fits: {size(need)} per GPU, {size(tight.margin)} to spare on "
                f"{tight.name} ({size(tight.total)})",
            )
        if len(busy) < len(plan.gpus):
            ready = max(
                (g for g in plan.gpus if g not in busy),
                key=lambda g: g.margin if g.free is None else g.margin_now,
            )
            free = f" ({size(ready.free)} free)" if ready.free is not None else ""
            names = ", ".join(g.name for g in busy)
            return Verdict(
                FITS,
                f"Fits now on {ready.name}{free}: {size(need)} per GPU; on "
                f"{names} only once memory is freed ({now_text(busy[0], 1)})",
            )
        most = max(busy, key=lambda g: g.free)
        return Verdict(
            NOT_NOW,
            f"Fits on an empty card; does not fit now: needs {size(need)} "
            f"per GPU, {most.name} has {now_text(most, 1)}",
        )
    worst = min(short, key=lambda g: g.margin)
    names = ", ".join(g.name for g in short)
    return Verdict(
        SHORT,
        f"Does not fit on {names}: needs {size(need)} per GPU, short by "
        f"{size(-worst.margin)} on {worst.name} ({size(worst.total)})",
    )


def now_text(g, holders: int | None = None) -> str:
    """'2.60 GiB free, train.py (23812) holds 14.30 GiB' (the first ``holders``, or all)."""
    held = "".join(f", {who} holds {size(n)}" for who, n in g.holders[:holders])
    return f"{size(g.free)} free{held}"


def gpu_line(plan, g) -> str:
    text = (
        f"fits, {decimal_and_binary(g.margin)} to spare"
        if g.fits
        else f"does NOT fit: short by {decimal_and_binary(-g.margin)}"
    )
    if g.free is not None:
        text += "; now " + ("fits in" if g.fits_now else "does not fit in") + " " + now_text(g)
    if g.conversations is not None:
        text += (
            f"; {g.conversations} conversations of {plan.context:,} tokens fit beside the "
            f"weights, request {g.conversations + 1} waits"
        )
    return text


def model_line(plan) -> str:
    shape = plan.request.shape
    what = f"{shape.model_type} config, counted by {shape.counted_by}" if shape.model_type else shape.source
    active = f", {shape.active_params:,} active per token" if shape.active_params is not None else ""
    return f"{shape.params:,} parameters{active} ({what})"


def render_text(
    plan, gpu_note: str | None = None, ask: str = "give --gpu-memory SIZE (e.g. 24GiB or 80GB)"
) -> str:
    """The command line's report (decimal GB beside GiB, for published figures)."""
    shape = plan.request.shape
    lines = []
    mode = "training" if plan.mode == "train" else "inference"
    lines.append(f"vramscope plan: {mode}, {model_line(plan)}")
    for w in plan.warnings:
        lines.append(f"WARNING: {w}")
    if shape.fields_used:
        lines.append("  fields used: " + ", ".join(shape.fields_used))
    for note in shape.notes:
        lines.append(f"  assumed: {note}")
    lines.append(f"  {plan.layout}")
    lines.append("")
    small = max([plan.total, *(v for _, v in plan.host_buckets)]) < GiB  # in MB/MiB, not 0.23 GiB
    dec, binary = ((MB, "MB"), (MiB, "MiB")) if small else ((GB, "GB"), (GiB, "GiB"))
    names = [bucket_label(n) for n, _ in plan.buckets] + [
        f"host RAM: {bucket_label(n)}" for n, _ in plan.host_buckets
    ]
    width = max([24, *(len(n) + 2 for n in names)])
    head = (
        f"{'bucket (per GPU)':<{width}}{'bytes':>18}"
        f"{dec[1] + (' (10^6)' if small else ' (10^9)'):>14}{binary[1] + (' (2^20)' if small else ' (2^30)'):>14}"
    )
    lines.append(head)
    lines.append("-" * len(head))

    def row(name, value):
        lines.append(
            f"{name:<{width}}{value:>18,}{_fmt(value, dec[0], dec[1]):>14}{_fmt(value, binary[0], binary[1]):>14}"
        )

    for name, value in plan.buckets:
        row(bucket_label(name), value)
    lines.append("-" * len(head))
    row("total per GPU", plan.per_gpu_total)
    if plan.total != plan.per_gpu_total:
        row("total, all GPUs", plan.total)
    for name, value in plan.host_buckets:
        row("host RAM: " + bucket_label(name), value)
    if plan.kv_bytes_per_token:
        lines.append("")
        lines.append(
            f"KV cache: {plan.kv_bytes_per_token:,} B per token ({plan.kv_dtype})"
            + (
                f"; {decimal_and_binary(plan.kv_bytes_per_conversation)} per "
                f"{plan.context:,}-token conversation" + (" with its recurrent state" if shape.state else "")
                if plan.kv_bytes_per_conversation
                else ""
            )
        )
    lines.append("")
    lines.append(verdict(plan, gpu_note, ask).text)
    for g in plan.gpus:
        lines.append(f"  {g.name}, {size(g.total)} ({gb(g.total)}): {gpu_line(plan, g)}")
    if plan.suggestions:
        lines.append("")
        how = "each adds to the ones above" if plan.suggestions_cumulative else "each on its own"
        target = next(g for g in plan.gpus if g.name == plan.suggestions_target)
        lines.append(
            f"What would make it fit on {target.name} ({size(target.total)}), least damaging first ({how}):"
        )
        for i, s in enumerate(plan.suggestions, 1):
            verdict_text = "fits" if s.fits else "still does not fit"
            lines.append(
                f"  {i}. {s.change}\n     -> {decimal_and_binary(s.per_gpu_total)} per GPU, {verdict_text}"
            )
    lines.append("")
    lines.append("Why each bucket:")
    for name, text in plan.explanations:
        lines.append(f"  {bucket_label(name)}: {text}")
    if plan.notes:
        lines.append("")
        for note in plan.notes:
            lines.append(f"note: {note}")
    return "\n".join(lines)

"""The OOM post-mortem: what was asked, what was there, why it did not fit, what would.

A pure function over plain inputs, so the agent (on the training process's
stderr at exit, with what it knows) and the monitor (in the window and
``vramscope export --format oom-report``, adding NVML's view of the GPU)
build the same report:

- ``oom``: the OOM event's data (agent/oom.py): the request, the device's
  free memory and total at that instant, allocated/reserved, the five
  buckets, and the allocator summary at that instant (agent/segments.py);
- ``modules``: optional per-module figures ({name, parent, weights,
  gradients, optimizer_state, activations, shared, why}, bytes or None);
- ``tensors``: optional largest live tensors ({bytes, shape, dtype, module,
  site}), known where allocation sites were being recorded;
- ``others``: optional other processes on the same GPU ({pid, name, used}),
  from NVML (the monitor's side);
- ``outside_pytorch``: this process's memory outside PyTorch's cache (NVML's
  figure for it minus reserved), the monitor's side too.

The shortfall (the request minus what the device had free) is split, in this
order, into what the process wastes itself (fragmentation: free inside its
partly used segments), what other processes hold, what this process holds
outside PyTorch (CUDA context, cuBLAS/cuDNN workspaces, NCCL) and, for the
rest, real need. Each part is at most what is there, so the parts add up to
the shortfall. Without NVML's view the agent says "other processes + outside
PyTorch" as one figure: everything on the GPU that is not free and not this
process's PyTorch cache.

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

import math

GiB = 1 << 30
MiB = 1 << 20
LINES_TOP = 3  # modules, tensors, processes named in the short report
LORA_KEEPS = 0.01  # the adapters' share of the gradients and optimizer state kept
EIGHT_BIT_SAVES = 0.75
# how much each fix changes the run, least first (the module docstring says why)
EXPANDABLE, MICRO_BATCH, CHECKPOINTING, END_PROCESS, EIGHT_BIT, LORA = range(6)


def fmt(n) -> str:
    """Bytes as the monitor prints them (agent side: no core.units here); "n/a" for
    anything that is not a finite number."""
    n = _finite(n)
    if n is None:
        return "n/a"
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _cell(text) -> str:
    """A table cell: no pipe or line break from a stranger's name breaks the table."""
    return " ".join(str(text).replace("|", "\\|").split())


def _finite(v) -> float | None:
    """A finite number as float, else None (a bool, a string, NaN, an int past float's range)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        v = float(v)
    except OverflowError:
        return None
    return v if math.isfinite(v) else None


def _n(v) -> int | None:
    return None if _finite(v) is None else int(v)


def shortfall_split(short: int, fragmentation, others, outside) -> dict:
    """The shortfall in four parts, each at most what is there, in the module's order."""
    parts, left = {}, short
    for key, there in (
        ("fragmentation", fragmentation),
        ("other_processes", others),
        ("outside_pytorch", outside),
    ):
        take = min(left, there) if there is not None else None
        parts[key] = take
        left -= take or 0
    parts["real_need"] = left
    return parts


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
    known = [m for m in modules or () if _n(m.get("activations"))]
    if not known:
        return None
    known.sort(key=lambda m: _n(m["activations"]), reverse=True)
    chosen, total = [], 0
    for m in known:
        chosen.append(str(m.get("name")))
        total += _n(m["activations"])
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
    act = _n(buckets.get("other_allocated"))
    for f in (_micro_batch(act, short), _checkpointing(modules, short)):
        if f is not None:
            out.append(f)
    rec = _n((allocator or {}).get("expandable_recovers"))
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
    for p in sorted(others or (), key=lambda p: _n(p.get("used")) or 0, reverse=True)[:LINES_TOP]:
        if _n(p.get("used")):
            out.append(
                _fix(
                    f"end PID {p.get('pid')} ({p.get('name') or '?'})",
                    _n(p["used"]),
                    "another process holding memory on this GPU",
                    short,
                    END_PROCESS,
                )
            )
    opt, grads = _n(buckets.get("optimizer_state")), _n(buckets.get("gradients"))
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


def build_report(
    oom: dict,
    modules=None,
    tensors=None,
    others=None,
    outside_pytorch=None,
    expandable_on: bool | None = None,
) -> dict:
    """The post-mortem of one OOM event (see the module's docstring)."""
    requested, free, total = _n(oom.get("requested")), _n(oom.get("device_free")), _n(oom.get("device_total"))
    reserved = _n(oom.get("reserved"))
    buckets = oom.get("buckets") if isinstance(oom.get("buckets"), dict) else {}
    allocator = oom.get("allocator") if isinstance(oom.get("allocator"), dict) else None
    short = max(0, requested - free) if requested is not None and free is not None else None
    others = [p for p in _listed(others) if isinstance(p, dict)]
    modules = [m for m in _listed(modules) if isinstance(m, dict)]
    tensors = [t for t in _listed(tensors) if isinstance(t, dict)]
    if others or outside_pytorch is not None:
        other_bytes = sum(_n(p.get("used")) or 0 for p in others) if others is not None else None
        outside = outside_pytorch
        combined = None
    else:  # the agent alone: everything on the GPU neither free nor in this process's cache
        other_bytes = outside = None
        combined = max(0, total - free - reserved) if None not in (total, free, reserved) else None
    split = None
    if short is not None:
        frag = _n((allocator or {}).get("free_split"))
        if frag is None:
            frag = _n(buckets.get("cached_free"))  # no snapshot: the whole cache, an upper bound
        split = shortfall_split(short, frag, other_bytes if combined is None else combined, outside)
        if combined is not None:
            split["other_processes_and_outside_pytorch"] = split.pop("other_processes")
    if expandable_on is None:
        expandable_on = (allocator or {}).get("expandable_recovers") is None and allocator is not None
    top_modules = sorted(
        modules,
        key=lambda m: sum(
            _n(m.get(k)) or 0 for k in ("weights", "gradients", "optimizer_state", "activations")
        ),
        reverse=True,
    )
    return {
        "device": oom.get("device"),
        "time": oom.get("time"),
        "step": oom.get("step"),
        "pid": oom.get("pid"),
        "source": oom.get("source"),
        "requested": requested,
        "device_free": free,
        "device_total": total,
        "largest_free_block": _n((allocator or {}).get("largest_free_block")),
        "allocated": _n(oom.get("allocated")),
        "reserved": reserved,
        "buckets": dict(buckets),
        "allocator": allocator,
        "shortfall": short,
        "split": split,
        "modules": top_modules[:10],
        "tensors": sorted(
            tensors,
            key=lambda t: _n(t.get("bytes")) or 0,
            reverse=True,
        )[:10],
        "others": sorted(others, key=lambda p: _n(p.get("used")) or 0, reverse=True),
        "outside_pytorch": outside_pytorch,
        "fixes": fixes(buckets, allocator, modules, others, short or 0, expandable_on),
    }


BUCKET_WORDS = (
    ("weights", "weights"),
    ("gradients", "gradients"),
    ("optimizer_state", "optimizer"),
    ("other_allocated", "activations + temporaries"),
    ("cached_free", "cached free"),
)
SPLIT_WORDS = {
    "fragmentation": "fragmentation",
    "other_processes": "other processes",
    "outside_pytorch": "outside PyTorch",
    "real_need": "real need",
    "other_processes_and_outside_pytorch": "other processes + outside PyTorch",
}


def _listed(value) -> list:
    """A list or tuple as a list; anything else (a string, a number, a dict) as none."""
    return list(value) if isinstance(value, (list, tuple)) else []


def split_text(split: dict) -> str:
    """': other processes 1.0 GiB, outside PyTorch 300 MiB' -- the parts there are, largest
    first (a part of 0 B is no reason); ', all of it real need' when that is the one."""
    parts = sorted(((k, v) for k, v in split.items() if v), key=lambda kv: -kv[1])
    if len(parts) == 1:
        return f", all of it {SPLIT_WORDS[parts[0][0]]}"
    return (": " + ", ".join(f"{SPLIT_WORDS[k]} {fmt(v)}" for k, v in parts)) if parts else ""


def tensor_text(t: dict) -> str:
    shape = "x".join(str(d) for d in _listed(t.get("shape"))) or "?"
    where = " ".join(x for x in (t.get("module"), f"at {t['site']}" if t.get("site") else None) if x)
    return f"{fmt(t.get('bytes'))} {t.get('dtype') or '?'}[{shape}]" + (f" {where}" if where else "")


def lines(r: dict) -> list[str]:
    """The report in about a dozen lines (the training process's stderr, the window)."""
    step = f" at step {r['step']}" if r.get("step") is not None else ""
    out = [
        f"vramscope: CUDA out of memory on {r.get('device') or 'the GPU'}{step}",
        f"  asked {fmt(r['requested'])}; free on the device {fmt(r['device_free'])}"
        f" of {fmt(r['device_total'])}; largest free block in PyTorch's cache "
        f"{fmt(r['largest_free_block'])}",
    ]
    b = r["buckets"]
    out.append(
        f"  PyTorch allocated {fmt(r['allocated'])}, reserved {fmt(r['reserved'])}: "
        + ", ".join(f"{w} {fmt(b.get(k))}" for k, w in BUCKET_WORDS)
    )
    if r["split"] is not None:
        out.append(f"  short by {fmt(r['shortfall'])}{split_text(r['split'])}")
    if r["modules"]:
        out.append(
            "  largest modules: "
            + "; ".join(
                f"{m.get('name')} {fmt(sum(_n(m.get(k)) or 0 for k in ('weights', 'gradients', 'optimizer_state', 'activations')))}"
                for m in r["modules"][:LINES_TOP]
            )
        )
    if r["tensors"]:
        out.append("  largest live tensors: " + "; ".join(tensor_text(t) for t in r["tensors"][:LINES_TOP]))
    if r["others"]:
        out.append(
            "  other processes on this GPU: "
            + "; ".join(
                f"{p.get('name') or '?'} ({p.get('pid')}) {fmt(p.get('used'))}"
                for p in r["others"][:LINES_TOP]
            )
        )
    if r["fixes"]:
        out.append("  fixes, by what they recover:")
        for i, f in enumerate(r["fixes"][:4], 1):
            mark = " (covers the shortfall)" if f["covers"] else ""
            out.append(f"   {i}. {f['fix']}: {fmt(f['recovers'])}{mark}")
        first = least_damaging(r["fixes"])
        if first is not None:
            out.append(f"  least damaging that covers it: {first['fix']}")
    return out


def markdown(r: dict, title: str | None = None) -> str:
    """The full report as Markdown (``vramscope export --format oom-report``)."""
    md = [
        f"## {title or 'CUDA out of memory'} on {r.get('device') or 'the GPU'}"
        + (f" at step {r['step']}" if r.get("step") is not None else ""),
        "",
    ]
    md += [
        f"- requested: **{fmt(r['requested'])}**",
        f"- free on the device: {fmt(r['device_free'])} of {fmt(r['device_total'])}",
        f"- largest free block in PyTorch's cache: {fmt(r['largest_free_block'])}",
        f"- PyTorch allocated {fmt(r['allocated'])}, reserved {fmt(r['reserved'])}",
        "",
        "| bucket | bytes |",
        "|---|---:|",
    ]
    md += [f"| {w} | {fmt(r['buckets'].get(k))} |" for k, w in BUCKET_WORDS]
    if r["split"] is not None:
        md += ["", f"### Short by {fmt(r['shortfall'])}", "", "| part | bytes |", "|---|---:|"]
        md += [f"| {SPLIT_WORDS[k]} | {fmt(v)} |" for k, v in r["split"].items()]
    a = r.get("allocator")
    if a:
        md += [
            "",
            "### The allocator at that instant",
            "",
            f"- free inside partly used segments (fragmentation): {fmt(a.get('free_split'))}",
            f"- whole free segments: {fmt(a.get('free_segments'))}",
            f"- largest request seen: {fmt(a.get('largest_request'))}",
        ]
    if r["modules"]:
        md += [
            "",
            "### Largest modules",
            "",
            "| module | weights | gradients | optimizer | activations |",
            "|---|---:|---:|---:|---:|",
        ]
        md += [
            f"| {_cell(m.get('name'))} | {fmt(m.get('weights'))} | {fmt(m.get('gradients'))} | "
            f"{fmt(m.get('optimizer_state'))} | {fmt(m.get('activations'))} |"
            for m in r["modules"]
        ]
    if r["tensors"]:
        md += ["", "### Largest live tensors", ""] + [f"- {_cell(tensor_text(t))}" for t in r["tensors"]]
    if r["others"]:
        md += ["", "### Other processes on this GPU", "", "| PID | name | memory |", "|---:|---|---:|"]
        md += [
            f"| {p.get('pid')} | {_cell(p.get('name') or '?')} | {fmt(p.get('used'))} |" for p in r["others"]
        ]
    if r["fixes"]:
        md += [
            "",
            "### Fixes, by what they recover",
            "",
            "| fix | recovers | covers the shortfall | why |",
            "|---|---:|:---:|---|",
        ]
        md += [
            f"| {_cell(f['fix'])} | {fmt(f['recovers'])} | {'yes' if f['covers'] else 'no'} | {f['detail']} |"
            for f in r["fixes"]
        ]
        first = least_damaging(r["fixes"])
        if first is not None:
            md += ["", f"Least damaging fix that covers the shortfall: **{_cell(first['fix'])}**."]
    return "\n".join(md) + "\n"

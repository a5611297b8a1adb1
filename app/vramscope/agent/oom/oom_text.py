"""The OOM post-mortem in words: a dozen lines (the training process's stderr at exit,
the window) and a Markdown section (``vramscope export --format oom-report``).
Standard library only.
"""

from __future__ import annotations

from vramscope.agent.oom.oom_fixes import LINES_TOP, least_damaging
from vramscope.agent.oom.oom_numbers import fmt, listed, whole

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


def _cell(text) -> str:
    """A table cell: no pipe or line break from a stranger's name breaks the table."""
    return " ".join(str(text).replace("|", "\\|").split())


def split_text(split: dict) -> str:
    """': other processes 1.0 GiB, outside PyTorch 300 MiB' -- the parts there are, largest
    first (a part of 0 B is no reason); ', all of it real need' when that is the one."""
    parts = sorted(((k, v) for k, v in split.items() if v), key=lambda kv: -kv[1])
    if len(parts) == 1:
        return f", all of it {SPLIT_WORDS[parts[0][0]]}"
    return (": " + ", ".join(f"{SPLIT_WORDS[k]} {fmt(v)}" for k, v in parts)) if parts else ""


def tensor_text(t: dict) -> str:
    shape = "x".join(str(d) for d in listed(t.get("shape"))) or "?"
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
                f"{m.get('name')} {fmt(sum(whole(m.get(k)) or 0 for k in ('weights', 'gradients', 'optimizer_state', 'activations')))}"
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

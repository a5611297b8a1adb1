"""The lines `vramscope snapshot` prints and the viewer's comparison shows (escaped by
whoever writes them to a terminal: stack frames are the snapshot author's text)."""

from __future__ import annotations

from vramscope.core.units import fmt_bytes, fmt_count

STACK_LINES = 4  # frames shown under each group; --json has them all


def _time(t, first=None) -> str:
    if t is None:
        return "before the trace"
    after = f" ({(t - first) / 1e6:.3f} s after the first entry)" if first is not None else ""
    return f"t={t} µs{after}"


def _groups(groups: list[dict], top: int) -> list[str]:
    out = []
    for g in groups[:top]:
        out.append(f"  {fmt_bytes(g['bytes']):>10}  {g['count']:>6}x  {g['site'] or '(no frames)'}")
        frames = g["frames"]
        for f in frames[:STACK_LINES]:
            out.append(f"                      {f['filename']}:{f['line']} in {f['name']}")
        if len(frames) > STACK_LINES:
            out.append(
                f"                      ... {len(frames) - STACK_LINES} more frame{'s' if len(frames) - STACK_LINES > 1 else ''}"
            )
    return out


def summary_lines(path: str, s: dict, top: int) -> list[str]:
    lines = [f"{path}:"]
    if s.get("reader", "native") != "native":  # the pure-Python reader, and why
        lines.append(f"  read by the {s['reader']}: slower, and about 4.5x the file in memory")
    if s["unknown_fields"]:
        lines.append(f"  fields this vramscope does not know (kept): {', '.join(s['unknown_fields'][:8])}")
    for d in s["devices"]:
        frag = d["fragmentation"]
        lines.append(
            f"device {d['device']}: reserved {fmt_bytes(d['reserved'])}, allocated {fmt_bytes(d['allocated'])}"
            f" in {fmt_count(d['segments'], 'segment')}; largest free block {fmt_bytes(d['largest_free'])}"
            + (f", fragmentation {frag:.0%}" if frag is not None else "")
        )
        lines.append(
            f"  {d['events']} trace entries; peak allocated {fmt_bytes(d['peak_allocated'])} at "
            f"{_time(d['peak_time_us'], d['first_time_us']) if d['timestamps'] else 'entry ' + str(d['peak_entry'])}"
            f" ({fmt_bytes(d['allocated_before_trace'])} alive before the trace)"
        )
        for o in d["ooms"]:
            lines.append(
                f"  OOM at {_time(o['time_us'], d['first_time_us'])}: {fmt_bytes(o['requested'])} requested, "
                f"{fmt_bytes(o['allocated'])} allocated, {fmt_bytes(o['device_free'])} free on the device"
            )
        if d["top_at_peak"]:
            lines.append("  alive at the peak, by stack:")
            lines += _groups(d["top_at_peak"], top)
        at = d.get("at")
        if at is not None:
            lines.append(f"  alive at t={at['time_us']} µs: {fmt_bytes(at['allocated'])}")
            lines += _groups(at["top"], top)
    return lines


def comparison_lines(diff: dict, top: int) -> list[str]:
    lines = ["difference (second - first):"]
    for d in diff["devices"]:
        parts = []
        for key, word in (("peak_allocated", "peak"), ("reserved", "reserved"), ("allocated", "allocated")):
            delta = d[key]["delta"]
            sign = "+" if delta and delta > 0 else "-" if delta and delta < 0 else "±"
            parts.append(f"{word} {sign}{fmt_bytes(abs(delta)) if delta is not None else 'n/a'}")
        lines.append(f"device {d['device']}: " + ", ".join(parts))
        for c in d["top_changes_at_peak"][:top]:
            sign = "+" if c["delta"] > 0 else "-"
            lines.append(f"  {sign}{fmt_bytes(abs(c['delta'])):>10}  {c['site'] or '(no frames)'}")
    return lines

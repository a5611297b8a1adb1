"""The summary ``vramscope snapshot`` prints and its JSON; the difference of two snapshots.

Per device: reserved and allocated bytes and the segments at the snapshot
(count, largest free block, fragmentation as 1 - largest free / total free,
from ``agent/segments.summarize``), the number of trace entries, every OOM
with its requested size, the peak of allocated bytes over the trace with its
time, and what was alive then grouped by stack (largest first; each stack
whole, its innermost frame in user code named as ``site``). ``at`` gives the
same breakdown at another instant.
"""

from __future__ import annotations

from vramscope.agent.allocator import segments as seg_summary
from vramscope.agent.allocator.sites import INTERNAL
from vramscope.core.snapshot import columns as C
from vramscope.core.snapshot.replay import START, Breakdown, DeviceReplay

TOP = 20


def site(frames) -> str | None:
    """'train.py:88 in forward': the innermost frame outside torch and vramscope's agent
    (the innermost frame of all where every frame is inside them)."""
    first = None
    for filename, line, name in frames:
        if not filename or filename.startswith("??"):
            continue
        text = f"{filename}:{line} in {name}"
        first = first or text
        if not any(part in filename for part in INTERNAL):
            return text
    return first


def frame_dicts(frames) -> list[dict]:
    return [{"filename": f, "line": ln, "name": n} for f, ln, n in frames]


def groups_json(snap: C.Snapshot, b: Breakdown, top: int) -> list[dict]:
    out = []
    for stack, nbytes, count in b.groups[:top]:
        frames = snap.stacks.frames_of(stack)
        out.append({"bytes": nbytes, "count": count, "site": site(frames), "frames": frame_dicts(frames)})
    return out


def segment_figures(segments: list[dict]) -> dict:
    """reserved, allocated, segments, largest_free and fragmentation of Segment dicts."""
    fig = seg_summary.summarize(segments)
    free = (fig.get("free_split") or 0) + (fig.get("free_segments") or 0)
    largest = fig.get("largest_free_block") or 0
    return {
        "reserved": fig.get("reserved"),
        "allocated": fig.get("allocated"),
        "segments": fig.get("segments"),
        "largest_free": largest,
        "free": free,
        "fragmentation": round(1 - largest / free, 4) if free else None,
    }


def ooms(snap: C.Snapshot, replay: DeviceReplay) -> list[dict]:
    code = snap.actions.index(C.OOM)
    t = replay.trace
    out = []
    for row in (t.action == code).nonzero()[0].tolist():
        other = t.other.get(row, {})
        out.append(
            {
                "entry": row,
                "time_us": int(t.time_us[row]) if t.timestamps else None,
                "requested": int(t.size[row]),
                "device_free": other.get("device_free"),
                "allocated": int(replay.curve[row]),
            }
        )
    return out


def device_summary(snap: C.Snapshot, device: int, at_time: int | None = None, top: int = TOP) -> dict:
    replay = DeviceReplay(snap, device)
    trace = replay.trace
    peak, peak_at = replay.peak()
    figures = segment_figures(snap.device_segments(device))
    out = {
        "device": device,
        **figures,
        "events": len(trace),
        "timestamps": trace.timestamps,
        "ooms": ooms(snap, replay),
        "allocated_before_trace": replay.base,
        "peak_allocated": peak,
        "peak_entry": peak_at if peak_at != START else None,
        "peak_time_us": replay.time_of(peak_at) if trace.timestamps else None,
        "top_at_peak": groups_json(snap, replay.breakdown(peak_at, top), top),
        "first_time_us": replay.time_of(0) if trace.timestamps else None,
        "last_time_us": replay.time_of(len(trace) - 1) if trace.timestamps else None,
    }
    if at_time is not None:
        at = replay.index_at(at_time)
        b = replay.breakdown(at, top)
        out["at"] = {
            "time_us": at_time,
            "entry": at if at != START else None,
            "allocated": b.total,
            "top": groups_json(snap, b, top),
        }
    return out


def summary(snap: C.Snapshot, device: int | None = None, at_time: int | None = None, top: int = TOP) -> dict:
    devices = snap.devices() if device is None else [device]
    return {
        "devices": [device_summary(snap, d, at_time, top) for d in devices],
        "unknown_fields": snap.unknown_fields,
        "frames": len(snap.stacks.frames),
        "stacks": len(snap.stacks.stacks) - 1,
        "reader": snap.reader,
    }


def _by_stack(entries: list[dict]) -> dict:
    return {tuple((f["filename"], f["line"], f["name"]) for f in g["frames"]): g for g in entries}


def compare(a: dict, b: dict) -> dict:
    """The difference of two summaries (``b`` - ``a``), device by device; the stacks alive
    at each peak matched by content, largest change first."""
    out = []
    bdev = {d["device"]: d for d in b["devices"]}
    for da in a["devices"]:
        db = bdev.pop(da["device"], None)
        out.append(_compare_device(da, db))
    out.extend(_compare_device(None, db) for db in bdev.values())
    return {"devices": out}


def _delta(x, y):
    return None if x is None or y is None else y - x


def _compare_device(da: dict | None, db: dict | None) -> dict:
    dev = (da or db)["device"]
    keys = ("peak_allocated", "reserved", "allocated", "largest_free", "events")
    row = {"device": dev}
    for k in keys:
        x, y = (da or {}).get(k), (db or {}).get(k)
        row[k] = {"a": x, "b": y, "delta": _delta(x, y)}
    sa, sb = _by_stack((da or {}).get("top_at_peak", [])), _by_stack((db or {}).get("top_at_peak", []))
    changes = []
    for key in sa.keys() | sb.keys():
        ga, gb = sa.get(key), sb.get(key)
        x, y = (ga["bytes"] if ga else 0), (gb["bytes"] if gb else 0)
        if x != y:
            g = gb or ga
            changes.append({"site": g["site"], "frames": g["frames"], "a": x, "b": y, "delta": y - x})
    changes.sort(key=lambda c: (-abs(c["delta"]), c["site"] or ""))
    row["top_changes_at_peak"] = changes
    return row

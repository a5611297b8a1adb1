"""Allocation sites from a memory snapshot recorded with history (stack frames).

``torch.cuda.memory._record_memory_history(stacks="python")`` makes the
allocator keep, for every allocation, the Python frames that made it, and a
bounded trace of alloc/free events per device (``device_traces``; PyTorch's
"Understanding CUDA Memory Usage"). From a snapshot taken then:

- ``site_of(frames)``: the user's line that allocated -- the first frame that
  is not inside torch itself or this agent ("file:line in function");
- ``peak_sites(snapshot, device)``: replay the device's trace, find the
  instant allocated bytes were highest, and group the blocks alive at that
  instant by site (bytes, count) -- the top allocation sites by bytes alive at
  the peak. Blocks allocated before the trace (the weights, made before
  recording began) are counted from the snapshot's segments as alive
  throughout; a trace that filled its ring (``max_entries``) is said: its
  peak may lie before the oldest event kept;
- ``live_tensors(segments, tensors)``: the largest live tensors with shape,
  dtype and site, by matching tensors' storage addresses to blocks.

Standard library only (runs inside training).
"""

from __future__ import annotations

import os

INTERNAL = (os.sep + "torch" + os.sep, os.sep + "vramscope" + os.sep + "agent" + os.sep)
TOP_SITES = 20


def site_of(frames) -> str | None:
    """'train.py:88 in forward' for the first frame outside torch and the agent."""
    first = None
    for f in frames or ():
        if not isinstance(f, dict):
            continue
        name = str(f.get("filename") or "")
        if not name or name.startswith("??"):
            continue
        text = f"{name}:{f.get('line')} in {f.get('name')}"
        if first is None:
            first = text
        if not any(part in name for part in INTERNAL):
            return text
    return first


def peak_sites(snapshot: dict, device: int = 0, top: int = TOP_SITES, max_entries: int | None = None) -> dict:
    """{peak_bytes, peak_time_us, sites: [{site, bytes, count}], complete, why}."""
    traces = snapshot.get("device_traces") or []
    trace = traces[device] if 0 <= device < len(traces) else []
    # blocks alive before the trace began: in the segments now and never allocated in the trace
    allocated_in_trace = {e.get("addr") for e in trace if e.get("action") == "alloc"}
    live: dict = {}
    base = 0
    for seg in snapshot.get("segments") or ():
        if seg.get("device", device) != device:
            continue
        for b in seg.get("blocks") or ():
            if b.get("state") == "active_allocated" and b.get("address") not in allocated_in_trace:
                live[b.get("address")] = (b.get("size") or 0, site_of(b.get("frames")))
                base += b.get("size") or 0
    current = peak = base
    peak_live = dict(live)
    peak_time = None
    for e in trace:
        action = e.get("action")
        if action == "alloc":
            live[e.get("addr")] = (e.get("size") or 0, site_of(e.get("frames")))
            current += e.get("size") or 0
            if current > peak:
                peak, peak_time, peak_live = current, e.get("time_us"), dict(live)
        elif action in ("free_requested",):
            got = live.pop(e.get("addr"), None)
            if got is not None:
                current -= got[0]
    sites: dict = {}
    for size, site in peak_live.values():
        s = sites.setdefault(site or "(no Python frame)", [0, 0])
        s[0] += size
        s[1] += 1
    ranked = sorted(sites.items(), key=lambda kv: kv[1][0], reverse=True)[:top]
    full = max_entries is not None and len(trace) >= max_entries
    complete = bool(trace) and not full
    why = None
    if not trace:
        why = "no allocation trace: history was not on, or nothing was allocated while it was"
    elif full:
        why = (
            f"the history buffer filled (max_entries={max_entries}): the oldest events were "
            "dropped, so the peak may lie before the trace; blocks allocated before it count "
            "as alive throughout"
        )
    return {
        "peak_bytes": peak,
        "peak_time_us": peak_time,
        "complete": complete,
        "why": why,
        "sites": [{"site": k, "bytes": v[0], "count": v[1]} for k, v in ranked],
    }


def block_sites(segments, device: int | None = None) -> dict:
    """Block address -> (size, site) for the allocated blocks that carry frames."""
    out = {}
    for seg in segments or ():
        if device is not None and seg.get("device", device) != device:
            continue
        for b in seg.get("blocks") or ():
            if b.get("state") == "active_allocated":
                out[b.get("address")] = (b.get("size") or 0, site_of(b.get("frames")))
    return out


def live_tensors(segments, tensors, device: int | None = None, top: int = 10) -> list[dict]:
    """``tensors``: (storage address, bytes, shape, dtype, module or None) of live tensors ->
    the largest, each with the site of the block it lives in; a storage seen twice
    (views) counts once."""
    blocks = block_sites(segments, device)
    seen, out = set(), []
    for ptr, nbytes, shape, dtype, module in tensors:
        if ptr in seen:
            continue
        seen.add(ptr)
        got = blocks.get(ptr)
        out.append(
            {
                "bytes": nbytes,
                "shape": list(shape),
                "dtype": str(dtype).replace("torch.", ""),
                "module": module,
                "site": got[1] if got else None,
            }
        )
    out.sort(key=lambda t: t["bytes"], reverse=True)
    return out[:top]


def cuda_tensors(device_index: int, limit: int = 2_000_000):
    """(storage address, bytes, shape, dtype, None) of the live CUDA tensors on a device,
    found by the garbage collector's list (bounded: ``limit`` objects looked at). Only
    at an OOM: it walks every object."""
    import gc
    import warnings

    import torch

    out = []
    tensor = torch.Tensor
    with warnings.catch_warnings():  # the training process sees no warning of ours
        warnings.simplefilter("ignore")
        for i, obj in enumerate(gc.get_objects()):
            if i >= limit:
                break
            # type(), not isinstance(): no __class__ property of a lazy module runs
            if not issubclass(type(obj), tensor):
                continue
            try:
                if obj.is_cuda and obj.device.index == device_index:
                    st = obj.untyped_storage()
                    out.append((st.data_ptr(), st.nbytes(), tuple(obj.shape), obj.dtype, None))
            except Exception:
                continue
    return out

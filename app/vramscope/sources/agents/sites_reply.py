"""An allocation-site recording's progress and result as an agent sends them
(agent/allocator/site_recorder.py, agent/allocator/sites.py), checked before `vramscope sites` uses them.

The agent is another process: a figure may come as a string, NaN or 1e400, a
device table as a list, a site as a number. What does not fit is dropped
(a field as None, an entry left out), so the command prints what is usable,
its text output never raises and its ``--json`` output is strict JSON (no
NaN: RFC 8259 section 6).
"""

from __future__ import annotations

from vramscope.sources.agents.agent_input import finite, integer, text

MAX_DEVICES = 64
MAX_SITES = 200  # per device (the agent sends its top 20)
MAX_PATH = 4096  # a file path (PATH_MAX)
MAX_WHY = 1000
STATES = ("recording", "done", "failed")


def _site(raw) -> dict | None:
    if not isinstance(raw, dict):
        return None
    site = text(raw.get("site"), MAX_PATH)
    if site is None:
        return None
    return {"site": site, "bytes": integer(raw.get("bytes")), "count": integer(raw.get("count"))}


def _device(raw) -> dict | None:
    if not isinstance(raw, dict):
        return None
    sites = raw.get("sites")
    sites = [s for s in map(_site, sites[:MAX_SITES] if isinstance(sites, list) else ()) if s is not None]
    complete = raw.get("complete")
    return {
        "peak_bytes": integer(raw.get("peak_bytes")),
        "peak_time_us": finite(raw.get("peak_time_us")),
        "complete": complete if isinstance(complete, bool) else None,
        "why": text(raw.get("why"), MAX_WHY),
        "sites": sites,
    }


def sites_data(raw) -> dict:
    """A SITES event's data (or the final result) with every field checked: the known
    fields, each of its type or None; the devices whose figures are an object."""
    raw = raw if isinstance(raw, dict) else {}
    devices = raw.get("devices")
    checked = {}
    if isinstance(devices, dict):
        for name, device in list(devices.items())[:MAX_DEVICES]:
            d = _device(device)
            if d is not None:
                checked[str(name)[:64]] = d
    state = raw.get("state")
    return {
        "state": state if state in STATES else None,
        "steps": integer(raw.get("steps")),
        "done_steps": integer(raw.get("done_steps")),
        "overhead": finite(raw.get("overhead")),
        "us_per_alloc": finite(raw.get("us_per_alloc")),
        "snapshot_path": text(raw.get("snapshot_path"), MAX_PATH),
        "why": text(raw.get("why"), MAX_WHY),
        "devices": checked,
    }


def refusal(raw) -> str:
    """Why a request was refused, from a reply that is not ok (its "error" if it is text)."""
    why = text(raw.get("error"), MAX_WHY) if isinstance(raw, dict) else None
    return why or "the agent refused the request"

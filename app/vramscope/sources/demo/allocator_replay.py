"""A provider that replays allocator statistics (tests, benches): never loaded into a training process.

``memory_stats_dict`` builds a dict with the same flat keys as
``torch.cuda.memory_stats()`` on the native caching allocator, so the agent
code under test walks the real shape. The scenario builders produce the
three sequences that matter: a ramp (model load, then steady training), a
fragmentation build-up (reserved runs away from allocated, inactive_split
and alloc retries rise), and an OOM (``num_ooms`` ticks up at the failing
allocation).
"""

from __future__ import annotations

MiB = 1 << 20
GiB = 1 << 30

_STAT_TYPES = (
    "active",
    "active_bytes",
    "allocated_bytes",
    "allocation",
    "inactive_split",
    "inactive_split_bytes",
    "oversize_allocations",
    "oversize_segments",
    "requested_bytes",
    "reserved_bytes",
    "segment",
)
_POOLS = ("all", "large_pool", "small_pool")
_METRICS = ("allocated", "current", "freed", "peak")


def memory_stats_dict(
    allocated: int,
    reserved: int,
    *,
    peak: int | None = None,
    active: int | None = None,
    inactive_split: int = 0,
    requested: int | None = None,
    num_alloc_retries: int = 0,
    num_ooms: int = 0,
    num_device_alloc: int = 0,
    num_device_free: int = 0,
    allocations: int = 0,
    frees: int = 0,
) -> dict:
    """A flat dict shaped like torch.cuda.memory_stats() (native allocator)."""
    current = {
        "active": max(0, allocations - frees),
        "active_bytes": active if active is not None else allocated,
        "allocated_bytes": allocated,
        "allocation": max(0, allocations - frees),
        "inactive_split": 1 if inactive_split else 0,
        "inactive_split_bytes": inactive_split,
        "oversize_allocations": 0,
        "oversize_segments": 0,
        "requested_bytes": requested if requested is not None else allocated,
        "reserved_bytes": reserved,
        "segment": max(1, num_device_alloc - num_device_free),
    }
    stats: dict = {}
    for st in _STAT_TYPES:
        cur = current[st]
        for pool in _POOLS:
            share = cur if pool == "all" else (cur * 9 // 10 if pool == "large_pool" else cur - cur * 9 // 10)
            for metric in _METRICS:
                if metric == "current":
                    v = share
                elif metric == "peak":
                    v = (
                        share
                        if not (st == "allocated_bytes" and pool == "all" and peak is not None)
                        else peak
                    )
                elif metric == "allocated":
                    v = allocations if st in ("allocation", "active") else share
                else:
                    v = frees if st in ("allocation", "active") else 0
                stats[f"{st}.{pool}.{metric}"] = v
    stats.update(
        {
            "max_split_size": -1,
            "num_alloc_retries": num_alloc_retries,
            "num_device_alloc": num_device_alloc,
            "num_device_free": num_device_free,
            "num_ooms": num_ooms,
            "num_sync_all_streams": 0,
        }
    )
    return dict(sorted(stats.items()))


class ReplayProvider:
    """Plays back frames: each frame maps device index -> memory_stats dict.

    Every ``devices()`` call (one per agent read) moves to the next frame;
    after the last frame it stays there (or starts over with ``loop=True``).
    """

    def __init__(
        self,
        frames: list[dict[int, dict]],
        settings: dict | None = None,
        totals: dict[int, int] | None = None,
        loop: bool = False,
        snapshot: dict | None = None,
        history: bool = False,
        phase_frames: list[dict[int, int]] | None = None,
    ):
        if not frames:
            raise ValueError("a replay needs at least one frame")
        self.frames = frames
        self.loop = loop
        self.index = -1
        self._settings = settings or {
            "backend": "native",
            "expandable_segments": False,
            "max_split_size": None,
            "conf": "",
        }
        self._totals = totals or {}
        self._snapshot = snapshot
        self._history = history
        self.phase_frames = phase_frames  # allocated per device, one per phase reading
        self.phase_index = -1
        self._allocated: tuple | None = None  # (frame index, its allocated per device), never changed

    def allocated_now(self) -> dict[int, int]:
        """The phase hooks' reading: the next of ``phase_frames`` (then the last one
        again), or the current frame's allocated when no phase frames were given."""
        if self.phase_frames:
            if self.phase_index + 1 < len(self.phase_frames):
                self.phase_index += 1
            return dict(self.phase_frames[self.phase_index])
        index = self.index
        cached = self._allocated
        if cached is None or cached[0] != index:  # (read once per frame: the hooks call this every step)
            cached = self._allocated = (
                index,
                {
                    i: int(s.get("allocated_bytes.all.current", 0))
                    for i, s in self.frames[max(0, index)].items()
                },
            )
        return cached[1]

    @property
    def current(self) -> dict[int, dict]:
        return self.frames[max(0, self.index)]

    def devices(self) -> list[int]:
        if self.index + 1 < len(self.frames):
            self.index += 1
        elif self.loop:
            self.index = 0
        return sorted(self.current)

    def memory_stats(self, index: int) -> dict:
        return self.current.get(index, {})

    def device_info(self, index: int) -> dict:
        return {
            "uuid": f"GPU-replay-{index:04d}",
            "total": self._totals.get(index, 24 * GiB),
            "name": "Replayed GPU",
        }

    def allocator_settings(self) -> dict:
        return dict(self._settings)

    def snapshot(self, index: int | None = None) -> dict:
        return self._snapshot if self._snapshot is not None else {"segments": [], "device_traces": []}

    def history_enabled(self) -> bool:
        return self._history


# --- scenarios -------------------------------------------------------------------


def scenario_ramp(device: int = 0, weights: int = 2 * GiB, steps: int = 20) -> list[dict[int, dict]]:
    """Load the weights, then training steps: activations rise and fall each step."""
    frames = []
    allocs = frees = dev_alloc = 0
    for i in range(5):  # loading
        alloc = weights * (i + 1) // 5
        allocs += 40
        dev_alloc += 2
        frames.append(
            {
                device: memory_stats_dict(
                    alloc, alloc + 20 * MiB, num_device_alloc=dev_alloc, allocations=allocs, frees=frees
                )
            }
        )
    peak = weights
    for s in range(steps):
        fixed = weights * 4  # + grads + Adam state after the first step
        act = 3 * GiB
        peak = max(peak, fixed + act)
        allocs += 500
        frees += 480
        frames.append(
            {
                device: memory_stats_dict(
                    fixed + 256 * MiB,
                    fixed + act + 512 * MiB,
                    peak=peak,
                    num_device_alloc=dev_alloc + 10,
                    allocations=allocs,
                    frees=frees,
                )
            }
        )
    return frames


def scenario_fragmentation(device: int = 0, steps: int = 20) -> list[dict[int, dict]]:
    """Allocated flat, reserved climbing, inactive_split high, alloc retries rising."""
    frames = []
    allocated = 10 * GiB
    for s in range(steps):
        reserved = allocated + (1 + s) * 512 * MiB
        frames.append(
            {
                device: memory_stats_dict(
                    allocated,
                    reserved,
                    peak=allocated + 2 * GiB,
                    inactive_split=(1 + s) * 400 * MiB,
                    num_alloc_retries=s // 3,
                    num_device_alloc=20 + s,
                    allocations=1000 * (s + 1),
                    frees=1000 * (s + 1) - 50,
                )
            }
        )
    return frames


def scenario_oom(device: int = 0, total: int = 24 * GiB) -> list[dict[int, dict]]:
    """Memory climbs to the capacity; the allocator reports one OOM at the end."""
    frames = []
    for i, alloc in enumerate((12 * GiB, 16 * GiB, 20 * GiB, 22 * GiB)):
        frames.append(
            {
                device: memory_stats_dict(
                    alloc, alloc + GiB, peak=alloc, num_device_alloc=10 + i, allocations=100 * (i + 1)
                )
            }
        )
    frames.append(
        {
            device: memory_stats_dict(
                22 * GiB,
                total - 256 * MiB,
                peak=23 * GiB,
                num_ooms=1,
                num_alloc_retries=1,
                num_device_alloc=15,
                allocations=500,
            )
        }
    )
    return frames


def scenario_phases(
    device: int = 0, weights: int = 2 * GiB, activations: int = 8 * GiB, steps: int = 5
) -> tuple[list[dict[int, dict]], list[dict[int, int]]]:
    """A step where activations dominate: (frames for the sampler, phase readings).

    Phase readings in hook order: after loading (weights), then per step the
    end of forward (weights [+ grads + Adam state] + activations), after
    backward (activations freed, gradients there) and after the optimizer
    step (+ Adam's two moments, from the first step on).
    """
    state = 2 * weights
    phases = [{device: weights}]
    frames = []
    for s in range(steps):
        held = weights + (weights + state if s else 0)  # grads and state exist after step 1
        forward = held + activations
        backward = weights + weights + (state if s else 0) + 64 * MiB
        optimizer = weights + weights + state
        phases += [{device: forward}, {device: backward}, {device: optimizer}]
        frames.append({device: memory_stats_dict(optimizer, forward + 512 * MiB, peak=forward + 256 * MiB)})
    return frames, phases

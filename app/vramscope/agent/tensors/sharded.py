"""Sharded and data-parallel training, counted per rank.

FSDP2 (``torch.distributed.fsdp.fully_shard``): each parameter is a DTensor
whose local shard is what this rank holds for good (agent/tensors/buckets.py counts
it through ``__tensor_flatten__``). Around a module's forward and backward
FSDP all-gathers the full parameters into per-parameter buffers
(``FSDPParam.all_gather_outputs``) and swaps the module's attributes to
unsharded ``nn.Parameter`` views of them; after the module it frees them
(the storage resized to 0). Those copies are memory of this rank, neither
weights nor activations: ``unsharded`` sums the buffers alive now, and the
walk counts each swapped-in parameter as the shard it stands for
(``swapped``), so a walk in the middle of a forward counts no layer twice. (``_get_fsdp_state``, ``_fsdp_param_group`` and
``all_gather_outputs`` are FSDP2's internals of torch 2.4+: where they are
missing the figure is None, not 0.)

DDP (``DistributedDataParallel``): gradients are reduced through flat
buckets (``bucket_cap_mb``, 25 MiB by default); unless
``gradient_as_bucket_view=True`` (then the gradients are views into them and
already counted) the buckets are a second copy of the gradients. Their
sizes come from DDP's own logging data (``bucket_sizes``), read at the walk.

DeepSpeed ZeRO's flat partitions are not read (DeepSpeed is not a
dependency): its parameters count as the tensors they are, and each sample
of such a run says so (``ZERO_NOT_READ``) beside the scheme and its stage.

Each sample names the scheme (``Scheme``) and the process group's world size,
so the monitor groups the ranks and the planner's live plan shards as the run
does. Standard library + torch only.
"""

from __future__ import annotations

from vramscope.agent.serving.paths import int_env
from vramscope.agent.protocol import Scheme

ZERO_NOT_READ = (
    "DeepSpeed ZeRO's flat partitions are not read: weights, gradients and optimizer state "
    "of this run are the tensors the agent finds, not the partitions this rank holds"
)


def fsdp_params(models) -> list:
    """The FSDPParam objects of every fully_shard-ed module of ``models``."""
    out, seen = [], set()
    for model in models:
        for m in model.modules():
            get = getattr(m, "_get_fsdp_state", None)
            if get is None:
                continue
            try:
                group = getattr(get(), "_fsdp_param_group", None)
            except Exception:
                continue
            for fp in getattr(group, "fsdp_params", None) or ():
                if id(fp) not in seen:
                    seen.add(id(fp))
                    out.append(fp)
    return out


def swapped(params) -> dict:
    """id of each unsharded parameter FSDP swaps into its modules -> its sharded one."""
    out = {}
    for fp in params:
        p, shard = fp.__dict__.get("_unsharded_param"), getattr(fp, "sharded_param", None)
        if p is not None and shard is not None:
            out[id(p)] = shard
    return out


def gathered_storages(params) -> set:
    """Storage addresses of FSDP's all-gathered parameter copies alive now (what a layer's
    forward saves of its full weights: not activations, agent/modules/module_saved.py)."""
    out = set()
    for fp in params or ():
        tensors = list(getattr(fp, "all_gather_outputs", None) or ())
        unsharded_param = fp.__dict__.get("_unsharded_param")
        if unsharded_param is not None:
            tensors.append(unsharded_param)
        for t in tensors:
            try:
                s = t.untyped_storage()
                if s.nbytes():
                    out.add(s.data_ptr())
            except (RuntimeError, NotImplementedError, AttributeError):
                continue
    return out


def deepspeed_stage(models) -> int | None:
    """The ZeRO stage of a DeepSpeed engine among ``models`` (0: DeepSpeed without ZeRO),
    None where none is (told by class name: DeepSpeed is not imported here)."""
    for model in models:
        if any(c.__name__ == "DeepSpeedEngine" for c in type(model).__mro__):
            try:
                return int(model.zero_optimization_stage())
            except Exception:
                return 0
    return None


def is_ddp(models) -> bool:
    return any(getattr(m, "_get_ddp_logging_data", None) is not None for m in models)


def world_size() -> int | None:
    """The default process group's size, else the launcher's WORLD_SIZE (torchrun's), else
    None."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except Exception:
        pass
    return int_env("WORLD_SIZE")


def unsharded(params) -> dict[str, int]:
    """device -> bytes of all-gathered (unsharded) parameter buffers alive now."""
    out: dict[str, int] = {}
    seen = set()
    for fp in params:
        for t in getattr(fp, "all_gather_outputs", None) or ():
            s = t.untyped_storage()
            n = s.nbytes()
            if n and s.data_ptr() not in seen:
                seen.add(s.data_ptr())
                device = str(t.device)
                out[device] = out.get(device, 0) + n
    return out


def ddp_buckets(models) -> dict[str, int]:
    """device -> bytes of DDP's gradient buckets held besides the gradients."""
    out: dict[str, int] = {}
    for model in models:
        log = getattr(model, "_get_ddp_logging_data", None)
        if log is None or getattr(model, "gradient_as_bucket_view", False):
            continue
        try:
            sizes = str(log().get("bucket_sizes") or "")
            total = sum(int(s) for s in sizes.split(",") if s.strip().isdigit())
            device = str(next(model.parameters()).device)
        except Exception:
            continue
        if total:
            out[device] = out.get(device, 0) + total
    return out


class Sharding:
    """What the walk found (agent thread), read at each sample."""

    def __init__(self):
        self.params: list = []
        self.buckets: dict[str, int] = {}
        self.scheme: str | None = None  # Scheme
        self.stage: int | None = None  # DeepSpeed's ZeRO stage
        self.world_size: int | None = None
        self.stand_ins: list = []  # FSDP's unsharded parameters (what a backward accumulates into)
        self.errors = 0

    def walk(self, models) -> dict:
        """Refresh at the walk; the swapped-in parameters (``swapped``)."""
        try:
            self.params = fsdp_params(models)
            self.buckets = ddp_buckets(models)
            self.stage = deepspeed_stage(models)
            self.scheme = (
                Scheme.FSDP2
                if self.params
                else Scheme.ZERO
                if self.stage is not None
                else Scheme.DDP
                if is_ddp(models)
                else None
            )
            # (kept once known: the group is destroyed before the run's last samples)
            self.world_size = (world_size() or self.world_size) if self.scheme is not None else None
            swap = swapped(self.params)
            self.stand_ins = [p for fp in self.params if id(p := fp.__dict__.get("_unsharded_param")) in swap]
            return swap
        except Exception:
            self.errors += 1
            self.params, self.buckets, self.scheme, self.stand_ins = [], {}, None, []
            return {}

    def report(self) -> dict | None:
        """The sample's "sharded" figures (protocol.ShardedItem), None for a run that is neither."""
        if self.scheme is None and not self.buckets:
            return None
        out: dict = {"scheme": self.scheme, "world_size": self.world_size}
        if self.scheme == Scheme.ZERO:
            out["zero_stage"] = self.stage
            out["note"] = ZERO_NOT_READ
        if self.params:
            try:
                out["fsdp_unsharded"] = unsharded(self.params)
            except Exception:
                self.errors += 1
                out["fsdp_unsharded"] = None
        if self.buckets:
            out["ddp_buckets"] = dict(self.buckets)
        return out

"""The fit planner (no Qt): will it fit, and what to change.

model_shape    ModelShape (what the plan needs to know of a model), from a count
configs        config.json -> ModelShape (hand_counts, or meta_count: transformers
               on the meta device, the model built by meta_model), with kv_layout
               and quantization
config_source  config.json from a file or a model name (the Hugging Face cache / Hub)
errors         PlanError: (field, message)
training     bytes per parameter per bucket, ZeRO/FSDP, offload, LoRA, activations
inference    weights by precision + quantization metadata, KV cache
plan         PlanRequest -> frozen Plan (buckets, verdicts, suggestions, texts)
sizes        "7B" / "24GiB" parsers
"""

from vramscope.core.planner.configs import shape_from_config
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.model_shape import ConfigNotUnderstood, ModelShape, shape_from_params
from vramscope.core.planner.plan import GpuVerdict, Plan, PlanRequest, Suggestion, build_plan
from vramscope.core.planner.sizes import parse_count, parse_gpu_memory, parse_size

__all__ = [
    "ConfigNotUnderstood",
    "PlanError",
    "ModelShape",
    "shape_from_config",
    "shape_from_params",
    "GpuVerdict",
    "Plan",
    "PlanRequest",
    "Suggestion",
    "build_plan",
    "parse_count",
    "parse_gpu_memory",
    "parse_size",
]

"""Planner errors as (field, message) pairs.

Every input the planner refuses raises :class:`PlanError` naming the input
(one of ``FIELDS``) and a message in plain words, without the spelling of
any one front end: `vramscope plan` turns the field into its option
(``--lora-rank``), the Planner tab into its form label ("LoRA rank").
"""

from __future__ import annotations

# field -> (command-line option, form label)
FIELDS: dict[str, tuple[str, str]] = {
    "model": ("--model", "Model name"),
    "config": ("--config", "config.json"),
    "params": ("--params", "Parameters"),
    "shape": ("--layers/--hidden/--heads", "Layer figures"),
    "layers": ("--layers", "Layers"),
    "hidden": ("--hidden", "Hidden size"),
    "heads": ("--heads", "Heads"),
    "kv_heads": ("--kv-heads", "KV heads"),
    "head_dim": ("--head-dim", "Head dim"),
    "intermediate": ("--intermediate", "Intermediate"),
    "mode": ("--mode", "Mode"),
    "precision": ("--precision", "Precision"),
    "optimizer": ("--optimizer", "Optimizer"),
    "grad_layout": ("--grad-layout", "Mixed layout"),
    "zero_stage": ("--zero-stage", "ZeRO stage"),
    "gpus": ("--gpus", "GPUs in the job"),
    "fsdp": ("--fsdp", "FSDP"),
    "lora_rank": ("--lora-rank", "LoRA rank"),
    "lora_modules": ("--lora-modules", "LoRA modules"),
    "batch": ("--batch", "Micro-batch"),
    "seq": ("--seq", "Sequence"),
    "kv_dtype": ("--kv-dtype", "KV cache dtype"),
    "context": ("--context", "Context"),
    "concurrency": ("--concurrency", "Concurrent"),
    "gpu_memory": ("--gpu-memory", "GPU memory"),
    "agent": ("", "Attached process"),
}


class PlanError(ValueError):
    """An input the planner cannot use: ``field`` names it, ``message`` says why."""

    def __init__(self, field: str, message: str):
        if field not in FIELDS:
            raise KeyError(f"unknown planner field {field!r}")
        super().__init__(message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return self.message

    @property
    def option(self) -> str:
        return FIELDS[self.field][0]

    @property
    def label(self) -> str:
        return FIELDS[self.field][1]

    def for_cli(self) -> str:
        return f"{self.option}: {self.message}" if self.option else self.message

    def for_form(self) -> str:
        return f"{self.label}: {self.message}"

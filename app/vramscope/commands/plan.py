"""`vramscope plan` -- will it fit? The memory arithmetic before a run.

    vramscope plan --params 7B --mode train --gpu-memory 80GiB
    vramscope plan --config config.json --mode infer --context 4096 --concurrency 40
    vramscope plan --model Qwen/Qwen2.5-7B --mode infer --context 32768
    vramscope plan --params 7B --zero-stage 3 --gpus 8 --batch 4 --seq 2048 --json

No Qt; NVML only to list the GPUs when --gpu-memory is not given.
"""

from __future__ import annotations

import argparse
import sys

from vramscope.core.status import json_text
from vramscope.commands.plan_pid import Times, batch_option

PRECISIONS = ("fp32", "bf16", "fp16", "mixed", "fp8", "int8", "int4")
OPTIMIZERS = ("adam", "adamw", "adam8bit", "sgd-momentum", "sgd")
KV_DTYPES = ("bf16", "fp16", "fp8", "fp32")


def _arg(parser):
    def convert(text):
        try:
            return parser(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parser.__name__
    return convert


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _tokens(text: str) -> int:
    """A token count as a whole number: 4096. '8k' is refused (8000 or 8192?)."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give tokens as a whole number, e.g. 4096 (8k is ambiguous: 8000 or 8192?)"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1 token")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    from vramscope.core.planner.sizes import parse_count, parse_gpu_memory

    model = p.add_argument_group("model (one of)")
    src = model.add_mutually_exclusive_group()
    src.add_argument(
        "--params",
        type=_arg(parse_count),
        metavar="N",
        help="parameter count: 7e9, 7B, 13B, 70B, 500M, 6738415616",
    )
    src.add_argument(
        "--config",
        metavar="PATH",
        help="a Hugging Face config.json (or a model directory): llama, mistral, "
        "qwen2/3 and gemma, gpt2 by hand formulas; any family transformers "
        "knows when transformers and torch are installed (a CPU torch will "
        "do), or from the directory's safetensors headers",
    )
    src.add_argument(
        "--model",
        metavar="ORG/NAME",
        help="a Hugging Face model name (org/name, or a bare name such as gpt2): "
        "config.json and the checkpoint's safetensors headers (the exact "
        "count) from the local cache, or from the Hub when online (your saved "
        "token for gated models)",
    )
    model.add_argument("--layers", type=_positive, help="with --params: number of layers")
    model.add_argument("--hidden", type=_positive, help="with --params: hidden size")
    model.add_argument("--heads", type=_positive, help="with --params: attention heads")
    model.add_argument("--kv-heads", type=_positive, help="with --params: KV heads (GQA)")
    model.add_argument("--head-dim", type=_positive, help="with --params: head dimension")
    model.add_argument(
        "--intermediate", type=_positive, help="with --params: MLP intermediate size (for LoRA adapter sizes)"
    )

    p.add_argument(
        "--mode", choices=("train", "infer"), default="train", help="training (default) or inference"
    )
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="train: fp32 or mixed (default; bf16/fp16 = mixed with that dtype; "
        "int8/int4 only with --lora-rank). infer: fp32, bf16 (default), fp16, "
        "int8, int4",
    )
    tr = p.add_argument_group("training")
    tr.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        default="adam",
        help="adam/adamw 8 B, adam8bit 2 B, sgd-momentum 4 B, sgd 0 B of state "
        "per trained parameter (default adam)",
    )
    tr.add_argument(
        "--grad-layout",
        type=int,
        choices=(16, 18),
        default=16,
        help="mixed precision: 16 = bf16 gradients, 2+2+4+8 (ZeRO accounting, "
        "default); 18 = fp32 gradients, 2+4+4+8 (Hugging Face layout)",
    )
    tr.add_argument(
        "--zero-stage",
        type=int,
        choices=(0, 1, 2, 3),
        default=0,
        help="ZeRO stage over --gpus: 1 shards optimizer states, 2 also gradients, "
        "3 also weights; 0 = plain DDP (divides nothing)",
    )
    tr.add_argument("--gpus", type=_positive, default=1, help="GPUs the job runs on")
    tr.add_argument("--fsdp", action="store_true", help="FSDP full shard (= ZeRO stage 3)")
    tr.add_argument(
        "--offload-optimizer", action="store_true", help="optimizer state in CPU RAM (ZeRO-Offload)"
    )
    tr.add_argument(
        "--lora-rank",
        type=_positive,
        metavar="R",
        help="train LoRA adapters of rank R; the base weights are frozen",
    )
    tr.add_argument(
        "--lora-modules",
        metavar="NAMES",
        help="comma-separated module names (default: PEFT's for the model type, e.g. "
        "q_proj,v_proj; query_key_value for Falcon), "
        "or all-linear",
    )
    tr.add_argument(
        "--batch",
        type=batch_option,
        help="micro-batch per GPU (for activations); with --pid also a multiple of the "
        "measured one: 2x, 0.5x",
    )
    tr.add_argument("--seq", type=_tokens, help="sequence length in tokens (for activations)")
    tr.add_argument(
        "--accumulation",
        type=_positive,
        default=1,
        help="gradient accumulation steps (shown in the effective batch)",
    )
    tr.add_argument(
        "--checkpointing", action="store_true", help="activation (gradient) checkpointing, sqrt(n) segments"
    )
    tr.add_argument(
        "--flash-attention", action="store_true", help="flash attention: no quadratic attention-score term"
    )
    inf = p.add_argument_group("inference")
    inf.add_argument(
        "--kv-dtype", choices=KV_DTYPES, help="KV cache dtype (default: the 16-bit dtype of the weights)"
    )
    inf.add_argument(
        "--context",
        type=_tokens,
        metavar="T",
        help="tokens per conversation (default: the config's maximum; a longer one is warned about)",
    )
    inf.add_argument("--concurrency", type=_positive, default=1, help="concurrent conversations (default 1)")
    p.add_argument(
        "--gpu-memory",
        type=_arg(parse_gpu_memory),
        action="append",
        metavar="SIZE",
        help="GPU size to judge against, e.g. 24GiB or 80GB or 'A100=80GiB'; "
        "repeat for several (default: the GPUs NVML finds)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument(
        "--pid",
        type=_positive,
        metavar="PID",
        help="plan from what this running process's agent measured: its peak at "
        "--batch/--seq, --checkpointing, --precision bf16, --optimizer adam8bit "
        "or --lora-rank",
    )
    tr.add_argument(
        "--checkpoint-modules",
        metavar="NAMES",
        help="with --pid: checkpoint these modules (comma-separated, as "
        "named_modules names them; default: the repeated blocks)",
    )


def detect_gpus() -> tuple[list[tuple[str, int]], tuple, str | None]:
    """([(name, capacity bytes)], free memory now per GPU, why not) from one pass over
    this machine's GPUs."""
    import time

    from vramscope.sources.all_gpus import AllGpusSource

    source = AllGpusSource()
    try:
        frame = source.sample(time.time())
    finally:
        source.close()
    if frame.error:
        return [], (), frame.error
    from vramscope.core.planner.targets import fit_targets, gpus_now

    gpus = fit_targets(frame)
    return gpus, gpus_now(frame), None if gpus else "no GPU found (NVML, DRM)"


def request_from_args(args):
    """PlanRequest from parsed arguments; PlanError (field, message) otherwise."""
    from vramscope.core.planner import PlanError, PlanRequest, shape_from_params
    from vramscope.core.planner.config_source import config_for_model, config_from_path
    from vramscope.core.planner.configs import shape_with_checkpoint

    model = getattr(args, "model", None)
    if args.config or model:
        shape_flags = [
            f
            for f in ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate")
            if getattr(args, f, None) is not None
        ]
        field = "config" if args.config else "model"
        if shape_flags:
            raise PlanError(
                shape_flags[0],
                "goes with a parameter count; with a config.json or "
                "a model name the shape comes from the config",
            )
        loaded = config_from_path(args.config) if args.config else config_for_model(model)
        try:
            shape = shape_with_checkpoint(loaded.config, loaded.checkpoint)
        except PlanError as exc:
            raise PlanError(field, exc.message) from None
    elif args.params:
        shape = shape_from_params(
            args.params,
            layers=args.layers,
            hidden=args.hidden,
            heads=args.heads,
            kv_heads=args.kv_heads,
            head_dim=args.head_dim,
            intermediate=args.intermediate,
        )
    else:
        raise PlanError(
            "params",
            "give the model: a parameter count (--params 7B), a "
            "config.json (--config) or a model name (--model org/name)",
        )
    modules = ()
    if args.lora_modules:
        modules = tuple(m.strip() for m in args.lora_modules.split(",") if m.strip())
    return PlanRequest(
        shape=shape,
        mode=args.mode,
        precision=args.precision,
        optimizer=args.optimizer,
        grad_layout=args.grad_layout,
        zero_stage=args.zero_stage,
        gpus=args.gpus,
        fsdp=args.fsdp,
        offload_optimizer=args.offload_optimizer,
        lora_rank=args.lora_rank,
        lora_modules=modules,
        batch=args.batch,
        seq=args.seq,
        accumulation=args.accumulation,
        checkpointing=args.checkpointing,
        flash_attention=args.flash_attention,
        kv_dtype=args.kv_dtype,
        context=args.context,
        concurrency=args.concurrency,
        gpus_memory=tuple(args.gpu_memory or ()),
    )


def run(args) -> int:
    if getattr(args, "pid", None):
        from vramscope.commands import plan_pid

        return plan_pid.run(args)
    from vramscope.core.planner import PlanError, build_plan
    from vramscope.core.planner.report import render_text
    from vramscope.core.status.terminal_text import say

    if isinstance(args.batch, Times):
        say(
            sys.stderr,
            f"vramscope plan: --batch {args.batch.factor:g}x is a multiple of a measured micro-batch: it needs --pid",
        )
        return 2
    try:
        req = request_from_args(args)
    except PlanError as exc:
        say(sys.stderr, f"vramscope plan: {exc.for_cli()}")
        return 2
    gpu_note = None
    if not req.gpus_memory:
        from dataclasses import replace

        gpus, now, gpu_note = detect_gpus()
        if gpus:
            req = replace(req, gpus_memory=tuple(gpus), gpus_now=now)
    try:
        plan = build_plan(req)
    except PlanError as exc:
        say(sys.stderr, f"vramscope plan: {exc.for_cli()}")
        return 2
    if args.json:
        out = plan.to_json()
        if gpu_note and not plan.gpus:
            out["gpu_note"] = f"{gpu_note}: give --gpu-memory SIZE to judge the fit"
        print(json_text.dumps(out, indent=2))
        if not plan.gpus:
            say(sys.stderr, f"vramscope plan: no GPU to judge against ({gpu_note}); give --gpu-memory SIZE")
    else:
        say(sys.stdout, render_text(plan, gpu_note), lines=True)  # model names escaped
    for warning in plan.warnings:
        say(sys.stderr, f"vramscope plan: warning: {warning}")
    return 0

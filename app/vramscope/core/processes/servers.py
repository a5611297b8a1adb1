"""Inference servers: what they are called, how their memory pool is sized,
where their metrics are, and what a server's state looks like in a frame.

Serving engines preallocate most of the card on purpose (vLLM's PagedAttention
KV cache, SGLang's static memory pool, TGI's CUDA memory fraction), so a card
90 % full at 0 % SM is their normal state, not a squatter and not a near-OOM.
Pure functions over command lines and Prometheus samples; the OS side (process
tree, listening ports, HTTP) is in ``vramscope.sources.machine.servers``.

Sources for the options and metric names:
- vLLM: docs.vllm.ai, engine arguments (--gpu-memory-utilization, default 0.9)
  and "Production metrics" (vllm:gpu_cache_usage_perc, renamed
  vllm:kv_cache_usage_perc; vllm:num_requests_running / _waiting).
- SGLang: docs.sglang.ai, server arguments (--mem-fraction-static) and
  production metrics (sglang:token_usage, sglang:num_running_reqs,
  sglang:num_queue_reqs; needs --enable-metrics).
- TGI: huggingface.co/docs/text-generation-inference, launcher arguments
  (--cuda-memory-fraction) and metrics (tgi_batch_current_size, tgi_queue_size).
- llama.cpp server: tools/server/README.md (--ctx-size, --n-gpu-layers,
  --metrics: llamacpp:kv_cache_usage_ratio, llamacpp:requests_processing,
  llamacpp:requests_deferred).
- Ollama: docs/faq.md (OLLAMA_KEEP_ALIVE, OLLAMA_NUM_PARALLEL, num_ctx).
- Triton / TensorRT-LLM: the TensorRT-LLM backend's
  kv_cache_free_gpu_mem_fraction and its nv_trt_llm_* metrics (port 8002).
"""

from __future__ import annotations

import math

import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vramscope.core.samples import Frame, GpuProcess, ProcessInfo

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric


@dataclass(frozen=True, slots=True)
class ServerKind:
    key: str  # "vllm"
    title: str  # "vLLM"
    pool: str  # what the preallocated memory is
    pool_options: tuple[str, ...]  # the options that size it, first = the main one
    pool_default: str | None  # the main option's default, as the docs give it
    default_port: int | None
    metrics_path: str | None  # None: no Prometheus endpoint
    kv_metrics: tuple[str, ...] = ()  # a 0..1 ratio, first found wins
    running_metrics: tuple[str, ...] = ()
    waiting_metrics: tuple[str, ...] = ()
    shrink_hint: str = ""  # the least damaging way to give memory back


VLLM = ServerKind(
    "vllm",
    "vLLM",
    pool=(
        "the KV-cache blocks PagedAttention preallocates at start-up: weights plus cache "
        "fill this fraction of the card however idle the server is"
    ),
    pool_options=("--gpu-memory-utilization", "--max-model-len", "--max-num-seqs", "--kv-cache-dtype"),
    pool_default="0.9",
    default_port=8000,
    metrics_path="/metrics",
    kv_metrics=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    running_metrics=("vllm:num_requests_running",),
    waiting_metrics=("vllm:num_requests_waiting",),
    shrink_hint="restart it with a lower --gpu-memory-utilization (e.g. 0.8)",
)
SGLANG = ServerKind(
    "sglang",
    "SGLang",
    pool=("the static memory pool (weights + KV cache) SGLang reserves at start-up"),
    pool_options=("--mem-fraction-static", "--max-total-tokens", "--context-length"),
    pool_default=None,
    default_port=30000,
    metrics_path="/metrics",
    kv_metrics=("sglang:token_usage",),
    running_metrics=("sglang:num_running_reqs",),
    waiting_metrics=("sglang:num_queue_reqs",),
    shrink_hint="restart it with a lower --mem-fraction-static",
)
TGI = ServerKind(
    "tgi",
    "Text Generation Inference",
    pool="the KV-cache TGI's shards allocate up to the CUDA memory fraction at warm-up",
    pool_options=("--cuda-memory-fraction", "--max-total-tokens", "--max-batch-prefill-tokens"),
    pool_default="1.0",
    default_port=3000,
    metrics_path="/metrics",
    running_metrics=("tgi_batch_current_size",),
    waiting_metrics=("tgi_queue_size",),
    shrink_hint="restart it with --cuda-memory-fraction below 1.0",
)
LLAMA_CPP = ServerKind(
    "llama.cpp",
    "llama.cpp server",
    pool="the offloaded layers plus the KV cache for the whole context, allocated at start-up",
    pool_options=("--ctx-size", "--n-gpu-layers", "--parallel", "--cache-type-k"),
    pool_default=None,
    default_port=8080,
    metrics_path="/metrics",
    kv_metrics=("llamacpp:kv_cache_usage_ratio",),
    running_metrics=("llamacpp:requests_processing",),
    waiting_metrics=("llamacpp:requests_deferred",),
    shrink_hint="restart it with a smaller --ctx-size or fewer --n-gpu-layers",
)
OLLAMA = ServerKind(
    "ollama",
    "Ollama",
    pool=(
        "the loaded model's weights and its KV cache, kept for OLLAMA_KEEP_ALIVE "
        "(default 5 min) after the last request"
    ),
    pool_options=("OLLAMA_KEEP_ALIVE", "OLLAMA_NUM_PARALLEL", "num_ctx"),
    pool_default=None,
    default_port=11434,
    metrics_path=None,
    shrink_hint="`ollama stop <model>` unloads it now; a shorter OLLAMA_KEEP_ALIVE does it sooner",
)
TRITON = ServerKind(
    "triton",
    "Triton / TensorRT-LLM",
    pool="the TensorRT-LLM KV-cache pool, sized from the free memory at load time",
    pool_options=("kv_cache_free_gpu_mem_fraction", "--kv_cache_free_gpu_memory_fraction"),
    pool_default="0.9",
    default_port=8002,
    metrics_path="/metrics",
    running_metrics=("nv_trt_llm_request_metrics",),
    shrink_hint="lower kv_cache_free_gpu_mem_fraction in the model's config",
)

SERVER_KINDS = (VLLM, SGLANG, TGI, LLAMA_CPP, OLLAMA, TRITON)
BY_KEY = {k.key: k for k in SERVER_KINDS}
BY_PORT = {k.default_port: k for k in SERVER_KINDS if k.default_port is not None}

# markers in a command line (or a process title set with setproctitle)
_MODULES = {  # python -m <module prefix>
    "vllm.entrypoints": VLLM,
    "sglang.launch_server": SGLANG,
    "sglang.srt": SGLANG,
    "text_generation_server": TGI,
    "tensorrt_llm": TRITON,
    # llama-cpp-python's OpenAI-compatible server (llama-cpp-python.readthedocs.io, "server")
    "llama_cpp.server": LLAMA_CPP,
}
_EXECUTABLES = {
    "text-generation-launcher": TGI,
    "text-generation-server": TGI,
    "text-generation-router": TGI,
    "llama-server": LLAMA_CPP,
    "ollama_llama_server": OLLAMA,
    "tritonserver": TRITON,
    "trtllm-serve": TRITON,
}
# console scripts that serve with a "serve" subcommand: `vllm serve`, `sglang serve`,
# `ollama serve` / `ollama runner` (Ollama's model runner)
_SUBCOMMANDS = {
    "vllm": (VLLM, ("serve",)),
    "sglang": (SGLANG, ("serve",)),
    "ollama": (OLLAMA, ("serve", "runner")),
}
_TITLES = {  # process titles the engines set on their workers
    "VLLM::": VLLM,
    "vllm::": VLLM,
    "sglang::": SGLANG,
    "ollama": OLLAMA,
}
# llama.cpp's server binary was called plain `server` before it was renamed
# llama-server (ggml-org/llama.cpp, mid 2024): a name that generic counts only with
# a GGUF model or llama.cpp's own options beside it
_OLD_LLAMA_SERVER = "server"
_LLAMA_CPP_SIGNS = ("--n-gpu-layers", "-ngl", "--ctx-size", "-c", "--model", "-m")


def _is_python(exe: str) -> bool:
    """python, python3, python3.11, pythonw (the interpreter a console script runs under)."""
    return exe.startswith("python") and all(c.isdigit() or c == "." for c in exe[6:].rstrip("w"))


def _old_llama_server(args: list[str]) -> bool:
    if "llama" in args[0].lower():  # /opt/llama.cpp/build/bin/server
        return True
    return any(a.lower().endswith(".gguf") for a in args[1:]) and any(a in _LLAMA_CPP_SIGNS for a in args[1:])


def recognise(cmdline: Sequence[str] | None, name: str | None = None) -> ServerKind | None:
    """The serving engine a command line (or process title) belongs to, if any."""
    return _recognise(tuple(cmdline or ()), name)


@functools.lru_cache(maxsize=1 << 16)  # asked for every process on every pass (16 GPUs x 1,024 processes fit)
def _recognise(cmdline: tuple[str, ...], name: str | None) -> ServerKind | None:
    args = list(cmdline)
    if args:
        first = args[0]
        for prefix, kind in _TITLES.items():
            if first.startswith(prefix) and kind is not OLLAMA:
                return kind
        for i, arg in enumerate(args[:-1]):
            if arg == "-m":
                module = args[i + 1]
                for prefix, kind in _MODULES.items():
                    if module.startswith(prefix):
                        return kind
        # a console script shows as `python3 /venv/bin/vllm serve ...` (its shebang's
        # interpreter first): judge the script as if it had been run directly
        if _is_python(os.path.basename(first)) and len(args) > 1 and not args[1].startswith("-"):
            args = args[1:]
            first = args[0]
        exe = os.path.basename(first)
        if exe in _EXECUTABLES:
            return _EXECUTABLES[exe]
        sub = _SUBCOMMANDS.get(exe)
        if sub is not None and len(args) > 1 and args[1] in sub[1]:
            return sub[0]
        if exe == _OLD_LLAMA_SERVER and _old_llama_server(args):
            return LLAMA_CPP
        for arg in args[1:3]:
            base = os.path.basename(arg)
            if base in _EXECUTABLES:  # e.g. a wrapper: `mpirun tritonserver ...`
                return _EXECUTABLES[base]
    if name:
        for prefix, kind in _TITLES.items():
            if name.startswith(prefix):
                return kind
        if name in _EXECUTABLES:
            return _EXECUTABLES[name]
    return None


def option_value(cmdline: Sequence[str] | None, option: str) -> str | None:
    """``--opt V`` or ``--opt=V`` (also with _ for -), or None."""
    args = list(cmdline or ())
    spellings = {
        option,
        option.replace("-", "_").replace("__", "--"),
        "--" + option.lstrip("-").replace("_", "-"),
    }
    for i, arg in enumerate(args):
        for s in spellings:
            if arg == s and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(s + "="):
                return arg[len(s) + 1 :]
    return None


def listen_port(cmdline: Sequence[str] | None, kind: ServerKind | None) -> int | None:
    """The port its command line names, else the engine's default."""
    for opt in ("--port", "-p"):
        value = option_value(cmdline, opt)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                pass
    return kind.default_port if kind is not None else None


def pool_text(kind: ServerKind, cmdline: Sequence[str] | None) -> str:
    """'--gpu-memory-utilization 0.95' as set, or its default, or the options that size it."""
    main = kind.pool_options[0]
    value = option_value(cmdline, main) if main.startswith("-") else None
    if value is not None:
        return f"{main} {value}"
    if kind.pool_default is not None:
        return f"{main} {kind.pool_default} (the default)"
    return ", ".join(kind.pool_options)


@dataclass(frozen=True, slots=True)
class ServerState:
    """One inference server as the monitor sees it in one pass.

    ``pids``: its processes that hold GPU memory (a server is often a launcher
    plus engine/worker children). Metrics fields are None when the endpoint
    did not answer or does not publish them; ``metrics_error`` says why.
    """

    pid: int  # the process that was recognised (the launcher / API server)
    start_time: float | None
    kind: str  # a key of BY_KEY
    pids: tuple[int, ...] = ()
    port: int | None = None
    pool: str = ""  # pool_text()
    metrics_url: str | None = None
    kv_cache_usage: float | None = None  # 0..1
    running: float | None = None
    waiting: float | None = None
    metrics_time: float | None = None  # when the endpoint last answered
    metrics_error: str | None = None

    @property
    def server_kind(self) -> ServerKind:
        return BY_KEY[self.kind]

    @property
    def busy(self) -> bool | None:
        """True when requests are running or waiting; None when the metrics don't say."""
        if self.running is None and self.waiting is None:
            return None
        return bool((self.running or 0) > 0 or (self.waiting or 0) > 0)


SERVER_SERIES = ("kv_cache_usage", "running", "waiting")
SERVER_EVENT = "server"  # the session event that records one server's state per pass


def server_key(pid: int, start_time: float | None, metric: str) -> tuple[str, int, float | None, str]:
    """Store key of a server metric series (metric in SERVER_SERIES)."""
    return ("server", pid, start_time, metric)


MAX_METRIC = 1e15  # a request count or a ratio past this is no reading (sums stay finite)


def read_metrics(kind: ServerKind, families: Iterable[Metric]) -> dict[str, float | None]:
    """kv_cache_usage / running / waiting from parsed Prometheus families
    (``prometheus_client.parser.text_string_to_metric_families``). Samples of
    one metric over several label sets (engines, models) are summed; the KV
    ratio is their mean."""
    values: dict[str, list[float]] = {}
    for fam in families:
        for sample in fam.samples:
            name = sample.name
            if kind is TRITON and name == "nv_trt_llm_request_metrics":
                name = f"{name}:{sample.labels.get('request_type', '')}"
            value = float(sample.value)
            if math.isfinite(value) and abs(value) <= MAX_METRIC:  # NaN/Inf/huge: not a reading
                values.setdefault(name, []).append(value)

    def pick(names: Iterable[str], mean: bool = False) -> float | None:
        for n in names:
            got = values.get(n)
            if got:
                return sum(got) / len(got) if mean else sum(got)
        return None

    if kind is TRITON:  # block counts carry no published ratio: the KV share is not guessed
        return {
            "kv_cache_usage": None,
            "running": pick(("nv_trt_llm_request_metrics:active",)),
            "waiting": pick(("nv_trt_llm_request_metrics:waiting",)),
        }
    kv = pick(kind.kv_metrics, mean=True)
    if kv is not None and kv > 1.0:  # some versions publish percent
        kv = kv / 100.0
    return {
        "kv_cache_usage": kv,
        "running": pick(kind.running_metrics),
        "waiting": pick(kind.waiting_metrics),
    }


def server_of(frame: Frame, proc: GpuProcess) -> tuple[ServerKind, ServerState | None] | None:
    """The server a GPU process belongs to: from the frame's recognised servers
    (process tree, port), else from its own command line."""
    for s in getattr(frame, "servers", ()) or ():
        if proc.pid in s.pids or proc.pid == s.pid:
            return s.server_kind, s
    info: ProcessInfo | None = proc.info
    if info is None:
        return None
    kind = recognise(info.cmdline, info.name)
    return (kind, None) if kind is not None else None

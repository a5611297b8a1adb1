"""Where a config.json comes from: a file, a model directory, or a model name.

``read_config(path)`` reads at most ``MAX_CONFIG_BYTES`` of a regular file (a
config.json is a few KiB; a weights file given by mistake is refused by its
size, ``/dev/zero`` or a FIFO without being opened). ``config_for_model("org/name")``
looks in the local Hugging Face cache (laid out as huggingface_hub lays it
out: ``models--org--name/refs/main`` and ``snapshots/<rev>/config.json``)
and, when online and huggingface_hub is installed, fetches config.json from
the Hub with the user's saved token (gated models included), with the
checkpoint's safetensors headers (checkpoint.py: the exact count per dtype).
Bare names (``gpt2``) are model names, and a cached model is found whatever
the case of its name. Offline (``HF_HUB_OFFLINE=1``, or the Hub unreachable:
one quick request, no retries) without a cached copy, the message says so
and where it looked. See
https://huggingface.co/docs/huggingface_hub/guides/manage-cache and
.../package_reference/environment_variables.
"""

from __future__ import annotations

import errno
import os
import pathlib
import re
from dataclasses import dataclass

from vramscope.agent import json_limits
from vramscope.core.safe_io import bounded_read
from vramscope.core.planner.checkpoint import Counts, hub_counts, local_counts
from vramscope.core.planner.errors import PlanError

MAX_CONFIG_BYTES = 4 << 20  # 4 MiB: the largest published config.json files are ~100 KiB
CONFIG_NAME = "config.json"
EXTRA = "pip install 'vramscope[planner]'"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
HUB_TIMEOUT_S = 10
NOT_FETCHED = "not fetched from here"  # config_for_model(allow_fetch=False) when not cached


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    config: dict
    where: str  # the file it came from (or "the Hub: org/name")
    name: str | None = None  # the model name, when given by name
    checkpoint: Counts | None = None  # safetensors elements per dtype, when known


def read_config(path: str | os.PathLike, field: str = "config") -> dict:
    """The JSON object in ``path`` (or ``path``/config.json); PlanError on any problem."""
    p = pathlib.Path(path)
    if p.is_dir():
        p = p / CONFIG_NAME
    try:  # a FIFO or device given by mistake is refused, never opened (core/safe_io/bounded_read.py)
        config = bounded_read.read_json(p, MAX_CONFIG_BYTES, follow=True)
    except bounded_read.UnreadableFile as exc:
        if exc.errno == errno.EFBIG:
            raise PlanError(
                field, f"{p} is larger than {MAX_CONFIG_BYTES >> 20} MiB: not a config.json"
            ) from None
        raise PlanError(field, f"cannot read it: {exc}") from None
    except json_limits.TooDeep:
        raise PlanError(field, f"{p} is nested too deeply: not a config.json") from None
    except ValueError as exc:
        raise PlanError(field, f"{p} is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise PlanError(field, f"{p} must hold a JSON object")
    return config


def hub_cache_dir() -> pathlib.Path:
    """huggingface_hub's cache directory, from the environment at call time."""
    env = os.environ
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            return pathlib.Path(env[key]).expanduser()
    if env.get("HF_HOME"):
        return pathlib.Path(env["HF_HOME"]).expanduser() / "hub"
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(xdg) / "huggingface" / "hub"


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


def _repo_dir(name: str) -> pathlib.Path:
    """The cache folder of ``name``; a folder whose name differs only in case when the
    exact one is absent (Hub names are case-insensitive)."""
    root = hub_cache_dir()
    exact = root / ("models--" + name.replace("/", "--"))
    if exact.is_dir():
        return exact
    wanted = exact.name.lower()
    try:
        return next((d for d in root.glob("models--*") if d.name.lower() == wanted), exact)
    except OSError:
        return exact


def cached_config_path(name: str, revision: str = "main") -> pathlib.Path | None:
    """config.json of ``name`` in the local cache (the revision's snapshot), or None."""
    repo = _repo_dir(name)
    ref = repo / "refs" / revision
    candidates = []
    try:
        commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
        candidates.append(repo / "snapshots" / commit / CONFIG_NAME)
        snapshots = repo / "snapshots"
        if snapshots.is_dir():  # any snapshot, newest first, if the ref is missing
            candidates += sorted(
                snapshots.glob(f"*/{CONFIG_NAME}"), key=lambda p: p.stat().st_mtime, reverse=True
            )
    except OSError:
        return None
    return next((c for c in candidates if c.is_file()), None)


def cached_models() -> tuple[str, ...]:
    """Names (org/name) of the models in the local cache that have a config.json."""
    root = hub_cache_dir()
    try:
        entries = sorted(root.glob("models--*"))
    except OSError:
        return ()
    names = []
    for entry in entries:
        name = entry.name[len("models--") :].replace("--", "/", 1)
        if cached_config_path(name) is not None:
            names.append(name)
    return tuple(names)


def config_from_path(path: str | os.PathLike, field: str = "config") -> LoadedConfig:
    """A config.json file, or a model directory with its safetensors headers."""
    local = pathlib.Path(path).expanduser()
    return LoadedConfig(
        read_config(local, field), str(local), None, local_counts(local) if local.is_dir() else None
    )


def config_for_model(name: str, allow_fetch: bool = True) -> LoadedConfig:
    """config.json (and the checkpoint's count) of a model named ``org/name`` or ``name``,
    or of a local model directory."""
    name = (name or "").strip()
    if not name:
        raise PlanError("model", "give a model name such as Qwen/Qwen2.5-7B")
    local = pathlib.Path(name).expanduser()
    if local.is_dir() or name.endswith(".json"):
        return config_from_path(local, "model")
    if not _REPO_ID.match(name):
        raise PlanError(
            "model",
            f"{name!r} is not a model name (org/name or name, e.g. "
            "Qwen/Qwen2.5-7B or gpt2) nor a local model directory",
        )
    cached = cached_config_path(name)
    if cached is not None:
        return LoadedConfig(read_config(cached, "model"), str(cached), name, local_counts(cached.parent))
    where = _repo_dir(name)
    if offline() or not allow_fetch:
        why = "offline (HF_HUB_OFFLINE is set)" if offline() else NOT_FETCHED
        raise PlanError("model", f"{name}: {why} and not in the local cache (checked {where})")
    return _fetch(name, where)


def _fetch(name: str, where: pathlib.Path) -> LoadedConfig:
    try:
        import huggingface_hub
        from huggingface_hub import errors as hub_errors
    except ImportError:
        raise PlanError(
            "model",
            f"{name} is not in the local cache (checked {where}), and "
            f"fetching it needs huggingface_hub: {EXTRA}",
        ) from None

    def refused(exc: Exception) -> PlanError:
        if isinstance(exc, hub_errors.GatedRepoError):
            return PlanError(
                "model",
                f"{name} is gated: accept its licence on its Hub page, "
                "then log in (hf auth login) or set HF_TOKEN",
            )
        if isinstance(exc, hub_errors.RepositoryNotFoundError):
            return PlanError(
                "model",
                f"{name}: no such model on the Hub (or it is private: log "
                "in with hf auth login or set HF_TOKEN)",
            )
        if isinstance(exc, hub_errors.LocalEntryNotFoundError):  # no connection
            return PlanError("model", f"{name}: offline and not in the local cache (checked {where})")
        if isinstance(exc, hub_errors.HfHubHTTPError):
            return PlanError(
                "model",
                f"cannot fetch {name} from the Hub ({_first(exc)}); "
                f"not in the local cache either (checked {where})",
            )
        return PlanError(
            "model", f"{name}: offline and not in the local cache (checked {where}; the Hub: {_first(exc)})"
        )

    # First the checkpoint's headers: one quick request each, no retries, so an
    # unreachable Hub is said at once (hf_hub_download retries for ~24 s).
    counts = None
    endpoint = os.environ.get("HF_ENDPOINT") or None  # read now, as the cache directory is
    try:
        api = huggingface_hub.HfApi(endpoint=endpoint)
        counts = hub_counts(api.get_safetensors_metadata(name, timeout=HUB_TIMEOUT_S))
    except hub_errors.NotASafetensorsRepoError:
        pass  # weights in another format: the config's count
    except hub_errors.EntryNotFoundError as exc:
        if isinstance(exc, hub_errors.LocalEntryNotFoundError):
            raise refused(exc) from None
    except Exception as exc:  # unreachable, gated, no such model: one line, no traceback
        raise refused(exc) from None
    try:
        path = huggingface_hub.hf_hub_download(
            name, CONFIG_NAME, cache_dir=str(hub_cache_dir()), etag_timeout=HUB_TIMEOUT_S, endpoint=endpoint
        )
    except hub_errors.LocalEntryNotFoundError as exc:
        raise refused(exc) from None
    except hub_errors.EntryNotFoundError:
        raise PlanError("model", f"{name} has no config.json on the Hub") from None
    except Exception as exc:
        raise refused(exc) from None
    return LoadedConfig(read_config(path, "model"), f"the Hub: {name} ({path})", name, counts)


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__

"""Where a config.json comes from: a file, a model directory, or a model name.

``read_config(path)`` reads at most ``MAX_CONFIG_BYTES`` of a regular file (a
config.json is a few KiB; a weights file given by mistake is refused by its
size, ``/dev/zero`` or a FIFO without being opened). ``config_for_model("org/name")``
looks in the local Hugging Face cache (laid out as huggingface_hub lays it
out: ``models--org--name/refs/main`` and ``snapshots/<rev>/config.json``)
and, when online and huggingface_hub is installed, fetches config.json from
the Hub with the user's saved token (gated models included). Offline
(``HF_HUB_OFFLINE=1``) without a cached copy, the message says where it
looked. See https://huggingface.co/docs/huggingface_hub/guides/manage-cache
and .../package_reference/environment_variables.
"""

from __future__ import annotations

import errno
import os
import pathlib
import re
from dataclasses import dataclass

from vramscope.agent import json_limits
from vramscope.core import bounded_read
from vramscope.core.planner.errors import PlanError

MAX_CONFIG_BYTES = 4 << 20  # 4 MiB: the largest published config.json files are ~100 KiB
CONFIG_NAME = "config.json"
EXTRA = "pip install 'vramscope[planner]'"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    config: dict
    where: str  # the file it came from (or "the Hub: org/name")
    name: str | None = None  # the model name, when given by name


def read_config(path: str | os.PathLike, field: str = "config") -> dict:
    """The JSON object in ``path`` (or ``path``/config.json); PlanError on any problem."""
    p = pathlib.Path(path)
    if p.is_dir():
        p = p / CONFIG_NAME
    try:  # a FIFO or device given by mistake is refused, never opened (core/bounded_read.py)
        config = bounded_read.read_json(p, MAX_CONFIG_BYTES, follow=True)
    except bounded_read.UnreadableFile as exc:
        if exc.errno == errno.EFBIG:
            raise PlanError(field, f"{p} is larger than {MAX_CONFIG_BYTES >> 20} MiB: not a "
                                   "config.json") from None
        raise PlanError(field, f"cannot read {exc}") from None
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
    return hub_cache_dir() / ("models--" + name.replace("/", "--"))


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
            candidates += sorted(snapshots.glob(f"*/{CONFIG_NAME}"),
                                 key=lambda p: p.stat().st_mtime, reverse=True)
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
        name = entry.name[len("models--"):].replace("--", "/", 1)
        if cached_config_path(name) is not None:
            names.append(name)
    return tuple(names)


def config_for_model(name: str, allow_fetch: bool = True) -> LoadedConfig:
    """config.json of a model named ``org/name`` (or a local model directory)."""
    name = (name or "").strip()
    if not name:
        raise PlanError("model", "give a model name such as Qwen/Qwen2.5-7B")
    local = pathlib.Path(name).expanduser()
    if local.is_dir() or name.endswith(".json"):
        return LoadedConfig(read_config(local, "model"), str(local), None)
    if not _REPO_ID.match(name):
        raise PlanError("model", f"{name!r} is not a model name (org/name, e.g. "
                                 "Qwen/Qwen2.5-7B) nor a local model directory")
    cached = cached_config_path(name)
    if cached is not None:
        return LoadedConfig(read_config(cached, "model"), str(cached), name)
    where = _repo_dir(name)
    if offline() or not allow_fetch:
        why = "offline (HF_HUB_OFFLINE is set)" if offline() else "not fetched from here"
        raise PlanError("model", f"no config.json for {name} in the local Hugging Face cache "
                                 f"({where}); {why}")
    return _fetch(name, where)


def _fetch(name: str, where: pathlib.Path) -> LoadedConfig:
    try:
        import huggingface_hub
        from huggingface_hub import errors as hub_errors
    except ImportError:
        raise PlanError("model", f"no config.json for {name} in the local Hugging Face cache "
                                 f"({where}), and fetching it needs huggingface_hub: "
                                 f"{EXTRA}") from None
    try:
        path = huggingface_hub.hf_hub_download(name, CONFIG_NAME,
                                               cache_dir=str(hub_cache_dir()))
    except hub_errors.GatedRepoError:
        raise PlanError("model", f"{name} is gated: accept its licence on its Hub page, then "
                                 "log in (hf auth login) or set HF_TOKEN") from None
    except hub_errors.RepositoryNotFoundError:
        raise PlanError("model", f"{name}: no such model on the Hub (or it is private: log "
                                 "in with hf auth login or set HF_TOKEN)") from None
    except hub_errors.EntryNotFoundError:
        raise PlanError("model", f"{name} has no config.json on the Hub") from None
    except Exception as exc:  # network down, proxy, timeout: one line, no traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PlanError("model", f"cannot fetch config.json of {name} from the Hub ({first}); "
                                 f"not in the local cache either ({where})") from None
    return LoadedConfig(read_config(path, "model"), f"the Hub: {name} ({path})", name)

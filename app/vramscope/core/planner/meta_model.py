"""A model built on PyTorch's meta device from a config.json, by the classes
transformers ships (shapes only: no memory, no weights downloaded); what
meta_count.py counts.

transformers is an optional extra (``vramscope[planner]``); without it an
unknown family gets a message naming the extra. Remote code (``auto_map``)
is never run: only the classes transformers ships are used.
See https://pytorch.org/docs/stable/meta.html and transformers'
``AutoModelForCausalLM.from_config``.
"""

from __future__ import annotations

import contextlib

from vramscope.core.planner.model_shape import DECODER, ENCODER, ENCODER_DECODER, ConfigNotUnderstood

_DROP = ("model_type", "quantization_config", "auto_map", "_name_or_path", "transformers_version")


def transformers_version() -> str | None:
    """transformers' version when it and torch are there to build models on the meta
    device (transformers installs without torch); None otherwise."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    try:
        import transformers
    except ImportError:
        return None
    return transformers.__version__


def _auto_classes(transformers, cfg, model_type: str) -> list:
    """The Auto classes to try, most complete first: a checkpoint holds the head too."""
    from transformers.models.auto import modeling_auto as names

    if getattr(cfg, "is_encoder_decoder", False):
        return [transformers.AutoModelForSeq2SeqLM, transformers.AutoModel]
    if getattr(cfg, "vision_config", None) is not None:
        return [
            transformers.AutoModelForImageTextToText,
            transformers.AutoModelForCausalLM,
            transformers.AutoModel,
        ]
    if model_type in names.MODEL_FOR_MASKED_LM_MAPPING_NAMES and not getattr(cfg, "is_decoder", False):
        return [transformers.AutoModelForMaskedLM, transformers.AutoModel]
    return [transformers.AutoModelForCausalLM, transformers.AutoModel]


def _build(transformers, cfg, config: dict, model_type: str):
    """The model of the config's ``architectures`` class when transformers ships it (what
    the checkpoint holds), else of the first Auto class that takes the config."""
    archs = config.get("architectures")
    candidates = []
    if isinstance(archs, list) and archs and isinstance(archs[0], str) and archs[0].isidentifier():
        try:
            cls = getattr(transformers, archs[0], None)
        except Exception:  # a lazily imported module that cannot load here
            cls = None
        config_class = getattr(cls, "config_class", None)
        if (
            isinstance(cls, type)
            and hasattr(cls, "_from_config")
            and (not isinstance(config_class, type) or isinstance(cfg, config_class))
        ):
            candidates.append(cls._from_config)
    candidates += [auto.from_config for auto in _auto_classes(transformers, cfg, model_type)]
    error = None
    for build in candidates:
        try:
            return build(cfg)
        except ValueError as exc:  # this Auto class does not take the config
            error = exc
        except Exception as exc:  # an architectures class that does not match the config
            error = exc
    raise error


def _model_kind(transformers, cfg, model) -> str:
    from transformers.models.auto import modeling_auto as names

    if getattr(cfg, "is_encoder_decoder", False):
        return ENCODER_DECODER
    name = type(model).__name__
    decoders = set(names.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()) | set(
        names.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.values()
    )
    if name in decoders or name.endswith(("ForCausalLM", "LMHeadModel")):
        return DECODER
    if getattr(cfg, "vision_config", None) is not None and name.endswith("ForConditionalGeneration"):
        return DECODER
    return ENCODER


def meta_model(config: dict, model_type: str):
    """(transformers config, model on the meta device, its kind: DECODER, ENCODER or
    ENCODER_DECODER); ConfigNotUnderstood otherwise."""
    try:
        import torch
        import transformers
        from transformers import AutoConfig
    except ImportError:
        raise ConfigNotUnderstood(
            f"config.json has model_type {model_type!r}: counting it exactly needs "
            f"transformers and torch (pip install transformers torch)"
        ) from None
    kwargs = {k: v for k, v in config.items() if k not in _DROP}
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        try:
            cfg = AutoConfig.for_model(model_type, **kwargs)
        except ValueError:
            raise ConfigNotUnderstood(
                f"config.json has model_type {model_type!r}, which transformers "
                f"{transformers.__version__} does not know (a newer transformers may)"
            ) from None
        except Exception as exc:  # a field of the wrong type, a missing sub-config...
            raise ConfigNotUnderstood(
                f"transformers cannot read this config.json: {_first_line(exc)}"
            ) from None
        with torch.device("meta"), _quiet():
            model = _build(transformers, cfg, config, model_type)
    except ConfigNotUnderstood:
        raise
    except Exception as exc:
        raise ConfigNotUnderstood(
            f"transformers cannot build a {model_type} model from this config.json: {_first_line(exc)}"
        ) from None
    finally:
        transformers.logging.set_verbosity(verbosity)
    return cfg, model, _model_kind(transformers, cfg, model)


@contextlib.contextmanager
def _quiet():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__

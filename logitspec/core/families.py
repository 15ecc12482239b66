"""Which model families the decoders serve, read from the config alone, and how each
kind of attention layer is masked.

LogitSpec verifies a whole draft tree in one forward pass and then keeps only the accepted
path's cache entries. That needs two things of a model: a per-node position for every key
(so siblings can share a position), and a cache whose entries can be dropped row by row.
- Full and sliding-window attention have both (sliding layers get their own tree mask).
- ALiBi models (BLOOM, MPT, Falcon with `alibi`) compute each key's position bias from its
  index in the cache, so tree nodes at the same depth would see different biases.
- Recurrent and linear-attention layers (Mamba, RWKV, Qwen3-Next, Jamba, LFM2 ...) fold
  every token into one running state: a tree's branches would mix in it, and the state
  cannot be rolled back to the accepted path.
Those are refused before any weight is read.
"""
from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass

from .profile import profile_of
from .errors import ModelLoadError

FULL, SLIDING = "full_attention", "sliding_attention"
ALIBI_REASON = ("its ALiBi position bias comes from each key's index in the cache, so the "
                "nodes of a draft tree cannot share a position")
RECURRENT_REASON = ("its recurrent state holds every token it has seen, so a draft tree's "
                    "branches would mix in it and it cannot be cut back to the accepted path")
# Families whose config has no layer_types to tell (the cache layout reads as full attention).
RECURRENT_TYPES = {"rwkv": "RWKV", "xlstm": "xLSTM", "mamba": "Mamba", "mamba2": "Mamba2",
                   "falcon_mamba": "Falcon-Mamba"}
RECURRENT_LAYERS = {"linear_attention", "conv", "hybrid", "hybrid_sliding"}


@dataclass(frozen=True)
class AttentionLayout:
    """The kinds of attention layer a model has, in layer order, and the sliding window."""

    layer_types: tuple[str, ...]
    window: int | None  # the sliding layers' window (None: no sliding layer)

    @property
    def kinds(self) -> set[str]:
        return set(self.layer_types)

    @property
    def sliding(self) -> bool:
        return SLIDING in self.layer_types

    @property
    def mixed(self) -> bool:
        """Full and sliding layers both: the model takes one mask per kind, as a dict."""
        return self.kinds == {FULL, SLIDING}


def layout_of(config) -> AttentionLayout:
    """The attention layout transformers' own cache builds for `config`."""
    from transformers.cache_utils import get_layer_types_and_kwargs

    kinds, kwargs = get_layer_types_and_kwargs(config.get_text_config(decoder=True))
    windows = {kw["sliding_window"] for kind, kw in zip(kinds, kwargs) if kind == SLIDING}
    if len(windows) > 1:
        raise ModelLoadError(f"sliding layers of different windows ({sorted(windows)}) are not supported")
    return AttentionLayout(tuple(kinds), windows.pop() if windows else None)


_LOCK = threading.Lock()


def attention_layout(model) -> AttentionLayout:
    """`layout_of` the model's config, worked out once per model (every tree step asks)."""
    with _LOCK:
        prof = profile_of(model)
        if prof.layout is None:
            prof.layout = layout_of(model.config)
        return prof.layout


def _uses_alibi(config) -> bool:
    kind = getattr(config, "model_type", "")
    if kind == "bloom":
        return True
    if kind == "mpt":
        return bool(getattr(getattr(config, "attn_config", None), "alibi", True))
    return bool(getattr(config, "alibi", False))


def unsupported_reason(config) -> str | None:
    """Why the decoders cannot serve a model with this config, or None when they can."""
    kind = getattr(config, "model_type", "") or "this"
    if kind in RECURRENT_TYPES:
        return f"{RECURRENT_TYPES[kind]} is not supported: {RECURRENT_REASON}"
    if _uses_alibi(config):
        return f"{kind} with ALiBi is not supported: {ALIBI_REASON}"
    try:
        kinds = layout_of(config).kinds
    except (AttributeError, TypeError, KeyError, ValueError) as e:
        return f"{kind}: its attention layers could not be read from the config ({e})"
    except ModelLoadError as e:
        return f"{kind}: {e}"
    recurrent = kinds & RECURRENT_LAYERS
    if recurrent:
        return f"{kind} is not supported: {RECURRENT_REASON} ({', '.join(sorted(recurrent))} layers)"
    other = kinds - {FULL, SLIDING}
    if other:
        return (f"{kind} is not supported: its {', '.join(sorted(other))} layers have no tree mask "
                "or cache compaction here (full and sliding-window attention do)")
    return None


def check_config(config, name: str) -> None:
    """Raise ModelLoadError, in one line, when `config` names a model the decoders cannot serve."""
    reason = unsupported_reason(config)
    if reason:
        raise ModelLoadError(f"cannot use model {name!r}: {reason}")


def check_model(model, name: str) -> None:
    """`check_config`, plus what only the model class tells: a model with both full and
    sliding layers must take its masks as a dict {layer type: mask}."""
    check_config(model.config, name)
    if attention_layout(model).mixed and not takes_mask_dict(model):
        raise ModelLoadError(f"cannot use model {name!r}: it mixes full and sliding-window layers but "
                             "does not take one attention mask per layer type")


def takes_mask_dict(model) -> bool:
    """Whether the model's forward uses a dict passed as `attention_mask` as-is."""
    try:
        source = inspect.getsource(type(model.base_model).forward)
    except (OSError, TypeError):
        return True  # no source to read: the first tree step will tell
    return "attention_mask, dict)" in source


def fill_unused_window(model) -> bool:
    """Give a config without a window, whose layers are all full, a window no layer uses.

    Gemma 2 and 3 build the sliding mask on every call, even when no layer slides, and
    transformers then refuses a config whose `sliding_window` is None (model.generate fails
    the same way). Returns True if the config was changed.
    """
    cfg = model.config.get_text_config(decoder=True)
    types = getattr(cfg, "layer_types", None)
    if types is None or SLIDING in types or not hasattr(cfg, "sliding_window") or cfg.sliding_window is not None:
        return False
    cfg.sliding_window = int(getattr(cfg, "max_position_embeddings", 0) or 1 << 20)
    return True

"""The decoders, one per method: vanilla greedy, prompt lookup (PLD), LogitSpec, Token Recycling,
the hybrid, Lookahead decoding, REST, RACER and SuffixDecoding.

Each is the core's decode loop (core/loop.py) with its drafter: they share the prefill, the
verification and the acceptance, so they race on equal terms and stay lossless.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from transformers import LogitsProcessor, PreTrainedModel

from .core.drafter import Drafter, LogitSpecDrafter
from .core.loop import decode_run
from .core.settings import METHODS, DecodeSettings
from .core.trace import StepRecord
from .drafters.hybrid import HybridDrafter
from .drafters.lookahead import LookaheadDrafter
from .drafters.lookup import PromptLookupDrafter
from .drafters.racer import RacerDrafter
from .drafters.recycling import RecyclingDrafter
from .drafters.rest import RestDrafter
from .drafters.suffix import SuffixDrafter
from .sizing.costtree import CostAwareDrafter, stats_for


def make_drafter(method: str, s: DecodeSettings, model: PreTrainedModel | None = None) -> Drafter:
    """The drafter for a method name."""
    if method == "vanilla":
        return Drafter()
    if method == "pld":
        return PromptLookupDrafter(s)
    if method == "logitspec":
        return LogitSpecDrafter(s, model, cost_tree(s, model))
    if method == "recycling":
        return RecyclingDrafter(s, model)
    if method == "logitspec+recycling":
        return HybridDrafter(s, model)
    if method == "lookahead":
        return LookaheadDrafter(s)
    if method == "rest":
        return RestDrafter(s, model)
    if method == "racer":
        return RacerDrafter(s, model)
    if method == "suffix":
        return SuffixDrafter(s, model)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


def cost_tree(s: DecodeSettings, model: PreTrainedModel | None) -> CostAwareDrafter | None:
    """LogitSpec's tree sized by measured cost where the settings ask for it, else None (the paper's rule)."""
    if s.tree != "cost":
        return None
    # Acceptance falls as the temperature rises: each temperature learns its own rates.
    return CostAwareDrafter(model, stats_for(model, s.temperature) if model is not None else None)


def decode(
    model: PreTrainedModel,
    prompt: Sequence[int],
    method: str = "logitspec",
    settings: DecodeSettings | None = None,
    eos_ids: Sequence[int] = (),
    on_prefill: Callable[[float, bool], None] | None = None,
    processors: Sequence[LogitsProcessor] | None = None,
) -> Iterator[StepRecord]:
    """Decoding with the method's drafter, one StepRecord per forward pass.

    The concatenated `tokens` of the records equal plain greedy decoding's output (or, at a
    temperature above 0, plain sampling's with the same seed: see sampling.py), cut at the
    first EOS (included) or at `max_new_tokens`. Each position's logits go through the logits
    processors first, with that position's prefix: `processors` (generate's prepared list),
    else those `settings.processors` names (processors.py).
    """
    s = settings or DecodeSettings()
    if not prompt:
        raise ValueError("the prompt holds no tokens")
    yield from decode_run(model, prompt, make_drafter(method, s, model), s, eos_ids, on_prefill, processors)

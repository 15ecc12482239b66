"""What decoding learns about one loaded model, in one object: its cost curves, acceptance
statistics, Token Recycling's successor matrix and rank chances, SuffixDecoding's tree of earlier outputs, the output head's batch rows
and its attention layout; and the latest prompts' prefills, kept for the next runs of them. The
profile lives on the model object, so it is made with the model and goes with it; nothing about
a model is kept in a module. `fresh_profile` starts one anew: two decodes that each start from a
fresh profile build the same trees."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ATTRIBUTE = "logitspec_profile"


@dataclass
class ModelProfile:
    """One model's learned state. Each field is owned by the module named beside it."""

    curves: dict[int, Any] = field(default_factory=dict)  # context bucket -> LiveCost (costcurve)
    acceptance: dict[float, Any] = field(default_factory=dict)  # temperature bucket -> AcceptanceStats (costtree)
    ranks: dict[float, Any] = field(default_factory=dict)  # temperature bucket -> RankStats (recycling)
    successors: Any = None  # SuccessorMatrix (recycling)
    suffix_outputs: Any = None  # OutputTree: earlier outputs' suffix tree (drafters.suffix)
    racer: Any = None  # RacerMemory: the automaton and copied logits kept across runs (drafters.racer)
    head_rows: int | None = None  # rows the output head maps at the cost of one (verify)
    layout: Any = None  # AttentionLayout (families)
    prefills: Any = None  # PrefillStore: the latest prompts' prefills (runtime.prefills)


def profile_of(model) -> ModelProfile:
    """The model's profile, made at its first use (dict.setdefault: one wins if two threads ask)."""
    return vars(model).setdefault(ATTRIBUTE, ModelProfile())


def fresh_profile(model) -> ModelProfile:
    """Forget what decoding learnt about `model`; the next decode measures and learns anew."""
    vars(model)[ATTRIBUTE] = ModelProfile()
    return vars(model)[ATTRIBUTE]

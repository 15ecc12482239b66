"""The decoders, one per method: vanilla greedy, LogitSpec and every drafter in logitspec/drafters/
(prompt lookup, Token Recycling, the hybrid, Lookahead decoding, REST, RACER, SuffixDecoding...).

Each is the core's decode loop (core/loop.py) with its drafter: they share the prefill, the
verification and the acceptance, so they race on equal terms and stay lossless. A drafter is
found by the `method` its class declares and built by its `build`: a new drafter module needs no
line here (docs/how-it-works.md, "Adding a lane").
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from transformers import LogitsProcessor, PreTrainedModel

from . import drafters
from .core.drafter import Drafter
from .core.logitspec_drafter import LogitSpecDrafter
from .core.loop import decode_run
from .core.settings import DecodeSettings
from .core.trace import StepRecord
from .sizing.costtree import stats_for
from .sizing.retrievaltree import RetrievalCostTree

Builder = Callable[[DecodeSettings, "PreTrainedModel | None"], Drafter]


@dataclass(frozen=True)
class Registry:
    """Methods and how each builds its drafter from (settings, model), in the order given."""

    builders: tuple[tuple[str, Builder], ...]

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.builders)

    def make(self, method: str, s: DecodeSettings, model: PreTrainedModel | None = None) -> Drafter:
        build = dict(self.builders).get(method)
        if build is None:
            raise ValueError(f"unknown method {method!r}; choose one of {', '.join(self.methods)}")
        return build(s, model)


def declared_drafters(package=drafters) -> tuple[type[Drafter], ...]:
    """The drafter classes of a package's modules that declare a `method` of their own, by module name."""
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found += [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Drafter)
                  and c.__module__ == module.__name__ and "method" in vars(c)]
    return tuple(found)


def _vanilla(s: DecodeSettings, model: PreTrainedModel | None = None) -> Drafter:
    return Drafter()  # drafts nothing: the root alone


def _logitspec(s: DecodeSettings, model: PreTrainedModel | None = None) -> Drafter:
    return LogitSpecDrafter(s, model, cost_tree(s, model))


def registry(classes: Sequence[type[Drafter]] = (), order: Sequence[str] = ()) -> Registry:
    """The core's two methods and `classes`, each by the `method` its class declares (the one place a
    method's name is written) and its `build`: in `order` where given, the rest after as found."""
    builders = [(Drafter.method, _vanilla), (LogitSpecDrafter.method, _logitspec)]
    builders += [(c.method, c.build) for c in classes]
    rank = {name: i for i, name in enumerate(order)}
    return Registry(tuple(sorted(builders, key=lambda b: rank.get(b[0], len(rank)))))


REGISTRY = registry(declared_drafters())  # built once at import, never changed


def make_drafter(method: str, s: DecodeSettings, model: PreTrainedModel | None = None,
                 methods: Registry = REGISTRY) -> Drafter:
    """The drafter for a method name."""
    return methods.make(method, s, model)


def cost_tree(s: DecodeSettings, model: PreTrainedModel | None) -> RetrievalCostTree | None:
    """LogitSpec's tree sized by measured cost where the settings ask for it, else None (the paper's rule)."""
    if s.tree != "cost":
        return None
    # Acceptance falls as the temperature rises: each temperature learns its own rates.
    return RetrievalCostTree(model, stats_for(model, s.temperature) if model is not None else None)


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

"""generate's logits processors, applied to each verified position with that position's own prefix.

transformers' generate turns a position's logits into the scores its token is chosen from
through a list of processors, several of which read the tokens before the position
(repetition penalty, no-repeat n-grams, min length, bad words, ...). A tree pass computes
the logits of many positions at once; each node's row goes through the same list with the
node's own prefix, the context plus the node's ancestors and the node itself, as generate's
assisted decoding does for each candidate position. Only the rows the acceptance walk reads
are processed (verify.LazyHead).

Temperature, top-k and top-p stay with sampling.py's rule (the noise per position keeps every
decoder's draws equal); the warpers generate applies after top-p (min_p, typical_p,
epsilon_cutoff, eta_cutoff) follow it here, in generate's order.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from transformers import GenerationConfig, LogitsProcessor, PreTrainedModel
from transformers.generation.logits_process import (EpsilonLogitsWarper, EtaLogitsWarper,
                                                    ForcedEOSTokenLogitsProcessor, MinLengthLogitsProcessor,
                                                    MinNewTokensLengthLogitsProcessor, MinPLogitsWarper,
                                                    SuppressTokensAtBeginLogitsProcessor,
                                                    SynthIDTextWatermarkLogitsProcessor, TemperatureLogitsWarper,
                                                    TopHLogitsWarper, TopKLogitsWarper, TopPLogitsWarper,
                                                    TypicalLogitsWarper,
                                                    UnbatchedClassifierFreeGuidanceLogitsProcessor)

from .limits import InputError
from .sampling import Lead, SamplingRule, choose_with_lead, leads_of, perturbed, process
from .settings import INERT, PROCESSOR_OPTIONS, DecodeSettings

OWN_WARPERS = (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)  # sampling.process reproduces these
AFTER_RULE = (MinPLogitsWarper, TypicalLogitsWarper, EpsilonLogitsWarper, EtaLogitsWarper)  # generate's order
# Processors that cannot be applied per tree node, each with why.
REFUSED = {
    UnbatchedClassifierFreeGuidanceLogitsProcessor: "guidance_scale runs the model again on its own cache",
    SynthIDTextWatermarkLogitsProcessor: "the SynthID watermark keeps state across calls",
    TopHLogitsWarper: "top_h sits between temperature and top-k, which the decoders apply together",
}


@dataclass(frozen=True)
class Processing:
    """How a position's logits [V] become the scores its token is chosen from: `before` (with
    the position's prefix), then the sampling rule (None: greedy), then `after` (sampling only)."""

    rule: SamplingRule | None = None
    before: tuple[LogitsProcessor, ...] = ()
    after: tuple[LogitsProcessor, ...] = ()

    @property
    def plain(self) -> bool:
        """No processor reads a prefix: the decoders' own fast paths serve."""
        return not self.before and not (self.after and self.rule is not None)

    @property
    def temperature(self) -> float:
        return 1.0 if self.rule is None else self.rule.temperature

    def scores(self, prefix: Sequence[int], logits: torch.Tensor) -> torch.Tensor:
        """[V] float32: the processed logits of the position after `prefix` (its tokens, the
        whole sequence so far), before any noise. The argmax is greedy's choice."""
        # A float32 copy, as generate hands its processors: some of them write in place.
        z = logits.to(torch.float32, copy=True)[None]
        before = [p for p in self.before if acts_at(p, len(prefix))]
        after = [p for p in self.after if acts_at(p, len(prefix))] if self.rule is not None else []
        ids = torch.tensor([list(prefix)], dtype=torch.long, device=logits.device) if before or after else None
        for p in before:
            z = p(ids, z)
        if self.rule is None:
            return z[0]
        z = process(z[0], self.rule)[None]
        for p in after:
            z = p(ids, z)
        return z[0]

    def choose_with_lead(self, prefix: Sequence[int], logits: torch.Tensor, position: int) -> tuple[int, Lead]:
        """The token at absolute `position` (= len(prefix)) and its lead over the runner-up."""
        if self.plain:
            return choose_with_lead(logits, position, self.rule)
        z = self.scores(prefix, logits)
        scores = z if self.rule is None else perturbed(z, position, self.rule)
        token = int(torch.argmax(scores))
        return token, leads_of(scores[None], [token], logits[None], self.temperature)[0]


def acts_at(p: LogitsProcessor, length: int) -> bool:
    """Whether `p` can change the scores of the position after `length` tokens. The processors
    that read only the position act at a few (elsewhere they return the scores unchanged, so
    skipping them there is exact and costs nothing); every other one may act anywhere."""
    if isinstance(p, MinLengthLogitsProcessor):
        return length < p.min_length
    if isinstance(p, MinNewTokensLengthLogitsProcessor):
        return length - p.prompt_length_to_skip < p.min_new_tokens
    if isinstance(p, ForcedEOSTokenLogitsProcessor):
        return length == p.max_length - 1
    if isinstance(p, SuppressTokensAtBeginLogitsProcessor):
        return length == p.begin_index
    return True


def refusal(processors: Iterable[LogitsProcessor]) -> str | None:
    """Why one of `processors` cannot be applied per tree node, in one line, or None."""
    for p in processors:
        why = next((w for cls, w in REFUSED.items() if isinstance(p, cls)), None)
        if why:
            return f"{type(p).__name__}: {why}; LogitSpec cannot apply it per tree node"
    return None


def split(processors: Iterable[LogitsProcessor], rule: SamplingRule | None) -> Processing:
    """generate's prepared list as a Processing: its temperature, top-k and top-p left to `rule`
    (built from the same values), the warpers after them kept after it, the rest before it.
    Raises InputError for a processor that cannot be applied per node."""
    processors = list(processors)
    if why := refusal(processors):
        raise InputError(why)
    before, after = [], []
    for p in processors:
        if not isinstance(p, OWN_WARPERS):
            (after if isinstance(p, AFTER_RULE) else before).append(p)
    return Processing(rule, tuple(before), tuple(after))


def generate_processors(model: PreTrainedModel, s: DecodeSettings, prompt_len: int,
                        eos_ids: Sequence[int]) -> list[LogitsProcessor]:
    """The list generate would build for `s.processors` on a prompt of `prompt_len` tokens,
    built by generate's own builder, so each processor is the one generate would apply."""
    try:
        config = GenerationConfig(**s.processors, do_sample=s.temperature > 0,
                                  max_length=prompt_len + s.max_new_tokens, eos_token_id=list(eos_ids) or None)
    except (TypeError, ValueError) as e:
        raise InputError(f"processor options {s.processors}: {str(e).splitlines()[0]}") from e
    # Sets the eos tensor the min-length processors read; the decoders pad nothing, so a full mask.
    model._prepare_special_tokens(config, True, device=model.device)
    try:
        return list(model._get_logits_processor(config, input_ids_seq_length=prompt_len, device=model.device,
                                                model_kwargs={}))
    except ValueError as e:  # a processor's own check of its value
        raise InputError(f"processor options {s.processors}: {str(e).splitlines()[0]}") from e


def config_values(config: GenerationConfig) -> dict:
    """The DecodeSettings values a generation config sets: its processors, and its sampling rule
    when it samples (generate's do_sample; otherwise its temperature and tops apply nothing)."""
    defaults = GenerationConfig._get_default_generation_params()  # what generate fills in for None

    def value(name: str):
        v = getattr(config, name, None)
        return defaults[name] if v is None else v
    values: dict = {"processors": options_of(config)}
    if value("do_sample"):
        values.update(temperature=float(value("temperature")), top_p=float(value("top_p")), top_k=int(value("top_k")))
    return values


def options_of(config: GenerationConfig) -> dict:
    """The PROCESSOR_OPTIONS a generation config sets away from their defaults, as plain
    values a trace can hold (sequence_bias as [[token ids], bias] pairs)."""
    out = {name: value for name in PROCESSOR_OPTIONS
           if (value := getattr(config, name, None)) is not None and value != INERT.get(name)}
    if isinstance(out.get("sequence_bias"), dict):
        out["sequence_bias"] = [[list(k), float(v)] for k, v in out["sequence_bias"].items()]
    return out


def processing_for(model: PreTrainedModel, s: DecodeSettings, prompt_len: int, eos_ids: Sequence[int],
                   processors: Iterable[LogitsProcessor] | None = None) -> Processing:
    """The run's Processing: `processors` as given (generate's prepared list), else the list
    `s.processors` names, with `s`'s sampling rule."""
    rule = SamplingRule.of(s)
    if processors is None:
        if not s.processors:
            return Processing(rule)
        processors = generate_processors(model, s, prompt_len, eos_ids)
    return split(processors, rule)

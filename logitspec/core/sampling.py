"""Sampling that stays lossless: one rule for every decoder, its noise drawn per position.

At absolute position j (the token's index in the whole sequence, prompt included) the
sampled token is

    x_j = argmax(process(logits_j) + G_j)

where `process` divides by the temperature and sets the logits that top-k and top-p exclude
to -inf, and G_j is Gumbel noise over the vocabulary from a generator keyed by (seed, j)
alone. The Gumbel-max trick makes x_j an exact draw from softmax(process(logits_j)) given
the prefix, and since G_j depends on nothing but (seed, j), any decoder that computes the
same logits at position j draws the same token there: a tree that verifies several
positions in one pass, or several nodes at one depth (which share j and so share G_j),
reproduces plain one-token-at-a-time sampling with the same seed exactly.

Temperature 0 is greedy decoding: no rule, no noise, the plain argmax.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .settings import DecodeSettings

MASK64 = (1 << 64) - 1
NUCLEUS_FIRST = 64  # entries looked at first when finding the top-p set; most nuclei are smaller


@dataclass(frozen=True)
class SamplingRule:
    """The sampling part of DecodeSettings; None stands for greedy (temperature 0)."""

    temperature: float
    top_p: float
    top_k: int
    seed: int

    @classmethod
    def of(cls, s: DecodeSettings) -> "SamplingRule | None":
        if s.temperature == 0:
            return None
        return cls(float(s.temperature), float(s.top_p), int(s.top_k), int(s.seed))


def splitmix64(x: int) -> int:
    """SplitMix64's output function: a bijection of 64-bit integers that mixes every bit."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def position_seed(seed: int, position: int) -> int:
    """The generator seed for (seed, position): nearby seeds and positions give unrelated streams."""
    return splitmix64(splitmix64(seed & MASK64) ^ (position & MASK64))


def gumbel(seed: int, position: int, vocab: int) -> torch.Tensor:
    """Gumbel(0, 1) noise for one position: float32 [vocab], on the CPU.

    Drawn on the CPU from a generator seeded by `position_seed`, so the same (seed,
    position) gives the same noise on every device and in every decoder.
    """
    g = torch.Generator().manual_seed(position_seed(seed, position))
    u = torch.rand(vocab, generator=g, dtype=torch.float64)
    # U in (0, 1): a draw of exactly 0 would give -log(-log 0) = -inf, harmless but not Gumbel.
    u.clamp_(min=torch.finfo(torch.float64).tiny)
    return u.log_().neg_().log_().neg_().float()


def _keep_nucleus(z: torch.Tensor, top_p: float) -> torch.Tensor:
    """[V] -> [V]: the smallest set of the likeliest entries whose mass reaches top_p kept,
    the rest -inf (the entry that crosses top_p is kept, as in transformers' TopPLogitsWarper)."""
    probs = torch.softmax(z, dim=-1)
    vocab, m = z.shape[-1], NUCLEUS_FIRST
    while True:
        m = min(m, vocab)
        # A top-m instead of a full sort: the nucleus usually lies in the first few dozen entries.
        vals, idx = torch.topk(probs, m)
        cum = vals.cumsum(0)
        if cum[-1] >= top_p or m == vocab:
            keep = min(int(torch.searchsorted(cum, torch.tensor([top_p], dtype=cum.dtype))[0]) + 1, m)
            out = torch.full_like(z, float("-inf"))
            out[idx[:keep]] = z[idx[:keep]]
            return out
        m *= 8


def process(logits: torch.Tensor, rule: SamplingRule) -> torch.Tensor:
    """[V] logits -> [V] float32: divided by the temperature, then top-k, then top-p applied
    (excluded entries -inf); transformers' warpers in the same order."""
    z = logits.float() / rule.temperature
    if 0 < rule.top_k < z.shape[-1]:
        kth = torch.topk(z, rule.top_k).values[-1]
        z = z.masked_fill(z < kth, float("-inf"))
    if rule.top_p < 1.0:
        z = _keep_nucleus(z, rule.top_p)
    return z


def probabilities(logits: torch.Tensor, rule: SamplingRule | None) -> torch.Tensor:
    """[V] logits -> [V] the distribution a token is drawn from: softmax(process(logits)),
    or the plain softmax at temperature 0."""
    z = logits.float() if rule is None else process(logits, rule)
    return torch.softmax(z, dim=-1)


@dataclass(frozen=True, slots=True)
class Lead:
    """How far a chosen token led the next best one, in units in the last place (ulps) of the
    logits' dtype: where two kernels' last bits can part two decoders (a near-tie), and where
    they cannot."""

    ulps: float | None  # None when nothing else could be chosen (top-k or top-p left one token)
    runner_up: int  # the next best token (-1 when none)


def ulp(x: float, dtype: torch.dtype) -> float:
    """The spacing of `dtype`'s numbers at |x| (its smallest normal's below that)."""
    info = torch.finfo(dtype)
    _, e = math.frexp(max(abs(x), info.tiny))
    return info.eps * 2.0 ** (e - 1)


def leads_of(scores: torch.Tensor, chosen: Sequence[int], logits: torch.Tensor | None = None,
             temperature: float = 1.0) -> list[Lead]:
    """Each choice's lead. scores [m, V]: what the choice maximised, row i's maximum taken as
    chosen[i] (the logits when greedy, the perturbed processed logits when sampling, then with
    their `logits` [m, V] and `temperature`). The lead is the top two scores' difference in
    logit units, over the ulp of the larger of the two tokens' logits."""
    logits = scores if logits is None else logits
    vals, idx = torch.topk(scores.float(), 2, dim=-1)
    pair = logits.gather(-1, idx).float()
    leads = []
    for (top, second), (first, other), (la, lb), token in zip(vals.tolist(), idx.tolist(), pair.tolist(), chosen):
        if second == float("-inf"):
            leads.append(Lead(None, -1))
            continue
        # At an exact tie topk may list the tied tokens in any order: the runner-up is one not chosen.
        size = ulp(max(abs(la), abs(lb)), logits.dtype)
        leads.append(Lead((top - second) * temperature / size, other if first == token else first))
    return leads


def perturbed(z: torch.Tensor, position: int, rule: SamplingRule) -> torch.Tensor:
    """Processed logits z [V] plus the Gumbel noise of `position`: the draw is their argmax."""
    return z + gumbel(rule.seed, position, z.shape[-1]).to(z.device)


def choose_processed(z: torch.Tensor, position: int, rule: SamplingRule) -> int:
    """The token drawn at `position` from already processed logits z [V]."""
    return int(torch.argmax(perturbed(z, position, rule)))


def choose(logits: torch.Tensor, position: int, rule: SamplingRule | None) -> int:
    """The token at absolute `position` given its logits [V]: argmax at temperature 0, else
    the Gumbel-max draw keyed by (seed, position)."""
    if rule is None:
        return int(torch.argmax(logits))
    return choose_processed(process(logits, rule), position, rule)


def choose_with_lead(logits: torch.Tensor, position: int, rule: SamplingRule | None) -> tuple[int, Lead]:
    """`choose`, and the chosen token's lead over the runner-up."""
    scores = logits if rule is None else perturbed(process(logits, rule), position, rule)
    token = int(torch.argmax(scores))
    if rule is None:
        return token, leads_of(logits[None], [token])[0]
    return token, leads_of(scores[None], [token], logits[None], rule.temperature)[0]


def sample(logits: torch.Tensor, position: int, settings: DecodeSettings) -> int:
    """`choose` with the sampling settings of a DecodeSettings."""
    return choose(logits, position, SamplingRule.of(settings))

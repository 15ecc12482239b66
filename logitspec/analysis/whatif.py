"""What-if retrieval: a saved run's lookups replayed with other settings, no model needed.

A run's output is fixed (greedy, or sampled from a seed), so the trace alone says what each
step searched: the prompt plus the tokens committed before it; and it holds each step's
root x_{i+1} and next-next candidates. Running retrieval.retrieve again over that context with
other n-gram sizes, another continuation length or fewer candidates gives exactly what those
settings would have drafted at each of the run's steps, and drafts.drafted_per_step how much
of the true continuation the drafts held. The run's steps are kept as they were: the replay
measures retrieval, not the tree a real run with those settings would have built and verified.
Pure Python, no torch.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .drafts import drafted_per_step
from ..core.limits import InputError, Limits
from ..core.retrieval import NgramPool, retrieve
from ..core.settings import DecodeSettings, PruningRule
from ..core.trace import RunTrace, StepRecord


@dataclass(frozen=True)
class RetrievalSetting:
    """The retrieval parameters a what-if may change."""

    ngram_sizes: tuple[int, ...]
    continuation: int  # g1 continuation length (g2's follows from it and the tree's rule)
    k: int  # next-next candidates looked up with g2, at most the trace recorded

    def label(self) -> str:
        sizes = self.ngram_sizes
        ns = f"{sizes[0]}–{sizes[-1]}" if len(sizes) > 1 and sizes == tuple(range(sizes[0], sizes[-1] + 1)) \
            else ", ".join(map(str, sizes))
        return f"n-grams {ns} · continuation {self.continuation} · k {self.k}"


@dataclass
class Replay:
    """Retrieval of every step under one setting: outcomes and drafted tokens."""

    setting: RetrievalSetting
    steps: list[int]  # indices into trace.steps of the forward steps
    outcomes: list[str]  # StepRecord.outcome of each forward step
    retrieved: list[bool]  # whether any lookup of the step found a continuation
    drafted: list[int]  # root + the longest stretch of the true continuation the drafts held
    bound: int  # drafts.drafted_bound of the whole run

    @property
    def success_rate(self) -> float:
        return sum(self.retrieved) / len(self.retrieved) if self.retrieved else 0.0


@dataclass
class WhatIf:
    """The run's own retrieval beside a replay at another setting."""

    own: Replay  # from the queries the trace recorded
    new: Replay  # replayed at the chosen setting
    accepted: list[int]  # tokens each forward step committed in the run
    text_failures: list[int]  # steps where not even a 1-gram of any recorded guess occurs earlier
    temperature: float


def recorded_k(trace: RunTrace) -> int:
    """The most next-next candidates any step of the trace recorded (0 for PLD and vanilla)."""
    return max((len(s.candidates) for s in trace.steps if s.forward), default=0)


def own_setting(trace: RunTrace) -> RetrievalSetting:
    """The setting the run drafted with, from its recorded settings (defaults where absent)."""
    d, s = DecodeSettings(), trace.settings
    return RetrievalSetting(tuple(sorted(int(n) for n in s.get("ngram_sizes", d.ngram_sizes))),
                            int(s.get("continuation", d.continuation)), min(int(s.get("k", d.k)), recorded_k(trace)))


def check_setting(trace: RunTrace, setting: RetrievalSetting, limits: Limits | None = None) -> RetrievalSetting:
    """The setting, if the replay can honour it; InputError in one line otherwise."""
    lim = limits or Limits.from_env()
    sizes = tuple(sorted(set(setting.ngram_sizes)))
    if not sizes:
        raise InputError("choose at least one n-gram size")
    if sizes[0] < 1 or sizes[-1] > lim.ngram:
        raise InputError(f"n-gram sizes must be from 1 to {lim.ngram}")
    if not 1 <= setting.continuation <= lim.continuation:
        raise InputError(f"the continuation length must be from 1 to {lim.continuation}")
    most = recorded_k(trace)
    if not 0 <= setting.k <= most:
        raise InputError(f"k must be from 0 to {most}: this trace recorded {most} candidates per step, "
                         "and a replay cannot invent more")
    return replace(setting, ngram_sizes=sizes)


def replay_steps(trace: RunTrace, setting: RetrievalSetting) -> list[StepRecord]:
    """The trace's steps with their lookups redone at `setting` (candidates cut to its k)."""
    s = decode_settings(trace, setting)
    # The run's own pool kind (traces from before the setting used the latest occurrence).
    pool = NgramPool(setting.ngram_sizes, trace.prompt_tokens, str(trace.settings.get("pool", "recent")),
                     setting.continuation)
    out = []
    for step in trace.steps:
        if step.forward:
            if step.context_len != len(pool):
                raise InputError(f"step {step.index} says it searched {step.context_len} tokens but the prompt and "
                                 f"the tokens before it are {len(pool)}: the trace does not add up")
            cands = step.candidates[: setting.k]
            step = replace(step, candidates=cands, queries=retrieve(step.root, cands, pool, s))
        out.append(step)
        pool.extend(step.tokens)
    return out


def decode_settings(trace: RunTrace, setting: RetrievalSetting) -> DecodeSettings:
    """The run's DecodeSettings (tree sizing and rule decide g2's lengths) with `setting` in."""
    d, s = DecodeSettings(), trace.settings
    rule = s.get("rule")
    return replace(d, tree=str(s.get("tree", d.tree)), rule=PruningRule(**rule) if isinstance(rule, dict) else d.rule,
                   ngram_sizes=setting.ngram_sizes, continuation=setting.continuation, k=setting.k)


def summarise(steps: list[StepRecord], setting: RetrievalSetting) -> Replay:
    """Outcomes and drafted tokens of steps (recorded or replayed)."""
    drafted = drafted_per_step(steps)
    fwd = [i for i, s in enumerate(steps) if s.forward]
    return Replay(setting, fwd, [steps[i].outcome for i in fwd], [steps[i].retrieved for i in fwd],
                  [drafted[i] for i in fwd], sum(drafted))


def what_if(trace: RunTrace, setting: RetrievalSetting) -> WhatIf:
    """The run's own retrieval and a replay at `setting` (checked first), step by step."""
    setting = check_setting(trace, setting)
    new = summarise(replay_steps(trace, setting), setting)
    own = summarise(trace.steps, own_setting(trace))
    # A 1-gram matches wherever any longer n-gram does, so the widest lookup is n = 1 with
    # every recorded candidate; where even it fails, no setting finds anything.
    widest = replay_steps(trace, RetrievalSetting((1,), 1, recorded_k(trace)))
    text_failures = [i for i in own.steps if not widest[i].retrieved]
    return WhatIf(own, new, [len(trace.steps[i].tokens) for i in own.steps], text_failures,
                  float(trace.settings.get("temperature") or 0.0))

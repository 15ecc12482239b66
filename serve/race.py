"""The race: decoder lanes interleaved step by step, each on its own measured compute clock.

Every lane is a stream of StepRecords (one per forward pass). The race takes one record
from each lane in turn, so the lanes share the machine fairly and progress side by side,
while each lane's clock adds up only its own measured prefill and step seconds. Nothing
here is simulated: the times are the ones the decoders measured.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from logitspec.analysis import lanes
from logitspec.analysis.lanes import race_order
from logitspec.analysis.parting import Choices, Parting, parting
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace, StepRecord, TraceFileError, read_json_file, trace_from_data

if TYPE_CHECKING:  # the engine imports torch; replaying saved traces must not need it
    from logitspec.models import LoadedModel



class RaceStopped(Exception):
    """The race was stopped before every lane finished; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Lane:
    """One decoder in the race: its steps as they come and the trace they fill."""

    name: str
    trace: RunTrace
    steps: Iterator[StepRecord]
    done: bool = False
    finish: Callable[[], object] | None = None  # completes a stopped lane's trace (token texts)


@dataclass
class LaneStats:
    """A lane's counters, all from measured times."""

    name: str
    tokens: int
    forward_steps: int
    seconds: float  # prefill + the lane's own step seconds

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_forward(self) -> float:
        return self.tokens / self.forward_steps if self.forward_steps else 0.0


def lane_stats(name: str, trace: RunTrace) -> LaneStats:
    """Counters of a (possibly unfinished) lane from its trace."""
    return LaneStats(name, len(trace.tokens), trace.forward_steps, trace.seconds)


@dataclass
class RaceUpdate:
    """What changed: the lane that just stepped and its step (the lanes' traces hold the rest)."""

    lane: str
    step: StepRecord


@dataclass
class RaceResult:
    """The end of a race: the traces, counters, and speed and sameness over equal token counts.

    A race stopped or cut short leaves its lanes at different token counts, and comparing 62
    tokens with 74 would claim a difference that is not there; so both the speed-up and the
    lossless check are taken over the tokens every lane reached (`compared_tokens`).
    """

    traces: dict[str, RunTrace]
    stats: dict[str, LaneStats]
    speedups: dict[str, float] = field(default_factory=dict)  # lane -> x vs vanilla, over compared_tokens
    lossless: bool = True  # every lane's first compared_tokens tokens equal the vanilla lane's
    compared_tokens: int = 0  # the token count every lane reached
    complete: bool = True  # every lane ran to its end (EOS or the token budget)
    partings: dict[str, Parting] = field(default_factory=dict)  # lane -> where its output parts from vanilla's

    @property
    def first_difference(self) -> dict[str, int]:
        """lane -> the first token index unlike vanilla's."""
        return {name: p.index for name, p in self.partings.items()}

    @property
    def near_ties(self) -> int:
        """Lanes that parted from vanilla only at a near-tie (parting.py)."""
        return sum(p.near_tie for p in self.partings.values())


def speedup(lane: LaneStats, baseline: LaneStats) -> float:
    """Ratio of tokens per second, lane over baseline (0 when the baseline has no time)."""
    base = baseline.tokens_per_second
    return lane.tokens_per_second / base if base > 0 else 0.0


def finished(trace: RunTrace) -> bool:
    """A lane is over when its last step has no bonus (EOS or the token budget reached)."""
    return bool(trace.steps) and trace.steps[-1].bonus is None


def seconds_to_reach(trace: RunTrace, n: int) -> float | None:
    """Compute seconds (prefill and steps) until the lane had committed at least `n` tokens.

    A step that overshoots `n` is counted whole, so a lane that commits several tokens a
    step is never credited with more speed than it showed.
    """
    t, got = trace.prefill_seconds, 0
    for s in trace.steps:
        if got >= n:
            break
        t += s.seconds
        got += len(s.tokens)
    return t if got >= n else None


def interleave(
    lanes: Iterable[Lane],
    should_stop: Callable[[], bool] | None = None,
    deadline: float | None = None,
) -> Iterator[RaceUpdate]:
    """Take one step from each unfinished lane in turn until all are done.

    `should_stop` is asked before every step, and `deadline` (a time.monotonic() value) is
    checked likewise, so a stop takes effect within one decoding step; either raises
    RaceStopped. The lanes' traces hold every step taken so far.
    """
    lanes = list(lanes)
    while not all(ln.done for ln in lanes):
        for ln in lanes:
            if ln.done:
                continue
            if should_stop is not None and should_stop():
                raise RaceStopped("stopped")
            if deadline is not None and time.monotonic() > deadline:
                raise RaceStopped("time limit")
            try:
                step = next(ln.steps)
            except StopIteration:
                ln.done = True
                continue
            yield RaceUpdate(ln.name, step)


def result_of(traces: dict[str, RunTrace], baseline: str = "vanilla") -> RaceResult:
    """Counters, and speed-ups and sameness against `baseline` over the tokens every lane reached."""
    stats = {name: lane_stats(name, t) for name, t in traces.items()}
    res = RaceResult(traces=traces, stats=stats, complete=all(finished(t) for t in traces.values()))
    if baseline not in traces:
        return res
    n = min(len(t.tokens) for t in traces.values())
    res.compared_tokens = n
    base = Choices.of(traces[baseline])
    for name, t in traces.items():
        # Both ran to their end, yet one stopped sooner: the outputs differ there.
        if (part := parting(Choices.of(t), base, n, both_ended=res.complete)) is not None:
            res.partings[name] = part
    res.lossless = not res.partings
    base_s = seconds_to_reach(traces[baseline], n) if n else None
    for name, t in traces.items():
        lane_s = seconds_to_reach(t, n) if n else None
        res.speedups[name] = base_s / lane_s if base_s and lane_s else 0.0
    return res


def lane_order(methods: Iterable[str]) -> list[str]:
    """The requested methods in race order (vanilla first), without duplicates."""
    wanted = set(methods)
    return [m for m in race_order() if m in wanted]


def lane_run(lane: str, settings: DecodeSettings) -> tuple[str, DecodeSettings]:
    """The method and settings a lane decodes with: the paper's lane is LogitSpec's static tree at
    DecodeSettings' own capacity (the paper's 64), whatever the race's other lanes use; any other
    lane (Token Recycling's included) is its method at the race's settings."""
    spec = lanes.lane(lane)
    if spec is None or spec.tree is None:
        return (spec.method if spec else lane), settings
    return spec.method, replace(settings, tree=spec.tree, capacity=DecodeSettings().capacity)


def model_lanes(lm: LoadedModel, prompt_text: str, methods: Iterable[str],
                settings: DecodeSettings, thread=None) -> list[Lane]:
    """A lane per method over the same prompt on a loaded model; each run starts on its first
    step, and every step runs on `thread` (a `logitspec.runtime.threads.ModelThread`, the one the
    model was loaded on), else on the thread that pulls it.

    Token texts are attached to a lane's trace when its run ends; call `lane.finish()` to
    attach them to a lane that was stopped.
    """
    from logitspec.runner import Run

    lanes = []
    for m in lane_order(methods):
        run = Run(lm, prompt_text, *lane_run(m, settings))
        # Each step is decoded on the one model thread, whichever thread pulls it.
        steps = thread.iterate(iter(run)) if thread is not None else iter(run)
        lanes.append(Lane(m, run.trace, steps, finish=run.finish))
    return lanes


RACE_FORMAT = "logitspec-race/1"


def save_race(traces: dict[str, RunTrace], path, machine: str = "") -> None:
    """Write a finished race (every lane's trace) as one JSON file, with the machine it ran on."""
    import json
    from pathlib import Path

    data = {"format": RACE_FORMAT, "machine": machine,
            "lanes": {name: t.to_dict() for name, t in traces.items()}}
    Path(path).write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def load_race(path, max_bytes: int | None = None, vocab_size: int | None = None) -> tuple[dict[str, RunTrace], str]:
    """The lanes of a race file written by `save_race`, in race order, and its machine; a
    single-run trace file reads as a race of its one lane on no named machine. Any other file
    raises TraceFileError saying in one line what is wrong (see `read_json_file`)."""
    data = read_json_file(path, max_bytes)
    form = str(data.get("format", "")) if isinstance(data, dict) else ""
    if not form.startswith("logitspec-race/"):
        trace = trace_from_data(data, vocab_size)
        return {trace.method: trace}, ""
    if form != RACE_FORMAT:
        raise TraceFileError(f"this race recording's format {form} is unknown; this version reads {RACE_FORMAT}")
    named = data.get("lanes")
    if not isinstance(named, dict) or not lane_order(named):
        raise TraceFileError(f"this race recording holds none of the lanes {', '.join(race_order())}")
    lanes = {}
    for name in lane_order(named):
        try:
            lanes[name] = trace_from_data(named[name], vocab_size)
        except TraceFileError as e:
            raise TraceFileError(f"this race recording's {name} lane: {e}") from None
    return lanes, str(data.get("machine", ""))

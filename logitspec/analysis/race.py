"""A race's record: the lanes' traces, their counters, and speed and sameness against vanilla
over the tokens every lane reached; the race file that holds them. Pure functions of traces,
no model and no torch: the figures read them. Running a race is the app's (serve/race.py)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.trace import RunTrace, TraceFileError, read_json_file, trace_from_data
from .lanes import race_order
from .parting import Choices, Parting, parting


# Below this many tokens a speed-up is mostly the prompt pass and one step's noise: no verdict on speed.
MIN_COMPARED_TOKENS = 16


@dataclass
class LaneStats:
    """A lane's counters, all from measured times."""

    name: str
    tokens: int
    forward_steps: int
    seconds: float  # the lane's compute clock: prefill + its own steps, one-off measuring included

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_forward(self) -> float:
        return self.tokens / self.forward_steps if self.forward_steps else 0.0


def lane_stats(name: str, trace: RunTrace) -> LaneStats:
    """Counters of a (possibly unfinished) lane from its trace."""
    return LaneStats(name, len(trace.tokens), trace.forward_steps, trace.clock_seconds)


@dataclass
class RaceResult:
    """The end of a race: the traces, counters, and speed and sameness over equal token counts.

    A race stopped or cut short leaves its lanes at different token counts, and comparing 62
    tokens with 74 would claim a difference that is not there; so both the speed-up and the
    lossless check are taken over the tokens every lane reached (`compared_tokens`).
    """

    traces: dict[str, RunTrace]
    stats: dict[str, LaneStats]
    # lane -> x vs vanilla, over compared_tokens; empty when too few tokens to compare (`comparable`)
    speedups: dict[str, float] = field(default_factory=dict)
    lossless: bool = True  # every lane's first compared_tokens tokens equal the vanilla lane's
    compared_tokens: int = 0  # the token count every lane reached
    complete: bool = True  # every lane ran to its end (EOS or the token budget)
    partings: dict[str, Parting] = field(default_factory=dict)  # lane -> where its output parts from vanilla's

    @property
    def comparable(self) -> bool:
        """Whether the lanes reached enough tokens for their speed to be compared at all."""
        return self.compared_tokens >= MIN_COMPARED_TOKENS

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
    """Compute-clock seconds (prefill and steps, measuring included) until the lane had committed
    at least `n` tokens.

    A step that overshoots `n` is counted whole, so a lane that commits several tokens a
    step is never credited with more speed than it showed.
    """
    t, got = trace.prefill_seconds, 0
    for s in trace.steps:
        if got >= n:
            break
        t += s.clock_seconds
        got += len(s.tokens)
    return t if got >= n else None


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
    if not res.comparable:
        return res  # no speed-ups: too few tokens to say anything of speed
    base_s = seconds_to_reach(traces[baseline], n)
    for name, t in traces.items():
        lane_s = seconds_to_reach(t, n)
        res.speedups[name] = base_s / lane_s if base_s and lane_s else 0.0
    return res


def lane_order(methods: Iterable[str]) -> list[str]:
    """The requested methods in race order (vanilla first), without duplicates."""
    wanted = set(methods)
    return [m for m in race_order() if m in wanted]


RACE_FORMAT = "logitspec-race/1"
STOP_REASONS = ("stopped", "time limit")  # why a race ended before its lanes did (serve/race.py's RaceStopped)


@dataclass
class RaceFile:
    """What a race file holds: every lane's trace, the machine the race ran on ("" when unknown),
    and why it ended before its lanes did (None: it ran to its end); the verdict reads all three."""

    lanes: dict[str, RunTrace]
    machine: str = ""
    stop_reason: str | None = None


def save_race(traces: dict[str, RunTrace], path, machine: str = "", stop_reason: str | None = None) -> None:
    """Write a race (every lane's trace) as one JSON file, with the machine it ran on and, for a
    race stopped early, why."""
    import json
    from pathlib import Path

    data = {"format": RACE_FORMAT, "machine": machine,
            "lanes": {name: t.to_dict() for name, t in traces.items()}}
    if stop_reason is not None:
        data["stop_reason"] = stop_reason
    Path(path).write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def load_race(path, max_bytes: int | None = None, vocab_size: int | None = None) -> tuple[dict[str, RunTrace], str]:
    """The lanes of a trace or race file in race order, and its machine (see `read_race`)."""
    race = read_race(path, max_bytes, vocab_size)
    return race.lanes, race.machine


def read_race(path, max_bytes: int | None = None, vocab_size: int | None = None) -> RaceFile:
    """A race file written by `save_race`, its lanes in race order; a single-run trace file reads
    as a race of its one lane on no named machine. Any other file raises TraceFileError saying in
    one line what is wrong (see `read_json_file`)."""
    data = read_json_file(path, max_bytes)
    form = str(data.get("format", "")) if isinstance(data, dict) else ""
    if not form.startswith("logitspec-race/"):
        trace = trace_from_data(data, vocab_size)
        return RaceFile({trace.method: trace})
    if form != RACE_FORMAT:
        raise TraceFileError(f"this race recording's format {form} is unknown; this version reads {RACE_FORMAT}")
    named = data.get("lanes")
    if not isinstance(named, dict) or not lane_order(named):
        raise TraceFileError(f"this race recording holds none of the lanes {', '.join(race_order())}")
    reason = data.get("stop_reason")
    if reason is not None and reason not in STOP_REASONS:
        raise TraceFileError(f"this race recording's stop_reason is none of {', '.join(STOP_REASONS)}")
    lanes = {}
    for name in lane_order(named):
        try:
            lanes[name] = trace_from_data(named[name], vocab_size)
        except TraceFileError as e:
            raise TraceFileError(f"this race recording's {name} lane: {e}") from None
    return RaceFile(lanes, str(data.get("machine", "")), reason)

"""The race: decoder lanes interleaved step by step, each on its own measured compute clock.

Every lane is a stream of StepRecords (one per forward pass). The race takes one record
from each lane in turn, so the lanes share the machine fairly and progress side by side,
while each lane's clock adds up only its own measured prefill and step seconds. Nothing
here is simulated: the times are the ones the decoders measured. The race's record (counters,
speed-ups, the race file) is logitspec/analysis/race.py, which the figures read.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logitspec.analysis.lanes import lane_run
from logitspec.analysis.race import lane_order
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace, StepRecord

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
class RaceUpdate:
    """What changed: the lane that just stepped and its step (the lanes' traces hold the rest)."""

    lane: str
    step: StepRecord


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



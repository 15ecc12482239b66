"""Race lanes that replay recorded traces step by step, so race tests need no model."""
from __future__ import annotations

from collections.abc import Iterator

from serve.race import Lane
from logitspec.analysis.race import lane_order
from logitspec.core.trace import RunTrace, StepRecord


def replay_lanes(traces: dict[str, RunTrace]) -> list[Lane]:
    """Lanes that replay finished traces step by step (to show a saved race again)."""
    lanes = []
    for name in lane_order(traces):
        src = traces[name]
        fresh = RunTrace(**{**{f: getattr(src, f) for f in src.__dataclass_fields__}, "steps": []})
        lanes.append(Lane(name, fresh, _appending(fresh, src.steps)))
    return lanes


def _appending(trace: RunTrace, steps: list[StepRecord]) -> Iterator[StepRecord]:
    for s in steps:
        trace.steps.append(s)
        yield s


def replayed_race(traces: dict[str, RunTrace], stop_after: int | None = None):
    """A race's view after replaying `traces` step by step as the app interleaves its lanes; cut
    after `stop_after` steps of all lanes together when given, as Stop cuts it (its stop_reason set)."""
    from serve.race import RaceStopped, interleave
    from ui.view import View

    lanes = replay_lanes(traces)
    view = View(traces={ln.name: ln.trace for ln in lanes}, lane="logitspec", source="run on the bundled model")
    taken = []
    try:
        for u in interleave(lanes, should_stop=lambda: stop_after is not None and len(taken) >= stop_after):
            taken.append(u)
    except RaceStopped as e:
        view.stop_reason = e.reason
    return view

"""Step drawings kept and drawn ahead (ui/drawings.py): drawn once, drawn ahead only while no race
wants the cores, the oldest let go, and a drawing that failed ahead fails where it is asked for."""
from __future__ import annotations

import time

import pytest

from logitspec.core.trace import RunTrace
from helpers.paths import ROOT
from ui.drawings import Drawings, trace_key


class Counter:
    def __init__(self, value="drawn", fail: bool = False) -> None:
        self.calls, self.value, self.fail = 0, value, fail

    def __call__(self):
        self.calls += 1
        if self.fail:
            raise ValueError("cannot draw")
        return self.value


def _settle(d: Drawings, key, timeout: float = 5.0) -> None:
    t0 = time.monotonic()
    while key in d._pending and time.monotonic() - t0 < timeout:
        time.sleep(0.01)


def test_a_drawing_is_made_once_and_kept():
    d, draw = Drawings(), Counter()
    assert d.get("a", draw) == "drawn" and d.get("a", draw) == "drawn"
    assert draw.calls == 1


def test_drawn_ahead_then_served_without_drawing_again():
    d, draw = Drawings(), Counter()
    d.ahead("next", draw)
    _settle(d, "next")
    assert d.get("next", Counter("other")) == "drawn" and draw.calls == 1


def test_nothing_is_drawn_ahead_while_a_race_wants_the_cores():
    d, draw = Drawings(idle=lambda: False), Counter()
    d.ahead("next", draw)
    _settle(d, "next")
    assert draw.calls == 0 and len(d) == 0
    assert d.get("next", draw) == "drawn" and draw.calls == 1  # asked for: drawn there and then


def test_the_oldest_drawings_are_let_go():
    d = Drawings(keep=3)
    for k in "abcd":
        d.get(k, Counter(k))
    again = Counter("a2")
    assert d.get("a", again) == "a2" and again.calls == 1
    assert d.get("d", Counter("never")) == "d"


def test_a_drawing_that_failed_ahead_fails_where_it_is_asked_for():
    d = Drawings()
    d.ahead("bad", Counter(fail=True))
    _settle(d, "bad")
    with pytest.raises(ValueError, match="cannot draw"):
        d.get("bad", Counter(fail=True))


def test_a_run_that_grows_gets_new_drawings():
    trace = RunTrace.load(ROOT / "traces" / "coding-122.json")
    key = trace_key(trace)
    shorter = RunTrace(**{**trace.__dict__, "steps": trace.steps[:-1]})
    fewer_texts = RunTrace(**{**trace.__dict__, "token_texts": dict(list(trace.token_texts.items())[:-1])})
    assert len({key, trace_key(shorter), trace_key(fewer_texts)}) == 3
    assert trace_key(RunTrace.load(ROOT / "traces" / "coding-122.json")) == key  # the same run, read again

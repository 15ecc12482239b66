"""The lesson's sixth stage (visual/lesson_pays.py) and the break-even line of "Where it pays"
(visual/pays.py): the numbers recomputed here from the trace, and from the curve file read as
plain JSON, on a race whose pass times are set to a known cost per row."""
from __future__ import annotations

import bisect
import copy
import html
import json
import re
from types import SimpleNamespace

import pytest

from helpers.paths import ROOT
from logitspec.analysis.lanes import label
from logitspec.analysis.pays import read_pass_costs
from logitspec.analysis.race import load_race
from ui.race import RaceTab
from ui.view import View
from visual.lesson import lesson, lesson_step
from visual.pays import TREE_ROWS, break_even_html
from visual.style import PALETTE

H200 = ROOT / "data" / "pass_costs" / "nvidia-h200.json"
RACE = ROOT / "traces" / "races" / "summarization-242.json"
STATIC_RACE = ROOT / "traces" / "gallery" / "coding-121.json.gz"  # every lane, the paper's tree among them
MS_PER_ROW = 10.0  # the set cost: a pass of n rows takes n times a one-token pass


def _plain(text: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))).replace(" ,", ",").replace(" .", ".")


def _rows(s) -> int:
    return max(1, sum(not n.pruned for n in s.tree))


def _h200(rows: float, dtype: str = "float32") -> float:
    """c(rows)/c(1) on the H200, interpolated by hand from the file's c_ms."""
    row = next(r for r in json.loads(H200.read_text())["curves"] if r["dtype"] == dtype)
    xs = sorted(int(n) for n in row["c_ms"])
    ys = [row["c_ms"][str(n)] for n in xs]
    i = min(bisect.bisect_left(xs, rows), len(xs) - 1)
    c = ys[i] if xs[i] == rows or i == 0 else ys[i - 1] + (ys[i] - ys[i - 1]) * (rows - xs[i - 1]) / (xs[i] - xs[i - 1])
    return c / ys[0]


def _timed(lanes: dict, ms_per_row: float = MS_PER_ROW) -> dict:
    """The race with every pass timed at ms_per_row per row: here c(n)/c(1) = n exactly."""
    out = copy.deepcopy(lanes)
    for t in out.values():
        for s in t.steps:
            if s.forward:
                s.forward_seconds = ms_per_row * _rows(s) / 1e3
    return out


@pytest.fixture(scope="module")
def race():
    return _timed(load_race(RACE)[0])


def _stage(t, **kw) -> tuple[str, object]:
    st = next(st for st in lesson(t, **kw) if st.key == "pays")
    return _plain(st.html), st.figure


def test_the_step_is_priced_on_its_own_costs_and_the_h200s(race):
    t = race["logitspec"]
    i = lesson_step(t)
    s = t.steps[i]
    rows, wrote = _rows(s), len(s.tokens)
    said, fig = _stage(t, lanes=race, curves=read_pass_costs(H200))
    here, gpu = float(rows), _h200(rows)  # a pass costs `rows` one-token passes here, by construction
    assert rows > wrote > gpu  # so it loses time here and wins on the H200
    assert f"Step {i}'s forward pass read {rows} rows" in said and f"wrote {wrote} tokens" in said, said
    assert f"it cost {here:.2f} where this run ran, so it did not pay; {gpu:.2f} on the NVIDIA H200, so it paid" in said
    assert "pay on the NVIDIA H200, not where this run ran" in said and "A GPU" in said, said
    bars = fig.data[0]
    assert list(bars.x) == pytest.approx([wrote, here, gpu])
    assert list(bars.marker.color) == [PALETTE["accepted"], PALETTE["rejected"], PALETTE["accepted"]]


def test_the_whole_run_is_priced_as_its_passes_and_drafting_add_up(race):
    def per_token_ms(t, cost) -> float:
        passes = sum(cost(_rows(s)) for s in t.steps if s.forward)
        drafting = 1e3 * sum(s.draft_seconds + s.bookkeeping_seconds for s in t.steps)
        return (passes + drafting) / len(t.tokens)

    t, van = race["logitspec"], race["vanilla"]
    c1 = json.loads(H200.read_text())["curves"][0]["c_ms"]["1"]
    gpu = per_token_ms(van, lambda n: c1 * _h200(n)) / per_token_ms(t, lambda n: c1 * _h200(n))
    here = per_token_ms(van, lambda n: MS_PER_ROW * n) / per_token_ms(t, lambda n: MS_PER_ROW * n)
    measured = (van.decode_seconds / len(van.tokens)) / (t.decode_seconds / len(t.tokens))
    said, _ = _stage(t, lanes=race, curves=read_pass_costs(H200))
    assert (f"Over the whole run, priced the same way: {here:.2f}× where it ran, {gpu:.2f}× on the NVIDIA H200 "
            f"({measured:.2f}× measured)") in said, said


def test_a_missing_curve_is_said_plainly(race):
    untimed = copy.deepcopy(race["logitspec"])
    for s in untimed.steps:
        s.forward_seconds = 0.0
    said, fig = _stage(untimed)
    assert "The machine this run ran on has no measured costs: no one-token pass of it was timed" in said
    assert "No other machine's measured costs are at hand" in said
    assert len(fig.data[0].x) == 1  # the tokens written, and no cost to set beside them
    other = [c for c in read_pass_costs(H200) if c.dtype == "bfloat16"]
    said, _ = _stage(race["logitspec"], lanes=race, curves=other)
    assert "No other machine's costs were measured in float32" in said and "where this run ran" in said


@pytest.mark.parametrize("rows", TREE_ROWS)
def test_the_break_even_line_is_each_curves_cost_of_that_tree(race, rows):
    said = _plain(break_even_html(race, read_pass_costs(H200), rows))
    largest = max(_rows(s) for t in race.values() for s in t.steps if s.forward)
    assert f"A tree of {rows} row" in said
    assert f"{_h200(rows):.2f} on the NVIDIA H200" in said, said
    if rows <= largest:
        assert f"{float(rows):.2f} in this race" in said, said
    else:
        assert f"In this race no pass of {rows} rows was measured (the largest: {largest})" in said, said


def test_the_break_even_line_names_the_lanes_of_that_size():
    lanes = load_race(STATIC_RACE)[0]
    static = lanes["logitspec-static"]
    said = _plain(break_even_html(lanes, read_pass_costs(H200), 64))
    per_pass = len(static.tokens) / static.forward_steps
    assert f"{label('logitspec-static', static)}: {per_pass:.2f} tokens a pass" in said, said
    assert "Passes about this size in this race" not in _plain(break_even_html(lanes, read_pass_costs(H200), 1))


def test_the_folds_control_redraws_the_line_for_the_race_on_screen(race):
    tab = SimpleNamespace(pass_costs=read_pass_costs(H200))
    view = View(traces=race)
    assert RaceTab.break_even_line(tab, 32, view) == break_even_html(race, tab.pass_costs, 32)
    view.racing = True  # the live race's redraws wait for its end
    assert not isinstance(RaceTab.break_even_line(tab, 32, view), str)

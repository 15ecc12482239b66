"""After Stop every speed-up on the page is the ratio of the tokens/s shown beside it: the race
table, the verdict and the race figure's labels; where they compare fewer tokens than the lanes
made, the column header (or the label) says how many."""
from __future__ import annotations

import dataclasses
import re

import pytest

from helpers.paths import ROOT
from logitspec.analysis.race import load_race, result_of
from visual.race import race_figure
from visual.verdict import compared_rates, counters_html, verdict_text
from logitspec.analysis.lanes import label


def _stopped() -> dict:
    """The recorded race as if stopped: vanilla after 40 steps, every other lane further on."""
    lanes, _ = load_race(ROOT / "traces" / "races" / "summarization-242.json")
    keep = {name: 40 if name == "vanilla" else 30 for name in lanes}
    return {name: dataclasses.replace(t, steps=t.steps[:keep[name]]) for name, t in lanes.items()}


def _cells(html_text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The header's texts, and each row's cell texts by its lane's key (the row's data-lane)."""
    head = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<th>(.*?)</th>", html_text)]
    rows = {key: [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", r)]
            for key, r in re.findall(r"<tr data-lane='([^']+)'>(.*?)</tr>", html_text)}
    return head, rows


def test_the_table_after_stop_shows_the_rates_its_speed_ups_divide():
    lanes = _stopped()
    res = result_of(lanes)
    n = res.compared_tokens
    assert len({len(t.tokens) for t in lanes.values()}) > 1 and n < max(len(t.tokens) for t in lanes.values())
    head, rows = _cells(counters_html(lanes, False, stop_reason="stopped"))
    assert head[-1] == f"speed-up, first {n} tokens" and head[-2] == f"tokens / s, first {n} tokens", head
    by_lane = rows
    van = float(by_lane["vanilla"][-2])
    for name, r in by_lane.items():
        if name == "vanilla":
            continue
        rate, sp = float(r[-2]), float(r[-1].rstrip("×"))
        assert abs(rate / van - sp) <= 0.01 + 0.05 * sp / van, (name, rate, van, sp)  # the shown digits' rounding
        assert sp == pytest.approx(compared_rates(res)[name] / compared_rates(res)["vanilla"], abs=0.006)


def test_a_whole_race_keeps_one_rate_column_and_its_ratio_is_the_speed_up():
    lanes, _ = load_race(ROOT / "traces" / "races" / "summarization-242.json")
    head, rows = _cells(counters_html(lanes, False))
    assert head[-1] == "speed-up" and head.count("tokens / s") == 1, head
    res = result_of(lanes)
    rates = compared_rates(res)
    assert set(rows) == set(lanes), rows
    for name, r in rows.items():
        assert r[0].endswith(label(name))  # the lane table's label, after its colour's swatch
        assert float(r[4]) == pytest.approx(rates[name], abs=0.051), (name, r)


def test_the_verdict_and_the_figure_name_the_rates_of_a_stopped_race():
    lanes = _stopped()
    res = result_of(lanes)
    rates = compared_rates(res)
    said = verdict_text(res, "stopped")
    assert f"({rates['logitspec']:.1f} against {rates['vanilla']:.1f} tokens/s)" in said, said
    fig = race_figure(lanes, stopped=True, fit=True)
    labels = [t.name for t in fig.data if t.name and "vanilla's speed" in t.name]
    assert labels and all(f"over the first {res.compared_tokens} tokens:" in x for x in labels), labels

"""The compute clock counts every second a lane spent for its tokens, the one-off measuring of the
machine's pass costs included, and every place that shows a time without it names it."""
from __future__ import annotations

import pytest

from helpers.paths import FIXTURES
from logitspec.analysis.race import load_race, result_of, seconds_to_reach
from visual.text import step_summary_md
from visual.verdict import counters_html, verdict_text

FOUR_LANES = FIXTURES / "races" / "summarization-242-four-lanes.json"  # LogitSpec measured c(n) in this race


@pytest.fixture(scope="module")
def four():
    return load_race(FOUR_LANES)[0]


def test_the_recording_measured_inside_its_steps(four):
    t = four["logitspec"]
    assert t.calibration_seconds > 1.0  # what the rest of this file is about
    assert t.clock_seconds == pytest.approx(t.seconds + t.calibration_seconds)


def test_the_speed_up_and_the_table_count_the_measuring(four):
    res = result_of(four)
    t, van = four["logitspec"], four["vanilla"]
    assert res.stats["logitspec"].seconds == pytest.approx(t.clock_seconds)
    n = res.compared_tokens
    want = seconds_to_reach(van, n) / seconds_to_reach(t, n)
    assert res.speedups["logitspec"] == pytest.approx(want)
    assert seconds_to_reach(t, n) == pytest.approx(t.clock_seconds)  # every step, measuring and all
    assert f"<td>{t.clock_seconds:.2f} s</td>" in counters_html(four, False)


def test_the_verdict_and_the_step_name_the_measuring_and_its_seconds(four):
    t = four["logitspec"]
    note = counters_html(four, False).split("<p class='race-note'>")[1]  # under the verdict
    assert "include the one-off measuring" in note and f"{t.calibration_seconds:.2f} s" in note
    assert "measuring" not in verdict_text(result_of(four))  # the verdict itself stays short for a phone
    i = next(i for i, s in enumerate(t.steps) if s.calibration_seconds > 0)
    summary = step_summary_md(t, i)
    assert f"{t.steps[i].calibration_seconds:.2f} s measuring" in summary
    j = next(i for i, s in enumerate(t.steps) if s.forward and s.calibration_seconds == 0)
    assert "measuring" not in step_summary_md(t, j)


def test_a_recorded_race_names_the_measuring_of_its_own_machine_not_this_one(four):
    """A race read from a file measured where it ran: its note never says "this machine's" beside
    "A recorded race on <machine>"."""
    live = counters_html(four, False).split("<p class='race-note'>")[1]
    recorded = counters_html(four, False, "A recorded race on AMD EPYC, 2 cores; not live.",
                             recorded_on="AMD EPYC, 2 cores").split("<p class='race-note'>")[1]
    assert "measuring of this machine's pass costs" in live
    assert "this machine" not in recorded and "measuring of its machine's pass costs" in recorded

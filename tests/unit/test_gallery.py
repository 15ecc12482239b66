"""Where each method wins (logitspec/analysis/gallery.py): every recorded race's winner and its
sentence, recomputed from the traces: the winner has the most tokens per pass, and each number the
sentence says is counted again here."""
from __future__ import annotations

import copy
import re

import pytest

from helpers.paths import FIXTURES, ROOT
from logitspec.analysis.gallery import g2_kept, showcase
from logitspec.analysis.lanes import label
from logitspec.analysis.race import load_race, result_of
from logitspec.core.trace import G2_RESCUED

RACES = sorted((ROOT / "traces" / "gallery").glob("*.json.gz")) + sorted((FIXTURES / "races").glob("*.json")) \
    + [ROOT / "traces" / "races" / "summarization-242.json"]


def _per_pass(t) -> float:
    """Every token the lane wrote over its forward passes: the results table's tokens per pass."""
    return len([tok for s in t.steps for tok in s.tokens]) / sum(s.forward for s in t.steps)


@pytest.mark.parametrize("path", RACES, ids=lambda p: p.name.split(".")[0])
def test_the_winner_and_every_number_of_its_sentence_come_from_the_traces(path):
    lanes, machine = load_race(path)
    shown = showcase(lanes, machine)
    rates = {n: _per_pass(t) for n, t in lanes.items() if n != "vanilla"}
    assert rates[shown.winner] == max(rates.values()), (shown, rates)
    t = lanes[shown.winner]
    assert f"{label(shown.winner, t)} ({rates[shown.winner]:.2f})" in shown.sentence, shown.sentence
    speeds = result_of(lanes).speedups
    if shown.kind == "none":
        assert all(v <= 1 for n, v in speeds.items() if n != "vanilla"), speeds
        return
    assert not speeds or any(v > 1 for n, v in speeds.items() if n != "vanilla"), (shown, speeds)
    fastest = max((n for n in speeds if n != "vanilla"), key=speeds.get)
    assert f"It ran at {speeds[shown.winner]:.2f}x vanilla's speed" in shown.sentence, shown.sentence
    assert (f"{speeds[fastest]:.2f}x" in shown.sentence) and (fastest == shown.winner or label(fastest, lanes[fastest])
                                                               in shown.sentence), shown.sentence
    steps = [s for s in t.steps if s.forward]
    if shown.kind == "next-next":
        kept = sum(any(n.origin == "g2" for n in s.tree if n.id in s.accepted_path[1:]) for s in steps)
        found = sum(s.outcome == G2_RESCUED for s in steps)
        assert f": {kept} of its {len(steps)} passes kept" in shown.sentence, shown.sentence
        assert f"at {found} where copying found nothing" in shown.sentence, shown.sentence
    else:
        best = max(len(s.tokens) - 1 for s in steps)
        assert re.search(rf"\b{best} draft tokens", shown.sentence), shown.sentence


def test_a_race_no_lane_won_says_why_from_its_passes(tmp_path):
    lanes, machine = load_race(FIXTURES / "races" / "summarization-242-four-lanes.json")
    slow = copy.deepcopy(lanes)
    for name, t in slow.items():  # every lane but vanilla made slower than vanilla
        if name != "vanilla":
            for s in t.steps:
                s.forward_seconds *= 40
    shown = showcase(slow, "a CPU")
    assert shown.kind == "none" and shown.sentence.startswith("No method beat vanilla's speed on a CPU"), shown
    assert "one-token passes" in shown.sentence or "drafting took" in shown.sentence, shown.sentence


def test_g2_kept_counts_the_accepted_tokens_a_next_next_guess_led_to():
    lanes, _ = load_race(ROOT / "traces" / "races" / "summarization-242.json")
    t = lanes["logitspec"]
    for s in t.steps:
        by_id = {n.id: n for n in s.tree}
        assert g2_kept(s) == sum(by_id[i].origin == "g2" for i in s.accepted_path[1:])
    assert sum(g2_kept(s) for s in t.steps) > 0

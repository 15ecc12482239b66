"""The rivals in the race: RACER and SuffixDecoding decode beside vanilla on a tiny model, through
the race's own lanes, greedy and sampled, with vanilla's output; their colours are their own, the
explorer draws where each node came from, and the debugger speaks of them in their own words."""
from __future__ import annotations

from dataclasses import replace

import pytest

from helpers.tiny_models import char_lm
from logitspec.analysis.lanes import label, race_order
from logitspec.analysis.race import result_of
from logitspec.core.settings import DecodeSettings
from serve.race import interleave, model_lanes
from visual.style import PALETTE, lane_color

PROMPT = "abcabcabc the cat sat on the mat, the cat sat on the mat, the cat"
RIVALS = ["racer", "suffix"]
ORIGINS = {"racer": ("automaton", "copied"), "suffix": ("prompt-tree", "output-tree")}


def race(lm, s: DecodeSettings) -> dict:
    lanes = model_lanes(lm, PROMPT, ["vanilla", "logitspec", *RIVALS], s)
    list(interleave(lanes))
    return {ln.name: ln.trace for ln in lanes}


@pytest.fixture(scope="module")
def raced():
    """A model of its own: SuffixDecoding's output tree is the model's, so another module's runs of this
    prompt on the session's tiny model would let it draft at every step."""
    from helpers.tiny_models import tiny_llama

    return race(char_lm(tiny_llama(seed=0)), DecodeSettings(max_new_tokens=32))


@pytest.mark.lossless
def test_the_rival_lanes_race_and_equal_vanilla(raced):
    assert set(RIVALS) <= set(race_order())
    for m in RIVALS:
        assert raced[m].method == m and raced[m].tokens == raced["vanilla"].tokens, m
    res = result_of(raced)
    assert res.lossless and res.complete and set(RIVALS) <= set(res.speedups)
    for m in RIVALS:  # each drafted from its own sources, and some drafts were accepted
        drawn = {n.origin for s in raced[m].steps for n in s.tree}
        assert drawn & set(ORIGINS[m]) and drawn <= {"root", *ORIGINS[m]}, (m, drawn)
        assert any(len(s.tokens) > 1 for s in raced[m].steps), m


@pytest.mark.lossless
def test_the_rival_lanes_sampled_equal_vanilla_sampled(tiny_llama):
    traces = race(char_lm(tiny_llama), DecodeSettings(max_new_tokens=24, temperature=0.8, seed=7))
    for m in RIVALS:
        assert traces[m].tokens == traces["vanilla"].tokens, m


def test_the_rival_lanes_have_their_own_colours_and_labels(raced):
    colours = {m: lane_color(m, raced[m].method) for m in raced}
    assert len(set(colours.values())) == len(colours)
    assert label("racer", raced["racer"]) == "RACER (cost tree)" and label("suffix") == "SuffixDecoding (tree)"
    assert label("suffix", raced["suffix"]) == "SuffixDecoding (tree)" and DecodeSettings().suffix_tree
    chain = replace(raced["suffix"], settings={**raced["suffix"].settings, "suffix_tree": False})
    assert label("suffix", chain) == "SuffixDecoding (chain)"  # a run that drafted chains is named so


def test_the_explorer_draws_where_each_rival_node_came_from(raced):
    from visual.tree import tree_figure
    from visual.tree_key import LEGEND_NAMES
    from visual.tree_layout import ORIGIN_WORDS

    for lane in RIVALS:
        trace, drawn = raced[lane], 0
        for origin in ORIGINS[lane]:
            step = next((i for i, s in enumerate(trace.steps) if any(n.origin == origin for n in s.tree)), None)
            if step is None:
                continue  # this text gave the other source every draft
            fig = tree_figure(trace, step)
            assert any(PALETTE[origin] in (sh.fillcolor, sh.line.color) for sh in fig.layout.shapes), origin
            hovers = " ".join(str(t.hovertext or t.text or "") for t in fig.data)
            assert ORIGIN_WORDS[origin].split(":")[0] in hovers, origin
            assert any(LEGEND_NAMES[origin] == t.name for t in fig.data), origin
            drawn += 1
        assert drawn, lane


def test_the_debugger_speaks_of_the_rivals_in_their_words(raced):
    from visual.method_words import lookup_line, words_of
    from visual.debug_table import debugger_rows

    for lane, name in (("racer", "RACER"), ("suffix", "SuffixDecoding")):
        assert words_of(lane).name == name and name in words_of(lane).intro
        rows = debugger_rows(raced[lane], None)
        assert len(rows) == sum(s.forward for s in raced[lane].steps), lane  # every pass listed
        assert all(lookup_line(raced[lane], s, []).startswith(f"{name}: ") for s in raced[lane].steps if s.forward)
        assert all(r["lookup"] for r in rows), lane  # each row says what its sources found


def race_racer_without_zero_rows():
    """RACER alone, a token with no row offering no children (racer_unseen_rows="none"): steps that draft nothing."""
    from helpers.tiny_models import tiny_llama

    lanes = model_lanes(char_lm(tiny_llama(seed=0)), PROMPT, ["racer"], DecodeSettings(max_new_tokens=32,
                                                                                          racer_unseen_rows="none"))
    list(interleave(lanes))
    return lanes[0].trace


def test_a_rival_step_says_what_its_sources_found_and_why_it_drafted_nothing(raced):
    from logitspec.core.trace import RunTrace
    from visual.data import context_before
    from visual.method_words import lookup_line
    from visual.retrieval import retrieval_html
    from visual.text import step_summary_md

    for lane in RIVALS:
        trace = raced[lane]
        assert RunTrace.from_json(trace.to_json()).steps == trace.steps  # the sources' findings round-trip
        found = [s for s in trace.steps if s.forward]
        assert all([lk.source for lk in s.lookups] == list(ORIGINS[lane])
                   for s in found), lane
        # Each step that drafted nodes of a source saw that source offer them; one that drafted none says why.
        for s in found:
            drawn = {n.origin for n in s.tree if n.depth and not n.pruned}
            assert drawn <= {lk.source for lk in s.lookups if lk.offered}, (lane, s.index)
        if lane == "racer":  # a token never run on reads the reference's zero row: the copied logits always offer
            assert all(s.lookups[1].offered for s in found)
            trace = race_racer_without_zero_rows()
        empty = next(i for i, s in enumerate(trace.steps) if s.forward and len(s.tree) == 1)
        said = lookup_line(trace, trace.steps[empty], context_before(trace, empty))
        assert "nothing drafted: no source offered a node" in said, said
        assert "no query to miss" not in said and "g1" not in said  # its own words, not LogitSpec's
        shown = retrieval_html(trace, empty)
        assert "nothing drafted" in shown and "this decoder does no lookups" not in shown
        assert "nothing drafted" in step_summary_md(trace, empty)
    first = raced["racer"].steps[0]
    assert [lk.matched for lk in first.lookups] == [0, 0]  # no n-gram of x_{i+1} yet, no pass on it yet
    assert "no pass has run on x_{i+1} yet" in lookup_line(raced["racer"], first, [])
    tried = next(s for s in raced["suffix"].steps if len(s.tree) > 1)
    origin = tried.tree[1].origin  # the better tree's draft is verified whole
    assert len(tried.tree) - 1 == next(lk.offered for lk in tried.lookups if lk.source == origin)

"""The Explain walkthrough: the step chooser's rule and fallbacks, and each panel's sentences
held to the trace's own numbers, read here straight off the records."""
from __future__ import annotations

import dataclasses

import pytest

from helpers.paths import TRACE_FIXTURES
from logitspec.core.trace import RunTrace
from visual.explain import walkthrough
from visual.explain_words import TITLES, choose_step, sentences


@pytest.fixture(scope="module")
def traces() -> dict[str, RunTrace]:
    return {name: RunTrace.load(p) for name, p in TRACE_FIXTURES.items()}


def _rescued(step) -> bool:
    """g1 found nothing and some g2 query found a continuation."""
    g1 = [q for q in step.queries if q.kind == "g1"]
    return bool(g1) and not g1[0].matched_n and any(q.matched_n for q in step.queries if q.kind == "g2")


def test_the_chooser_takes_a_g2_rescue_that_accepted_three_or_more(traces):
    t = traces["writing-81"]
    want = [i for i, s in enumerate(t.steps) if s.forward and _rescued(s) and len(s.tokens) >= 3]
    assert want, "the fixture has a step that meets the rule"
    choice = choose_step(t)
    assert choice.preferred and choice.step in want
    assert len(t.steps[choice.step].tokens) == max(len(t.steps[i].tokens) for i in want)
    assert "g2" in choice.rule and "≥ 3" in choice.rule


def test_the_chooser_falls_back_and_says_so(traces):
    t = traces["summarization-241"]
    assert not any(s.forward and _rescued(s) and len(s.tokens) >= 3 for s in t.steps)
    choice = choose_step(t)
    assert not choice.preferred and "no step met the rule" in choice.rule
    rescued = [i for i, s in enumerate(t.steps) if s.forward and _rescued(s) and len(s.tokens) >= 2]
    assert choice.step in rescued

    # No g2 rescue at all: the step that accepted the most tokens.
    plain = dataclasses.replace(t, steps=[s for s in t.steps if not _rescued(s)])
    choice = choose_step(plain)
    assert not choice.preferred and "never rescued" in choice.rule
    assert len(plain.steps[choice.step].tokens) == max(len(s.tokens) for s in plain.steps)


def _context_len(t: RunTrace, i: int) -> int:
    return len(t.prompt_tokens) + sum(len(s.tokens) for s in t.steps[:i])


def _check_sentences(t: RunTrace, i: int) -> None:
    s = t.steps[i]
    said = sentences(t, i)
    assert set(said) == set(TITLES) and all(len(v) == 2 and all(v) for v in said.values())
    # 1 · the logits: the root's probability, and where the true next-next token ranked.
    truth = s.tokens[1] if len(s.tokens) > 1 else s.bonus
    rank = next((c.rank for c in s.candidates if c.token == truth), None)
    assert f"(probability {s.root_prob:.3g})" in said["logits"][0] and f"step {i}" in said["logits"][0]
    assert f"The {len(s.candidates)} most likely other tokens" in said["logits"][1]
    if rank:
        prob = next(c.prob for c in s.candidates if c.rank == rank)
        assert f"was guess {rank} (probability {prob:.3g})" in said["logits"][1]
    else:
        assert "was not among them" in said["logits"][1]
    # 2 · g1: where it matched, or that nothing matched in a context of this length.
    g1 = next(q for q in s.queries if q.kind == "g1")
    if g1.matched_n:
        assert f"{g1.matched_n}-gram" in said["g1"][0] and f"position {g1.match_pos} " in said["g1"][0]
        assert f"{len(g1.continuation)} token" in said["g1"][1]
    else:
        assert f"none had occurred earlier in the {_context_len(t, i)}-token context" in said["g1"][0]
    # 3 · g2 for the right guess.
    if rank:
        q = next(q for q in s.queries if q.kind == "g2" and q.candidate_rank == rank)
        assert f"(rank {rank})" in said["g2"][0]
        assert (f"matched at position {q.match_pos}" in said["g2"][0]) if q.matched_n else ("none had occurred" in said["g2"][0])
    else:
        assert "was not among the" in said["g2"][0]
    # 4 · pruning, 5 · verification, 6 · what was committed.
    verified = sum(not n.pruned for n in s.tree)
    assert f"kept {verified} of the " in said["tree"][1]
    assert f"all {verified} verified token" in said["verify"][0] and f"{s.context_len}-token cache" in said["verify"][0]
    if len(s.tokens) > 1:
        assert f"matched a drafted token {len(s.tokens) - 1} time" in said["verify"][1]
    assert f"committed {len(s.tokens)} token" in said["accept"][0]
    if s.bonus is not None:
        assert f"root of step {i + 1}" in said["accept"][1]


def test_sentences_say_the_steps_own_numbers(traces):
    checked = 0
    for t in traces.values():
        picks = {choose_step(t).step, 0, max(range(len(t.steps) - 1), key=lambda j: len(t.steps[j].tokens))}
        for i in sorted(picks):
            _check_sentences(t, i)
            checked += 1
    assert checked >= 6


def test_the_tree_sentence_counts_the_merged_trie(traces):
    t = traces["summarization-241"]
    s = t.steps[4]
    cands = {c.rank: c.token for c in s.candidates}
    chains = [([cands[q.candidate_rank]] if q.kind == "g2" else []) + list(q.continuation) for q in s.queries]
    fetched = sum(len(c) for c in chains)
    nodes = 1 + len({tuple(c[:j]) for c in chains for j in range(1, len(c) + 1)})
    first, second = sentences(t, 4)["tree"]
    assert f"hold {fetched} draft tokens in all; merged under the root into a trie they make {nodes} nodes" in first
    assert f"saving {fetched - (nodes - 1)}" in first and fetched > nodes - 1
    assert f"of the {nodes} for the one forward pass and cut {nodes - sum(not n.pruned for n in s.tree)}" in second


def test_the_walkthrough_has_six_panels_with_figures(traces):
    t = traces["writing-81"]
    panels = walkthrough(t, choose_step(t).step)
    assert [p.key for p in panels] == list(TITLES)
    for p in panels:
        assert p.figure is not None and len(p.figure.data) > 0, p.key


def test_the_g2_panels_title_agrees_with_its_words_when_no_guess_was_right(traces):
    t = traces["coding-121"]

    def right(s) -> bool:
        truth = s.tokens[1] if len(s.tokens) > 1 else s.bonus
        return truth is not None and any(c.token == truth for c in s.candidates)

    for want in (True, False):  # a step whose true x_{i+2} was a guess, and one where it was not
        i = next(i for i, s in enumerate(t.steps) if s.forward and right(s) == want)
        g2 = next(p for p in walkthrough(t, i) if p.key == "g2")
        says_none = "was not among" in g2.sentences[0]
        assert says_none != want and ("the guess that was right" in g2.title) == want, (i, g2.title, g2.sentences)

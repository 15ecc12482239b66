"""Numbers, text and tables drawn from the traces, checked against counts made here."""
from __future__ import annotations

import copy
import dataclasses
import html
import re
import subprocess
import sys
from collections import Counter

import pytest
from helpers.figures import FIXTURE_NAMES, load, trace_named, true_next_next
from helpers.paths import ROOT

import visual
from visual import (
    ACCEPT_COLORS,
    PALETTE,
    PLOT_CONFIG,
    accepted_hist_figure,
    candidates_figure,
    failure_rows,
    race_figure,
    retrieval_html,
    retrieval_outcomes,
    retrieval_success_figure,
    span_steps,
    step_summary_md,
    text_spans,
    time_breakdown_figure,
    topk_hit_curve,
    topk_hit_figure,
)
from logitspec.analysis.lanes import label
from logitspec.core.trace import RunTrace, StepRecord, TreeNode


def test_visual_never_imports_torch():
    code = "import sys, visual; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_public_names_and_palette():
    for key in ("root", "g1", "g2", "pld", "accepted", "rejected", "pruned", "vanilla", "logitspec",
                "logitspec-static"):
        assert re.fullmatch(r"#[0-9A-Fa-f]{6}", PALETTE[key])
    assert PLOT_CONFIG["toImageButtonOptions"]["format"] == "png"
    assert set(ACCEPT_COLORS) == {"1", "2", "3", "4+"}
    for name in visual.__all__:
        assert hasattr(visual, name)


# --- the paper's observation: x_{i+2} among the top-k -------------------------------------

@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_hit_curve_is_monotone_and_matches_a_count(name):
    tr = load(name)
    curve = topk_hit_curve(tr)
    K = len(curve)
    assert K == tr.settings["k"]
    assert all(0 <= a <= b <= 1 for a, b in zip(curve, curve[1:]))
    # Count independently: steps with candidates whose true next-next token is among them.
    hits = total = 0
    hits_at_5 = 0
    for i, s in enumerate(tr.steps):
        if not s.forward or not s.candidates:
            continue
        truth = true_next_next(tr, i)
        if truth is None:
            continue
        total += 1
        ranks = {c.token: c.rank for c in s.candidates}
        hits += truth in ranks
        hits_at_5 += truth in ranks and ranks[truth] <= 5
    assert total > 30
    assert curve[-1] == pytest.approx(hits / total)
    assert curve[4] == pytest.approx(hits_at_5 / total)
    assert topk_hit_curve(tr, K=5) == curve[:5]
    fig = topk_hit_figure(tr)
    line = trace_named(fig, "this run")
    assert list(line.y) == pytest.approx([100 * v for v in curve])
    assert any("60" in (t.name or "") for t in fig.data)  # the paper's reference point


# --- retrieval outcomes ------------------------------------------------------------------

@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_failure_rows_and_outcomes_match_a_count(name):
    tr = load(name)
    want = Counter()
    for s in tr.steps:
        if not s.forward:
            continue
        g1 = s.queries[0]
        assert g1.kind == "g1"
        if g1.matched_n is not None:
            want["g1 matched"] += 1
        elif any(q.matched_n is not None for q in s.queries[1:]):
            want["g2 rescued"] += 1
        else:
            want["both failed"] += 1
    rows = failure_rows(tr)
    assert Counter(r["outcome"] for r in rows) == want
    assert Counter(retrieval_outcomes(tr)) == want
    assert len(rows) == tr.forward_steps
    for r in rows:
        s = tr.steps[r["step"]]
        assert r["drafts accepted"] == len(s.tokens) - 1
        assert r["g2 matches"] == sum(q.matched_n is not None for q in s.queries if q.kind == "g2")
        assert r["matched n"] == s.queries[0].matched_n
        assert r["lookup"].count("-gram") == len(s.queries[0].attempts)
    fig = retrieval_success_figure(tr)
    bars = {t.name: t.x[0] for t in fig.data if t.type == "bar"}
    n = sum(want.values())
    assert bars["g1 alone (plain lookup)"] == pytest.approx(100 * want["g1 matched"] / n)
    assert bars["g1 or g2 (LogitSpec)"] == pytest.approx(100 * (want["g1 matched"] + want["g2 rescued"]) / n)


def test_the_failure_fixture_has_failures_and_rescues():
    outs = Counter(retrieval_outcomes(load("writing-81")))
    assert outs["both failed"] > 0 and outs["g2 rescued"] > outs["g1 matched"]


# --- generated text ----------------------------------------------------------------------

@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_text_spans_are_the_decoded_tokens_one_span_per_step(name):
    tr = load(name)
    spans = text_spans(tr)
    assert len(spans) == len(tr.steps)
    assert "".join(t for t, _ in spans) == "".join(tr.token_texts[str(t)] for t in tr.tokens)
    for (text, label), s in zip(spans, tr.steps):
        n = len(s.tokens)
        assert label == (str(n) if n < 4 else "4+")
        assert label in ACCEPT_COLORS
    steps = span_steps(tr)
    assert len(steps) == len(spans)
    assert all(tr.steps[i].tokens and spans[k][0] == "".join(tr.text_of(t) for t in tr.steps[i].tokens)
               for k, i in enumerate(steps))


# --- race --------------------------------------------------------------------------------

def _vanilla_like(tr: RunTrace, seconds_per_token: float) -> RunTrace:
    """A vanilla lane with the same output: one token per step."""
    steps = []
    toks = tr.tokens
    for i, t in enumerate(toks):
        last = i == len(toks) - 1
        steps.append(StepRecord(index=i, method="vanilla", context_len=len(tr.prompt_tokens) + i, root=t,
                                tokens=[t], bonus=None if last else toks[i + 1],
                                tree=[TreeNode(0, t, -1, 0, "root")], accepted_path=[0],
                                forward_seconds=0.0 if last else seconds_per_token, forward=not last))
    return RunTrace(method="vanilla", model=tr.model, prompt_text=tr.prompt_text, prompt_tokens=tr.prompt_tokens,
                    settings={}, steps=steps, prefill_seconds=tr.prefill_seconds, token_texts=tr.token_texts)


def test_race_ends_at_the_summed_compute_time_and_states_the_speedup():
    tr = load("summarization-241")
    total = tr.prefill_seconds + sum(s.draft_seconds + s.forward_seconds + s.bookkeeping_seconds + s.calibration_seconds
                                     for s in tr.steps)
    van = _vanilla_like(tr, 0.2)
    fig = race_figure({"vanilla": van, "logitspec": tr})
    line = trace_named(fig, label("logitspec", tr))
    assert line.x[-1] == pytest.approx(total)
    assert line.x[0] == pytest.approx(tr.prefill_seconds) and line.y[0] == 0
    assert line.y[-1] == len(tr.tokens)
    van_total = van.prefill_seconds + 0.2 * (len(tr.tokens) - 1)
    assert trace_named(fig, label("vanilla")).x[-1] == pytest.approx(van_total)
    speed = (len(tr.tokens) / total) / (len(tr.tokens) / van_total)
    texts = " ".join(a.text for a in fig.layout.annotations)
    assert f"{speed:.2f}× vanilla's speed" in texts
    # A lane still running gets no speed-up, and is drawn dotted.
    partial = copy.copy(tr)
    partial.steps = tr.steps[:10]
    fig = race_figure({"vanilla": van, "logitspec": partial})
    assert "× vanilla" not in " ".join(a.text for a in fig.layout.annotations)
    assert trace_named(fig, label("logitspec", tr)).line.dash == "dot"
    assert trace_named(fig, label("logitspec", tr)).y[-1] == sum(len(s.tokens) for s in tr.steps[:10])


# --- candidates, retrieval view, summary, other figures -----------------------------------

def test_candidates_figure_marks_g2_matches_and_the_true_next_next():
    tr = load("summarization-241")
    step = 31
    s = tr.steps[step]
    fig = candidates_figure(tr, step)
    bars = [t for t in fig.data if t.type == "bar" and t.x and t.x[0] is not None]
    by_rank = {}
    for b in bars:
        for x, y, text in zip(b.x, b.y, b.text):
            by_rank[x] = (y, text, b.name)
    assert sorted(by_rank) == [c.rank for c in s.candidates]
    g2 = {q.candidate_rank: q for q in s.queries if q.kind == "g2"}
    for c in s.candidates:
        y, text, group = by_rank[c.rank]
        assert y == pytest.approx(c.prob)
        n = g2[c.rank].matched_n
        assert text == (str(n) if n else "")
        assert group == (f"g2 matched a {n}-gram" if n else "g2 found no match")
    truth = true_next_next(tr, step)
    star = trace_named(fig, "the true x<sub>i+2</sub>")
    assert [by_rank[x][0] for x in star.x] == [c.prob for c in s.candidates if c.token == truth]
    # A decoder without candidates says so instead of drawing nothing.
    last = candidates_figure(tr, len(tr.steps) - 1)
    assert "no forward pass" in last.layout.annotations[0].text


def test_retrieval_html_shows_every_query_and_escapes_text():
    tr = load("writing-81")
    step = next(i for i, s in enumerate(tr.steps) if s.forward and s.queries[0].matched_n is None
                and any(q.matched_n for q in s.queries[1:]))
    s = tr.steps[step]
    page = retrieval_html(tr, step)
    assert page.count("-gram ") >= sum(len(q.attempts) for q in s.queries)
    assert page.count("no match") >= sum(q.matched_n is None for q in s.queries)
    assert page.count("matched at length") == sum(q.matched_n is not None for q in s.queries)
    # The matched span really is the n-gram, found in the context the step searched.
    ctx = list(tr.prompt_tokens) + [t for x in tr.steps[:step] for t in x.tokens]
    q = next(q for q in s.queries if q.matched_n)
    assert ctx[q.match_pos:q.match_pos + q.matched_n] == next(a.ngram for a in q.attempts if a.matched)
    assert ctx[q.match_pos + q.matched_n:][:len(q.continuation)] == q.continuation
    span = "".join(tr.text_of(t) for t in ctx[q.match_pos:q.match_pos + q.matched_n]).replace("\n", "⏎")
    assert html.escape(span) + "</span>" in page  # highlighted inside its context snippet
    # Text is escaped: a token that looks like a tag stays text.
    evil = copy.copy(tr)
    evil.token_texts = dict(tr.token_texts)
    evil.token_texts[str(s.root)] = "<script>alert(1)</script>"
    page = retrieval_html(evil, step)
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_step_summary_has_the_numbers():
    tr = load("summarization-241")
    s = tr.steps[31]
    md = step_summary_md(tr, 31)
    assert f"Step 31 of 0–{len(tr.steps) - 1}" in md
    assert f"**Tokens committed:** {len(s.tokens)}" in md
    assert f"{sum(not n.pruned for n in s.tree)} verified" in md
    assert f"{s.draft_seconds * 1000:.1f} ms" in md and f"{s.forward_seconds * 1000:.1f} ms" in md
    assert s.sizing.reason in md
    assert " thread" not in md  # a trace recorded before thread counts were kept says nothing of them
    mine = copy.copy(tr)  # the cached fixture stays as it is
    mine.steps = list(tr.steps)
    for threads, said in ((1, "on 1 thread + bookkeeping"), (2, "on 2 threads + bookkeeping")):
        mine.steps[31] = dataclasses.replace(s, threads=threads)
        assert said in step_summary_md(mine, 31)


@pytest.mark.parametrize("name, any_sizing_miss", [("summarization-241", True), ("coding-121", False)])
def test_what_the_drafts_held_bounds_what_each_step_accepted(name, any_sizing_miss):
    from visual.text import drafts_held

    tr = load(name)
    out = [t for s in tr.steps for t in s.tokens]
    pos, sizing_misses = 0, 0
    for i, s in enumerate(tr.steps):
        text = drafts_held(tr, i)
        if s.forward and s.queries and pos + 1 < len(out):
            m = re.match(r"the true next (?:(\d+) tokens? lay on .*|token was candidate \d+ itself, .*); "
                         r"(\d+) draft tokens? accepted", text)
            if m is None:  # nothing held: only possible when nothing was accepted
                assert "nothing could be accepted" in text and len(s.tokens) == 1
            else:
                held, accepted = int(m.group(1) or 1), int(m.group(2))
                assert accepted == len(s.tokens) - 1 <= held
                # the held tokens really are the output's next ones
                assert held >= 1 and out[pos + 1] in {c.token for c in s.candidates} | {
                    q.continuation[0] for q in s.queries if q.kind != "g2" and q.continuation}
                sizing_misses += held > accepted
                assert ("stopped short" in text) == (held > accepted)
        pos += len(s.tokens)
        assert (f"**What the drafts held:** {text}" in step_summary_md(tr, i)) == bool(text)
    assert (sizing_misses > 0) == any_sizing_miss  # as counted when the fixtures were recorded


def test_histogram_and_time_breakdown_add_up():
    tr = load("coding-121")
    fig = accepted_hist_figure(tr)
    bar = next(t for t in fig.data if t.type == "bar")
    assert sum(bar.y) == tr.forward_steps
    want = Counter(len(s.tokens) for s in tr.steps if s.forward)
    assert dict(zip(bar.x, bar.y)) == want
    fig = time_breakdown_figure(tr)
    totals = {t.name: t.x[0] for t in fig.data if t.type == "bar" and t.orientation == "h"}
    assert sum(totals.values()) == pytest.approx(tr.seconds)


def test_every_figure_is_readable():
    tr = load("writing-81")
    figs = [topk_hit_figure(tr), retrieval_success_figure(tr), accepted_hist_figure(tr),
            time_breakdown_figure(tr), candidates_figure(tr, 3), race_figure({"logitspec": tr}),
            visual.tree_figure(tr, 3)]
    for fig in figs:
        assert fig.layout.title.text and "_{" not in fig.layout.title.text
        assert fig.layout.font.size >= 14
        for t in fig.data:
            tf = getattr(t, "textfont", None)
            if tf is not None and tf.size is not None:
                assert tf.size >= 14
        for a in fig.layout.annotations:
            assert a.font.size is None or a.font.size >= 14
        for ax in (fig.layout.xaxis, fig.layout.yaxis):
            assert ax.tickfont.size is None or ax.tickfont.size >= 14


def _pld_trace() -> RunTrace:
    """A two-step prompt-lookup run built by hand on the summarisation prompt."""
    from logitspec.core.trace import NgramAttempt, QueryRecord

    base = load("summarization-241")
    p = base.prompt_tokens
    a, b, c, d = p[10], p[11], p[12], p[40]
    q0 = QueryRecord.of_attempts("pld", None, [NgramAttempt(3, p[7:10] + [a], False), NgramAttempt(1, [a], True)],
                                 1, 10, [b, c])
    q1 = QueryRecord.of_attempts("pld", None, [NgramAttempt(1, [d], False)], None, None, [])
    s0 = StepRecord(0, "pld", len(p), a, [a, b], d, queries=[q0],
                    tree=[TreeNode(0, a, -1, 0, "root"), TreeNode(1, b, 0, 1, "pld", query=0),
                          TreeNode(2, c, 1, 2, "pld", query=0)], accepted_path=[0, 1], forward_seconds=0.1)
    s1 = StepRecord(1, "pld", len(p) + 2, d, [d], None, queries=[q1], tree=[TreeNode(0, d, -1, 0, "root")],
                    accepted_path=[0], forward_seconds=0.1)
    return RunTrace(method="pld", model=base.model, prompt_text=base.prompt_text, prompt_tokens=p, settings={},
                    steps=[s0, s1], prefill_seconds=0.5, token_texts=base.token_texts)


def test_prompt_lookup_and_vanilla_runs_draw_too():
    pld = _pld_trace()
    van = _vanilla_like(load("summarization-241"), 0.2)
    assert retrieval_outcomes(pld) == ["matched", "failed"]
    assert [r["outcome"] for r in failure_rows(pld)] == ["matched", "failed"]
    assert set(retrieval_outcomes(van)) == {"no retrieval"}
    fig = visual.tree_figure(pld, 0)
    assert [int(r[0]) for r in trace_named(fig, "accepted path nodes").customdata] == [0, 1]
    assert "prompt lookup" in fig.layout.yaxis.ticktext
    assert [int(r[0]) for r in trace_named(fig, "verified, rejected nodes").customdata] == [2]
    page = retrieval_html(pld, 0)
    assert "prompt lookup" in page and "matched at length 1" in page
    assert topk_hit_curve(pld) == [] and topk_hit_curve(van) == []
    for tr in (pld, van):
        for fig in (topk_hit_figure(tr), retrieval_success_figure(tr), accepted_hist_figure(tr),
                    time_breakdown_figure(tr), candidates_figure(tr, 0), visual.tree_figure(tr, 0)):
            assert fig.layout.title.text
        assert step_summary_md(tr, 0)
    race = race_figure({"vanilla": van, "pld": pld})
    assert trace_named(race, label("pld")).x[-1] == pytest.approx(0.7)


def test_a_guess_right_without_a_lookup_is_not_said_to_be_g2s():
    """A both-failed step whose one accepted token was a candidate itself: the guess came from the
    logits, so "g2: 0 of 64 candidates matched" and the held sentence agree."""
    tr = load("writing-81")
    md = step_summary_md(tr, 41)
    assert "g2: 0 of 64 candidates matched" in md
    assert "the true next token was candidate 43 itself, a next-next guess read off the logits" in md
    assert "(g2)" not in md


def test_a_tree_sizes_reason_says_its_size_once_and_names_its_p():
    from visual.text import sizing_reason

    said = sizing_reason("1 tokens: expected 1.00 accepted per pass in 30.0 ms; the run makes 20.0 tokens/s; "
                         "the next node (p=0.034) would add 2.0 ms")
    assert said.startswith("expected 1.00 accepted") and "(p=" not in said
    assert "the next node (its estimated chance of acceptance 0.034)" in said

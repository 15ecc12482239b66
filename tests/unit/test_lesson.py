"""The Explain tab's lesson: on every shipped trace its numbers are run_counts' and the step's own,
every word it uses from the glossary carries its definition, and its figures read from afar."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from helpers.paths import FIXTURES, ROOT, TRACE_FIXTURES
from logitspec.analysis.race import load_race
from logitspec.core.trace import RunTrace
from visual.counts import run_counts
from visual.trie import FOLD_SHOW
from visual.lesson import (
    GLOSSARY, GUESS_BOXES, ON_SCREEN, ROW_BOXES, STAGES, TEXT_PX, TICK_PX, g2_kept, glossary_html, glossary_words,
    lesson, lesson_facts, lesson_intro, lesson_step, terms_used,
)
from visual.style import PALETTE, node_color_key

JARGON = ("x_{i+1}", "x_{i+2}", "argmax", "trie", "position id", "gumbel", "per modelled second")


NO_LOGITSPEC = {"code-zh-baselines.json"}  # a race of the baselines alone: no LogitSpec run to teach
NO_G2 = {"coding-122-every-lane.json"}  # a layout fixture of 20 tokens, whose LogitSpec lane kept no g2 guess


def _shipped() -> list[Path]:
    found = sorted((ROOT / "traces").glob("*.json")) + sorted((ROOT / "traces" / "races").glob("*.json")) + \
        sorted(FIXTURES.glob("**/*.json")) + list(TRACE_FIXTURES.values())
    return [p for p in found if p.name not in NO_LOGITSPEC | NO_G2]


def _logitspec(path: Path) -> RunTrace:
    lanes = load_race(path)[0]
    return lanes.get("logitspec") or next(t for t in lanes.values() if t.method == "logitspec")


@pytest.fixture(scope="module", params=_shipped(), ids=lambda p: str(p.relative_to(ROOT)))
def run(request) -> RunTrace:
    return _logitspec(request.param)


def _plain(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def test_the_shipped_traces_are_all_taken():
    names = {str(p.relative_to(ROOT)) for p in _shipped()}
    assert any(n.startswith("traces/races/") for n in names) and any("fixtures/sampled" in n for n in names)


def _kept_origins(s) -> list[str]:
    by_id = {n.id: n for n in s.tree}
    return [by_id[i].origin for i in s.accepted_path[1:]]


def test_the_step_is_one_where_a_next_next_guess_was_kept(run):
    i = lesson_step(run)
    kept = {j: _kept_origins(s).count("g2") for j, s in enumerate(run.steps) if s.forward}
    assert max(kept.values()) >= 1, "every shipped run kept a g2 guess somewhere"
    assert run.steps[i].forward and kept[i] == max(kept.values()) == g2_kept(run.steps[i])
    said = {st.key: _plain(st.html) for st in lesson(run)}
    assert "came from a next-next guess (g2)" in said["sources"]
    assert "0 checked guesses here" not in said["sources"]
    assert f"led to {kept[i]} token" in _plain(lesson_intro(run))


def test_a_run_that_never_kept_g2_falls_back_to_the_most_accepted_step_and_says_so(run):
    plain = RunTrace.from_dict(run.to_dict())
    for s in plain.steps:  # the same run with every g2 branch relabelled as copied
        for n in s.tree:
            if n.origin == "g2":
                n.origin = "g1"
    i = lesson_step(plain)
    best = max(s.drafts_accepted for s in plain.steps if s.forward)
    assert plain.steps[i].drafts_accepted == best
    assert "This run never needed a guess for the token after next" in _plain(lesson_intro(plain))


def test_the_numbers_are_the_runs(run):
    c = run_counts(run)
    i = lesson_step(run)
    s = run.steps[i]
    said = {st.key: _plain(st.html) for st in lesson(run)}
    assert f"This run wrote {c.tokens} tokens" in said["slow"]
    assert f"would need {c.tokens - 1} forward passes" in said["slow"]
    assert f"LogitSpec needed {c.passes} forward passes: {c.tokens_per_pass:.2f} tokens per pass" in said["slow"]
    assert f"step {i} of this run" in said["guess"] and f"shown on step {i} " in _plain(lesson_intro(run))
    verified = [n for n in s.tree if not n.pruned and n.parent >= 0]
    copied = sum(n.origin in ("g1", "pld") for n in verified)
    guessed = sum(n.origin == "g2" for n in verified)
    assert f"it gave {copied} checked guess" in said["sources"]
    assert f"The top {len(s.candidates)} are next-next guesses" in said["sources"]
    assert f"lookup: {guessed} checked guess" in said["sources"]
    assert f"checked all {len(verified)} guessed tokens of step {i}" in said["check"]
    assert f"The model agreed with {s.drafts_accepted} guess" in said["keep"]
    assert f"So step {i} wrote {len(s.tokens)} tokens in one pass" in said["keep"]


def test_the_figures_draw_the_same_numbers(run):
    c = run_counts(run)
    s = run.steps[lesson_step(run)]
    figs = {st.key: st.figure for st in lesson(run)}
    assert list(figs["slow"].data[0].x) == [c.tokens - 1, c.passes]
    verified = [n for n in s.tree if not n.pruned]  # the root and every checked guess: a marker each, or counted
    folds = [a.text for a in figs["check"].layout.annotations if "more guesses" in a.text]
    folded = int(re.match(r"\+(\d+) ", folds[0]).group(1)) if folds else 0
    drawn = sum(len([x for x in tr.x if x is not None]) for tr in figs["check"].data
                if tr.mode == "markers" and tr.marker.symbol != "square")
    assert drawn + folded == len(verified), (drawn, folded)
    # A wide fan of single guesses is folded past the first few, never drawn dot by dot.
    parents = {n.parent for n in verified}
    single = [n for n in verified if n.depth == 1 and n.id not in parents and n.id not in s.accepted_path]
    assert folded == (len(single) - FOLD_SHOW if len(single) > FOLD_SHOW + 1 else 0), (len(single), folded)
    assert f"1 forward pass: {len(verified) - 1} guess" in figs["check"].layout.annotations[0].text
    roles = list(figs["keep"].layout.xaxis.ticktext)
    dropped = ["✗ dropped"] if s.bonus is not None and "✗ dropped" in roles else []
    want = ["next"] + ["✓ kept"] * s.drafts_accepted + dropped + (["bonus"] if s.bonus is not None else [])
    assert roles == want[-ROW_BOXES:]  # a long accepted run shows its end


def test_stage_two_draws_what_it_says_in_the_explorers_colours(run):
    f = lesson_facts(run)
    said = _plain(lesson(run)[1].html)
    fig = lesson(run)[1].figure
    stated = int(re.search(r"it guessed the (\d+) tokens? after it", said).group(1))
    assert stated == len(f.chain)
    roles = list(fig.layout.xaxis.ticktext)
    drawn = [r for r in roles if r.startswith("guess ")]
    more = [a.text for a in fig.layout.annotations if "more" in a.text]
    extra = int(re.match(r"and (\d+) more", more[0]).group(1)) if more else 0
    assert len(drawn) == min(stated, GUESS_BOXES) and len(drawn) + extra == stated, (roles, more, said)
    if extra:
        assert f"and {extra} more" in said
    # The boxes' colours: the explorer's key, by where each guess came from (g1 orange, g2 blue).
    colors = [sh.fillcolor for sh in fig.layout.shapes][-len(drawn):] if drawn else []
    assert colors == [PALETTE[node_color_key(n.origin, n.rank)] for n in f.chain[:len(drawn)]]


def test_hard_words_are_defined_in_the_sentence_and_no_file_is_named(run):
    page = "".join(st.html for st in lesson(run)) + lesson_intro(run)
    for word, definition in ON_SCREEN.items():
        first = page.index(f'data-term="{word}"')
        assert f"({html.escape(definition)})" in page[first:first + 600], word
    assert ".json" not in _plain(page)


def test_every_glossary_word_used_is_defined_on_the_page(run):
    stages = lesson(run)
    page = lesson_intro(run) + "".join(st.title + st.html for st in stages)
    used = glossary_words(page)
    page += glossary_html(used)
    for word in used:
        assert html.escape(GLOSSARY[word]) in page, word
    # Each marked term wears its own definition, and is marked where it first appears in the stages.
    for m in re.finditer(r'<abbr class="lesson-term" data-term="([^"]+)" title="([^"]+)">', page):
        assert html.unescape(m.group(2)) == GLOSSARY[html.unescape(m.group(1))]
    stages_text = "".join(st.html for st in stages)
    for word in terms_used(stages_text):
        first_mark = stages_text.index(f'data-term="{html.escape(word)}"')
        before = _plain(stages_text[:first_mark]).lower()
        assert not re.search(rf"\b{re.escape(word)}(e?s)?\b", before), f"{word!r} is used before it is defined"
    assert not any(j in _plain(page).lower() for j in JARGON), "a term the lesson never defines"


def test_the_lesson_reads_from_the_back_of_the_room(run):
    assert TEXT_PX >= 24 and TICK_PX >= 18
    for st in lesson(run):
        lay = st.figure.layout
        assert lay.font.size >= 18
        for axis in (lay.xaxis, lay.yaxis):
            assert axis.tickfont.size >= 18 and axis.title.font.size >= 18
        for tr in st.figure.data:
            assert tr.textfont.size is None or tr.textfont.size >= 18


def test_six_stages_in_the_order_of_the_story(run):
    assert [st.key for st in lesson(run)] == list(STAGES) == ["slow", "guess", "sources", "check", "keep", "pays"]
    assert "in six steps" in _plain(lesson_intro(run))


def test_the_comparison_says_where_every_race_lanes_method_guesses():
    """The lesson's comparison names each method the race offers (vanilla guesses nothing), once,
    LogitSpec first, with its own words from visual/method_words.py."""
    from logitspec.analysis.lanes import lane, race_order
    from visual.lesson import methods_html
    from visual.method_words import words_of

    said = _plain(methods_html())
    methods = {lane(n).method for n in race_order()} - {"vanilla"}
    for m in methods:
        w = words_of(m)
        assert w.guesses and said.count(f"{w.name} {w.guesses}") == 1, (m, said)
    assert said.index("LogitSpec copies") < min(said.index(words_of(m).name + " ") for m in methods - {"logitspec"})


def test_the_keep_stage_says_which_step_writes_the_bonus_as_the_explorers_text_does():
    """The bonus of step n is the root of step n + 1: the explorer colours it with step n + 1, and the
    lesson names that step, so the two never disagree on where «after» belongs."""
    from logitspec.analysis.race import read_race

    t = read_race(ROOT / "traces" / "races" / "summarization-242.json").lanes["logitspec"]
    stage = next(st for st in lesson(t) if st.key == "keep")
    i = lesson_step(t)
    said = re.search(r"It is written first by step (\d+)", html.unescape(stage.html))
    assert said and int(said.group(1)) == i + 1, stage.html
    assert t.steps[i + 1].tokens[0] == t.steps[i].bonus

"""Whitespace drawn as marks every font holds, each explained where it appears: a carriage return
is ⇤ (the control picture ␍ draws as a missing-glyph box), named in the candidates chart's note
and in the lesson's."""
from __future__ import annotations

import dataclasses
import html
import re

from helpers.paths import FIXTURES
from logitspec.core.trace import RunTrace
from visual.candidates import candidates_figure
from visual.lesson import lesson, lesson_facts
from visual.style import marks_note, visible


def _with_carriage_return() -> tuple[RunTrace, int]:
    """A recorded run whose lesson step has a carriage return for its first guess and top candidate."""
    t = RunTrace.load(FIXTURES / "coding-121.json.gz")
    f = lesson_facts(t)
    t = dataclasses.replace(t, token_bytes={**t.token_bytes, str(f.chain[0].token): "0d",
                                            str(f.s.candidates[0].token): "0d"})
    return t, f.step


def test_a_carriage_return_is_a_printable_mark():
    assert visible("a\rb\tc\n d") == "a⇤b⇥c⏎·d"
    assert "␍" not in visible("".join(map(chr, range(128))))
    assert marks_note("x⇤y") == "⇤ marks a carriage return"
    assert marks_note("·⏎") == "· marks a space, ⏎ a new line"
    assert marks_note("plain") == ""


def test_the_candidates_chart_draws_and_explains_the_mark():
    t, i = _with_carriage_return()
    fig = candidates_figure(t, i, fit=True)
    caption = fig.layout.meta["caption"]["subtitle"]
    ticks = fig.layout.meta["fit"]["ticks"]["text"]
    assert any("⇤" in x for x in ticks) and not any("␍" in x for x in ticks)
    assert "⇤ marks a carriage return" in caption, caption


def test_the_lessons_note_explains_every_mark_it_shows():
    t, _ = _with_carriage_return()
    guess = next(st for st in lesson(t) if st.key == "guess")
    said = html.unescape(re.sub(r"<[^>]+>", "", guess.html))
    assert "⇤" in said and "⇤ a carriage return" in said, said
    assert "· marks a space, ⏎ a new line" in said


def test_the_lessons_note_explains_the_hex_of_a_split_character():
    t = RunTrace.load(FIXTURES / "coding-121.json.gz")
    f = lesson_facts(t)
    t = dataclasses.replace(t, token_bytes={**t.token_bytes, str(f.chain[0].token): "e381"})
    guess = next(st for st in lesson(t) if st.key == "guess")
    said = html.unescape(re.sub(r"<[^>]+>", "", guess.html))
    assert "‹E3\u200981›" in said and "‹E3 81› the bytes, in hex, of a character split between tokens" in said, said

"""Tokens that hold parts of UTF-8 characters are shown as whole characters, one piece per
token, never as "\ufffd": in the text view, the tree, the retrieval panel and the candidates."""
from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers.figures import FIXTURE_NAMES, load

from logitspec.tokens import unicode_to_bytes
from logitspec.core.trace import Candidate, NgramAttempt, QueryRecord, RunTrace, StepRecord, TreeNode
from visual import answer_text, candidates_figure, retrieval_html, text_spans, tree_figure
from visual.data import ngram_text, tok, token_labels, token_pieces
from visual.pieces import SPLIT_NOTE, hex_bytes, join_pieces
from visual.style import truncate, visible
from visual.text import END_MARK
from visual.tree_layout import tree_layout

# "こんにちは、世界 🌍🎉" as SmolLM2's byte-level BPE spells it (ids and vocab strings as the
# bundled tokenizer gives them; tests/test_tokens.py checks the byte mapping on it).
SPELLING = [(7365, "ãģ"), (237, "ĵ"), (10391, "ãĤ"), (41152, "ãģ«"), (111, "¡"), (124, "¯"), (29917, "ãĢģ"),
            (7906, "ä¸"), (240, "ĸ"), (178, "ç"), (239, "ķ"), (230, "Į"), (15107, "ĠðŁ"), (231, "į"),
            (10813, "ðŁ"), (232, "İ"), (227, "ī"), (2, "<|im_end|>")]
TEXT_IDS = [7365, 237, 10391, 237, 41152, 7365, 111, 7365, 124, 29917, 7906, 240, 178, 239, 230,
            15107, 230, 231, 10813, 232, 227]
TEXT = "こんにちは、世界 🌍🎉"
EOS = 2


def _bytes(piece: str) -> bytes:
    if piece.startswith("<|"):
        return piece.encode()
    table = unicode_to_bytes()
    return bytes(table[c] for c in piece)


BYTES = {t: _bytes(p) for t, p in SPELLING}


def make_trace(step_tokens: list[list[int]], with_bytes: bool = True, finished: bool = True) -> RunTrace:
    """A LogitSpec-like trace: each step's tokens are its accepted chain; step 0 also drafts
    candidates and a g2 branch, so every picture has something to draw."""
    prompt = [7365, 237]  # "こ" in two tokens
    steps, ctx = [], len(prompt)
    for i, toks in enumerate(step_tokens):
        last = i == len(step_tokens) - 1
        tree = [TreeNode(0, toks[0], -1, 0, "root")] + [
            TreeNode(d, t, d - 1, d, "g1", query=0) for d, t in enumerate(toks[1:], 1)]
        bonus = None if (last and finished) else (step_tokens[i + 1][0] if not last else 230)
        seq = prompt + [t for s in step_tokens[:i] for t in s] + [toks[0]]
        queries = [QueryRecord.of_attempts("g1", None, [NgramAttempt(2, seq[-2:], True)], 2, 0, toks[1:])]
        cands = []
        if i == 0:  # candidates after a root that starts a character: the candidate completes it
            cands = [Candidate(1, 239, -1.0, 0.3), Candidate(2, 230, -2.0, 0.1)]
            queries.append(QueryRecord.of_attempts("g2", 1, [NgramAttempt(1, [239], True)], 1, 3, [230, 15107]))
            tree += [TreeNode(len(tree), 239, 0, 1, "g2", rank=1, query=1),
                     TreeNode(len(tree) + 1, 230, len(tree), 2, "g2", rank=1, query=1, pruned=True,
                              prune_reason="capacity")]
        steps.append(StepRecord(index=i, method="logitspec", context_len=ctx, root=toks[0], tokens=list(toks),
                                bonus=bonus, candidates=cands, queries=queries, tree=tree,
                                accepted_path=list(range(len(toks)))))
        ctx += len(toks)
    texts = {str(t): b.decode("utf-8", "replace") for t, b in BYTES.items()}  # what decode([t]) gives
    return RunTrace(method="logitspec", model="SmolLM2", prompt_text="p", prompt_tokens=prompt,
                    settings={"k": 2}, steps=steps, eos_token_ids=[EOS], token_texts=texts,
                    token_bytes={str(t): b.hex() for t, b in BYTES.items()} if with_bytes else {})


# Steps cut mid-character: "こ" begins in the prompt, "ち" and "🌍" span steps.
STEPS = [[10391], [237, 41152, 7365], [111, 7365], [124, 29917, 7906, 240], [178, 239, 230, 15107],
         [230, 231, 10813], [232, 227], [EOS]]


# --- the joining itself -------------------------------------------------------------------

def test_an_emoji_in_three_tokens_shows_whole_at_the_last():
    pieces = join_pieces([b" \xf0\x9f", b"\x8c", b"\x8d"])
    assert [p.text for p in pieces] == [" ", "", "🌍"]
    assert [p.split for p in pieces] == [b"\xf0\x9f", b"\x8c", b""]
    # Drawn alone, a token shows its bytes of the emoji in the one notation for them, ‹hex›.
    assert [p.label() for p in pieces] == [" ‹F0\u20099F›", "‹8C›", "🌍"]


def test_a_part_of_a_character_alone_shows_its_bytes():
    assert join_pieces([b"\xe3\x81"])[0].text == hex_bytes(b"\xe3\x81") == "‹E3\u200981›"
    assert join_pieces([b"a\xe3\x81"], final=False)[0].label() == "a" + hex_bytes(b"\xe3\x81")
    # A stray continuation byte forms no character: its own token shows it as hex.
    assert [p.text for p in join_pieces([b"\x8c", b"x"])] == ["‹8C›", "x"]
    # Bytes of a character the context began are completed here, not shown as hex.
    assert join_pieces([b"\x81\x93"], before=b"ab\xe3")[0].text == "こ"
    assert join_pieces([b"z"], before=b"ab\xe3")[0].text == "z"  # the context's broken byte stays there


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=30), st.lists(st.integers(0, 200), max_size=12), st.integers(0, 4))
def test_any_text_cut_anywhere_shows_each_character_at_its_last_byte(text, cuts, lead):
    data = text.encode("utf-8")
    cuts = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    lead = min(lead, len(cuts) - 1)  # the first chunks are the context, given as `before`
    chunks = [data[a:b] for a, b in zip(cuts, cuts[1:])]
    before, chunks = b"".join(chunks[:lead]), chunks[lead:]
    pieces = join_pieces(chunks, before)
    assert len(pieces) == len(chunks)  # one piece per token, even an empty one
    # Expected, counted here: each character goes to the chunk that holds its last byte.
    want = [""] * len(chunks)
    ends = [len(before) + sum(len(c) for c in chunks[:i + 1]) for i in range(len(chunks))]
    pos = 0
    for ch in text:
        pos += len(ch.encode("utf-8"))
        if pos > len(before):
            want[next(i for i, e in enumerate(ends) if pos <= e)] += ch
    assert [p.text for p in pieces] == want
    for p, c, w in zip(pieces, chunks, want):
        if c and not w:
            assert p.pending  # a token that completes nothing says a later one does


# --- the text view ------------------------------------------------------------------------

def test_text_spans_join_characters_across_steps_one_span_per_step():
    tr = make_trace(STEPS)
    spans = text_spans(tr)
    assert len(spans) == len(tr.steps)
    body = "".join(t for t, _ in spans)
    assert "\ufffd" not in body
    # "こ" began in the prompt: its second token is the output's first; 10391 alone only begins
    # "ん", so its step shows those bytes as ‹hex›, which keeps its span visible and clickable.
    assert spans[0][0] == hex_bytes("ん".encode("utf-8")[:len(tr.bytes_of(10391))])
    assert body == spans[0][0] + TEXT[1:] + END_MARK
    assert answer_text(tr) == TEXT[1:]  # the plain answer: the characters alone, no marks
    assert spans[1][0] == "んに"  # 237 completes "ん", then "に", and 7365 begins "ち"
    assert spans[2][0] == "ち"


def test_the_end_of_sequence_tag_is_not_shown_literally():
    spans = text_spans(make_trace(STEPS))
    assert not any("<|im_end|>" in t for t, _ in spans)
    assert spans[-1][0] == END_MARK and "⏹" in END_MARK
    assert [label for _, label in spans][-1] == "1"  # the step keeps its span


def test_a_streaming_run_waits_for_its_unfinished_character():
    tr = make_trace(STEPS[:5], finished=False)  # ends after 15107 = " " + the first half of 🌍
    last = text_spans(tr)[-1][0]
    assert last.endswith(" ") and "‹" not in last and "\ufffd" not in last


def test_old_traces_without_bytes_draw_their_texts_as_before():
    tr = make_trace(STEPS, with_bytes=False)
    spans = text_spans(tr)
    assert [t for t, _ in spans][:-1] == ["".join(tr.text_of(t) for t in s.tokens) for s in tr.steps][:-1]
    assert tok(tr, 237) == "\ufffd"  # nothing better can be known without the bytes


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_traces_without_bytes_label_the_tree_as_before(name):
    tr = load(name)
    assert not tr.token_bytes
    for step in (0, len(tr.steps) // 2):
        lay = tree_layout(tr, step)
        for v in lay.nodes:
            want = truncate(visible(tr.text_of(v.token)), lay.label_chars) if lay.label_chars >= 2 else ""
            assert v.label == want


# --- tree, retrieval, candidates ----------------------------------------------------------

def test_tree_labels_are_decoded_along_each_path():
    tr = make_trace(STEPS)
    lay = tree_layout(tr, 3)  # tokens 124 29917 7906 240: "は", "、", then 世 in two tokens
    labels = {v.id: v.label for v in lay.nodes if v.id >= 0}
    assert labels == {0: "は", 1: "、", 2: "‹E4\u2009B8›", 3: "世"}
    hover = next(v.hover for v in lay.nodes if v.id == 2)
    assert "bytes ‹E4\u2009B8›" in html.unescape(hover)
    lay0 = tree_layout(tr, 0)  # root 10391 begins "ん"; the g2 candidate 239 cannot finish it
    assert {v.id: v.label for v in lay0.nodes}[0] == text_spans(tr)[0][0]  # the same bytes, the same notation


def test_candidates_are_joined_after_the_root():
    tr = make_trace([[7906], [240], [EOS]])  # root = the first two bytes of 世
    s = tr.steps[0]
    s.candidates = [Candidate(1, 240, -1.0, 0.5), Candidate(2, 10813, -2.0, 0.2)]
    fig = candidates_figure(tr, 0)
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks[1] == "世"  # 240 completes the root's character
    assert ticks[2] == "‹F0\u20099F›"  # 10813 begins an emoji instead: alone, its bytes as hex
    assert tok(tr, 7906) == "‹E4\u2009B8›"  # the root alone: its bytes


def test_wherever_hex_shows_its_meaning_is_said_beside_it():
    from visual import failure_rows, step_summary_md
    from visual.debug_table import debugger_html
    from visual.tree_key import tree_key_html

    split, plain = make_trace(STEPS), load(FIXTURE_NAMES[0])
    assert SPLIT_NOTE in tree_key_html(split) and SPLIT_NOTE not in tree_key_html(plain)
    shown = 0
    for tr in (split, plain):
        for i in range(len(tr.steps)):
            for drawn in (step_summary_md(tr, i), html.unescape(retrieval_html(tr, i))):
                shown += "‹" in drawn.replace(SPLIT_NOTE, "")
                assert ("‹" in drawn.replace(SPLIT_NOTE, "")) == (SPLIT_NOTE in drawn), (i, drawn)
        table = html.unescape(debugger_html(failure_rows(tr)))
        assert ("‹" in table.replace(SPLIT_NOTE, "")) == (SPLIT_NOTE in table)
    assert shown  # the split trace shows some


def test_no_replacement_character_anywhere_in_the_pictures():
    tr = make_trace(STEPS)
    for i in range(len(tr.steps)):
        for drawn in (tree_figure(tr, i).to_json(), retrieval_html(tr, i), candidates_figure(tr, i).to_json()):
            assert "\ufffd" not in drawn and "\\ufffd" not in drawn
    assert "\ufffd" not in ngram_text(tr, TEXT_IDS)
    assert token_labels(tr, TEXT_IDS)[-1] == "🎉" and len(token_pieces(tr, TEXT_IDS)) == len(TEXT_IDS)


# --- a real run on the bundled model --------------------------------------------------------

EMOJI_PROMPT = "Reply only with these characters repeated three times: 🌍こんにちは🎉"


@pytest.mark.slow
def test_a_real_run_with_emoji_and_japanese_draws_without_replacement_characters(bundled):
    from logitspec.runner import run_trace
    from logitspec.core.settings import DecodeSettings
    from visual import failure_rows, step_summary_md

    run = run_trace(bundled, EMOJI_PROMPT, "logitspec", DecodeSettings(max_new_tokens=24, tree="static"))
    tr = RunTrace.from_json(run.to_json())  # drawn from the saved form, as the app redraws a file
    out = bundled.tokenizer.decode(tr.tokens)
    assert any(0x1F300 <= ord(c) <= 0x1FAFF for c in out) and any(0x3040 <= ord(c) <= 0x30FF for c in out), out
    assert "\ufffd" not in out
    assert any("\ufffd" in tr.text_of(t) for t in tr.tokens)  # decoded one by one, they break
    assert b"".join(tr.bytes_of(t) for t in tr.tokens) == out.encode("utf-8")
    eos = bundled.tokenizer.eos_token
    shown = "".join(t for t, _ in text_spans(tr))
    # Steps that only begin a character show its bytes as ‹hex›; the plain answer has none.
    assert re.sub("‹[^›]*›", "", shown) == out.replace(eos, END_MARK)
    assert answer_text(tr) == out.replace(eos, "")
    whole = 0  # tree boxes that show a kana or an emoji joined along their path
    for i in range(len(tr.steps)):
        for drawn in (tree_figure(tr, i).to_json(), retrieval_html(tr, i), candidates_figure(tr, i).to_json(),
                      step_summary_md(tr, i)):
            assert "\ufffd" not in drawn and "\\ufffd" not in drawn, i
        whole += sum(any(0x3040 <= ord(c) <= 0x30FF or ord(c) >= 0x1F300 for c in v.label)
                     for v in tree_layout(tr, i).nodes)
    assert whole >= len(tr.steps)
    assert "\ufffd" not in str(failure_rows(tr))

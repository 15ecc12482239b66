"""The retrieval view says which occurrence of the matched n-gram the pool continued and why: the
latest (pool "recent"), or the latest with the full continuation after it, else the earliest
(pool "longest", the paper's), told against the n-gram's other occurrences in the context. The
lookups are the real pool's (logitspec.core.retrieval.NgramPool)."""
from __future__ import annotations

import re

import pytest

from logitspec.core.retrieval import NgramPool
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import RunTrace, StepRecord
from visual import retrieval_html
from visual.retrieval import occurrence_words, occurrences

TEXTS = {str(i): f"t{i}" for i in range(100)}
GRAM = [1, 2, 3]
# The n-gram at 0 with 28 tokens after it, again near the end with 3 after it (70 and the
# n-gram's first two tokens, which the root 3 completes a third time).
CONTEXT = GRAM + list(range(40, 62)) + GRAM + [70] + GRAM[:-1]


def pld_step_view(pool: str, context: list[int] = CONTEXT) -> str:
    """The retrieval view of a prompt lookup step after `context` whose root ends the n-gram GRAM."""
    s = DecodeSettings(pool=pool)
    q = NgramPool(s.ngram_sizes, context, pool, s.continuation).query("pld", context[-3:] + [GRAM[-1]], s.pld_tokens)
    step = StepRecord(0, "pld", len(context), GRAM[-1], [GRAM[-1]], None, queries=[q])
    trace = RunTrace("pld", "tiny", "", context, s.to_dict(), steps=[step], token_texts=TEXTS)
    return re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", retrieval_html(trace, 0)))


def test_the_recent_pool_says_it_took_the_latest_and_what_the_longest_would_have():
    words = pld_step_view("recent")
    assert ("continued from position 25: the latest of 2 occurrences, with only 3 tokens after it; position 0 has 20 "
            "(the longest pool would continue that one) (pool: recent)") in words, words


def test_the_longest_pool_says_it_took_the_latest_with_a_full_continuation():
    words = pld_step_view("longest")
    assert ("continued from position 0: of 2 occurrences, the latest with the full 20 tokens after it; the latest, "
            "at position 25, has only 3 (pool: longest)") in words, words


@pytest.mark.parametrize("pool", ["recent", "longest"])
def test_a_lone_occurrence_is_named_as_such(pool):
    context = [9, 9] + GRAM + [70, 71] + GRAM[:-1]
    assert "continued from position 2: the only occurrence, 4 tokens after it" in pld_step_view(pool, context)


def test_the_words_follow_the_pools_rule_where_no_occurrence_has_a_full_continuation():
    ctx = GRAM + [5, 6] + GRAM + [7]
    starts = occurrences(ctx, GRAM)
    assert starts == [0, 5]
    end = len(ctx) - len(GRAM)  # an occurrence at i has end - i tokens after it
    assert occurrence_words("longest", 20, starts, 0, end) == (
        "of 2 occurrences none has 20 tokens after it, so the earliest, with the most (6)")
    assert occurrence_words("recent", 20, starts, 5, end).startswith("the latest of 2 occurrences, with only 1 token")
    # a position the context does not show: the rule alone
    assert occurrence_words("recent", 20, starts, 99, end) == "the latest occurrence"

"""The n-gram retrieval pool: incremental updates, most-recent-wins and query fallback."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logitspec.core.retrieval import NgramPool


def brute_force_table(tokens: list[int], sizes) -> dict[tuple[int, ...], int]:
    """For every n-gram with a follower, the index of its latest follower (by definition)."""
    table: dict[tuple[int, ...], int] = {}
    for n in sizes:
        for start in range(len(tokens) - n):  # the n-gram must be followed by a token
            table[tuple(tokens[start : start + n])] = start + n
    return table


token_lists = st.lists(st.integers(0, 6), max_size=60)  # small alphabet: many repeats
size_sets = st.sets(st.integers(1, 5), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(tokens=token_lists, sizes=size_sets, cuts=st.lists(st.integers(0, 60), max_size=6))
def test_incremental_pool_equals_a_full_scan(tokens, sizes, cuts):
    pool = NgramPool(sizes)
    bounds = sorted({min(c, len(tokens)) for c in cuts} | {0, len(tokens)})
    for a, b in zip(bounds, bounds[1:]):
        pool.extend(tokens[a:b])
        # After every piece, the pool matches a scan of what it holds so far.
        assert pool.table == brute_force_table(tokens[:b], sizes)
    assert pool.tokens == tokens
    assert pool.table == brute_force_table(tokens, sizes)


@settings(max_examples=100, deadline=None)
@given(tokens=token_lists, sizes=size_sets)
def test_pool_built_at_once_equals_token_by_token(tokens, sizes):
    one_by_one = NgramPool(sizes)
    for t in tokens:
        one_by_one.extend([t])
    assert NgramPool(sizes, tokens).table == one_by_one.table


def test_most_recent_occurrence_wins():
    pool = NgramPool((1, 2), [5, 1, 5, 2, 5, 3])
    assert pool.table[(5,)] == 5  # followed by 1, then 2, then 3: the last one counts
    q = pool.query("g1", [5], max_len=4)
    assert q.continuation == [3]
    assert q.match_pos == 4


def test_query_falls_back_longest_first_and_records_attempts():
    #        0  1  2  3  4  5  6  7  8  9  10
    ctx = [1, 2, 3, 4, 9, 2, 3, 5, 7, 3, 6]
    pool = NgramPool((1, 2, 3), ctx)
    q = pool.query("g2", [8, 2, 3], max_len=3, candidate_rank=7)
    assert [(a.n, a.ngram, a.matched) for a in q.attempts] == [
        (3, [8, 2, 3], False),
        (2, [2, 3], True),
    ]
    assert q.kind == "g2" and q.candidate_rank == 7
    assert q.matched_n == 2
    assert q.match_pos == 5  # the later of the two occurrences of (2, 3)
    assert ctx[q.match_pos : q.match_pos + 2] == [2, 3]
    assert q.continuation == [5, 7, 3]
    assert q.matched


def test_query_falls_back_to_unigram():
    pool = NgramPool((1, 2, 3), [1, 2, 3, 4, 9, 2, 3, 5, 7, 3, 6])
    q = pool.query("g1", [0, 8, 7], max_len=10)
    assert [(a.n, a.matched) for a in q.attempts] == [(3, False), (2, False), (1, True)]
    assert q.matched_n == 1 and q.match_pos == 8
    assert q.continuation == [3, 6]  # cut by the end of the context


def test_query_without_match_tries_every_size():
    pool = NgramPool((1, 2, 3), [1, 2, 3, 4])
    q = pool.query("g1", [7, 8, 9], max_len=5)
    assert [(a.n, a.ngram, a.matched) for a in q.attempts] == [
        (3, [7, 8, 9], False), (2, [8, 9], False), (1, [9], False),
    ]
    assert q.matched_n is None and q.match_pos is None and q.continuation == []
    assert not q.matched


def test_ngram_at_the_very_end_has_no_follower():
    # (2, 3) occurs only as the tail of the context: nothing followed it yet.
    pool = NgramPool((1, 2), [1, 2, 3])
    q = pool.query("g1", [2, 3], max_len=5)
    assert q.matched_n is None
    assert [a.n for a in q.attempts] == [2, 1]


def test_short_suffix_skips_longer_sizes():
    pool = NgramPool((1, 2, 3), [4, 5, 4, 6])
    q = pool.query("g1", [4], max_len=2)
    assert [a.n for a in q.attempts] == [1]
    assert q.continuation == [6]


def test_query_respects_explicit_sizes_and_max_len():
    pool = NgramPool((1, 2, 3), [1, 2, 3, 4, 5, 6, 1, 2, 3, 7, 8])
    q = pool.query("pld", [1, 2], max_len=2, sizes=[1])
    assert [a.n for a in q.attempts] == [1]  # (1, 2) would match, but only n=1 was asked for
    assert q.matched_n == 1 and q.match_pos == 7
    assert q.continuation == [3, 7]  # cut at max_len


def brute_force_query(tokens: list[int], suffix: list[int], sizes, max_len: int):
    """(matched n, follower index, continuation) by scanning the context: the longest
    n-gram of `suffix` whose latest occurrence has a follower."""
    for n in sorted(sizes, reverse=True):
        if n > len(suffix):
            continue
        key = suffix[len(suffix) - n:]
        hits = [i + n for i in range(len(tokens) - n) if tokens[i:i + n] == key]
        if hits:
            return n, hits[-1], tokens[hits[-1]:hits[-1] + max_len]
    return None, None, []


@settings(max_examples=200, deadline=None)
@given(tokens=token_lists, head=st.lists(st.integers(0, 6), max_size=4),
       lasts=st.lists(st.integers(0, 7), min_size=1, max_size=8), sizes=size_sets)
def test_queries_sharing_a_head_find_what_a_scan_finds(tokens, head, lasts, sizes):
    # g2's queries share all but their last token; each must still be its own full lookup.
    pool = NgramPool(sizes, tokens)
    max_lens = [1 + i % 4 for i in range(len(lasts))]
    got = pool.query_each("g2", head, lasts, max_lens, list(range(1, len(lasts) + 1)))
    for q, last, max_len, rank in zip(got, lasts, max_lens, range(1, len(lasts) + 1)):
        n, follower, continuation = brute_force_query(tokens, [*head, last], sizes, max_len)
        assert (q.matched_n, q.continuation, q.candidate_rank) == (n, continuation, rank)
        assert q.match_pos == (None if n is None else follower - n)
        tried = [a.n for a in q.attempts]
        assert tried == [m for m in pool.sizes if m <= len(head) + 1 and (n is None or m >= n)]
        assert all(a.ngram == [*head, last][len(head) + 1 - a.n:] for a in q.attempts)


def test_an_empty_suffix_matches_nothing():
    q = NgramPool((1, 2, 3), [1, 2, 3]).query("g1", [], max_len=4)
    assert (q.attempts, q.matched_n, q.continuation) == ([], None, [])


def test_sizes_are_sorted_longest_first_and_deduplicated():
    assert NgramPool([1, 3, 2, 3]).sizes == (3, 2, 1)


@pytest.mark.parametrize("sizes", [(), (0,), (2, -1)])
def test_bad_sizes_are_refused(sizes):
    with pytest.raises(ValueError):
        NgramPool(sizes)


def brute_match_length(text: list[int], start: int, n: int) -> int:
    """How many tokens ending at the earlier occurrence text[start:start+n] agree with the
    tokens ending at text's end, by definition (capped)."""
    from logitspec.core.retrieval import MATCH_LEN_CAP

    length = 0
    while (length < MATCH_LEN_CAP and start + n - 1 - length >= 0
           and text[start + n - 1 - length] == text[len(text) - 1 - length]):
        length += 1
    return length


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.integers(0, 3), min_size=1, max_size=80), pending=st.lists(st.integers(0, 3), min_size=1,
                                                                                       max_size=2))
def test_match_length_counts_the_agreement_behind_the_match(tokens, pending):
    from logitspec.core.retrieval import match_length

    pool = NgramPool((1, 2, 3), tokens)
    text = tokens + pending
    q = pool.query("g1", text[-3:], max_len=4)
    length = match_length(pool, q, pending)
    if not q.matched:
        assert length is None
    else:
        assert length >= q.matched_n
        assert length == brute_match_length(text, q.match_pos, q.matched_n)


def test_a_long_copy_is_told_from_a_bare_trigram():
    from logitspec.core.retrieval import match_length

    copied = list(range(10, 30))
    pool = NgramPool((1, 2, 3), copied + [1, 2] + copied[:12])  # the text is copying `copied`
    q = pool.query("g1", pool.tokens[-2:] + [copied[12]], max_len=3)
    assert q.matched_n == 3 and q.continuation == copied[13:16]
    assert match_length(pool, q, [copied[12]]) == 13
    fresh = NgramPool((1, 2, 3), [5, 6, 7, 8, 1, 6, 7])  # only "6 7 8" repeats
    q = fresh.query("g1", [6, 7, 8], max_len=2)
    assert match_length(fresh, q, [8]) == 3

"""The baselines' draft builders: Lookahead's window and pool, REST's suffix array and trie,
and the n-gram pool's two kinds (most recent, longest continuation). Plain data, no model."""
from __future__ import annotations

import random

import numpy as np
import pytest

from logitspec.core.limits import InputError, check_settings
from logitspec.drafters.lookahead import POOL, WINDOW, GuessPool, JacobiWindow, lookahead_tree, most_nodes
from logitspec.drafters.rest import Datastore, frequent_prefixes, retrieve_tree, suffix_array
from logitspec.core.retrieval import NgramPool
from logitspec.core.settings import DecodeSettings
from logitspec.core.tree import TreeIndex


# ----- Lookahead --------------------------------------------------------------------------------------

def full_window(w: int = 4, n: int = 4) -> JacobiWindow:
    win = JacobiWindow.start(w, n, list(range(100, 120)), random.Random(0))
    while not win.full:
        top = win.nodes(0, 1)[1]
        win.advance([200 + i for i in range(len(top))], [], GuessPool(3))
    return win


def test_the_window_warms_up_to_n_minus_one_levels_of_the_authors_sizes():
    w, n = 5, 4
    win = JacobiWindow.start(w, n, [7, 8, 9], random.Random(1))
    assert len(win.level0) == w + n - 3 and set(win.level0) <= {7, 8, 9}
    for _ in range(n - 2):
        top = win.nodes(0, 1)[1]
        assert len(top) == len(win.level0) + 1  # block 0 first (the root included), then the top level
        win.advance(list(range(len(top))), [], GuessPool(3))
    assert win.full and len(win.level0) == w - 1 and [len(lv) for lv in win.upper] == [w] * (n - 2)


def test_each_window_token_sees_block_zero_to_its_column_and_its_column_below():
    win = full_window(4, 4)
    nodes, top = win.nodes(0, 1)
    by_id = {0: (None, 0)} | {nd.id: (nd.parent, nd.depth) for nd in nodes}
    assert all(nd.origin == WINDOW for nd in nodes)
    # level 0: a chain under the root, depth = column + 1
    level0 = [nd for nd in nodes[: len(win.level0)]]
    assert [nd.depth for nd in level0] == [1, 2, 3] and level0[0].parent == 0
    # the top level's column i sits at depth i + (N - 2), one deeper than its column below
    assert [by_id[t][1] for t in top] == [i + 2 for i in range(4)]
    for t in top:
        assert by_id[by_id[t][0]][1] == by_id[t][1] - 1


def test_a_full_window_hands_the_pool_each_columns_ngram_and_moves_on():
    win, pool = full_window(4, 4), GuessPool(7)
    upper = [lv[:] for lv in win.upper]
    block = [50, *win.level0]
    win.advance([90, 91, 92, 93], block, pool)
    assert pool.guesses(50) == [(upper[0][0], upper[1][0], 90)]
    assert pool.guesses(block[2]) == [(upper[0][2], upper[1][2], 92)]
    assert win.level0 == upper[0][1:] and win.upper == [upper[1], [90, 91, 92, 93]]


def test_the_guess_pool_keeps_g_per_token_least_recent_dropped_first():
    pool = GuessPool(2)
    pool.add(1, [2, 3])
    pool.add(1, [4, 5])
    pool.add(1, [2, 3])  # seen again: most recent now
    pool.add(1, [6, 7])  # full: [4, 5] goes
    assert pool.guesses(1) == [(2, 3), (6, 7)] and pool.guesses(9) == []


def test_the_lookahead_tree_walks_the_pool_and_never_the_window():
    win = full_window(3, 3)
    nodes, top, q = lookahead_tree(5, [(1, 2), (1, 3), (4, 4)], win)
    index = TreeIndex.of(nodes)
    pool_ids = [nd.id for nd in nodes if nd.origin == POOL]
    assert len(pool_ids) == 5  # (1, 2) and (1, 3) share their first node
    assert set(index.child.values()) == set(pool_ids)  # the walk can reach only pool nodes
    assert all(nodes[t].origin == WINDOW for t in top) and q.kind == "lookahead" and q.matched
    assert len(nodes) <= most_nodes(3, 3, 3)


# ----- REST ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, vocab", [(0, 1), (1, 1), (2, 1), (300, 1), (300, 2), (300, 4), (257, 50_000), (64, 3)])
def test_the_suffix_array_sorts_every_suffix(n, vocab):
    """Short alphabets make long repeats (many doubling rounds); one token repeated is the longest."""
    rng = np.random.default_rng(n + vocab)
    toks = rng.integers(0, vocab, n) + (49_000 if vocab > 1000 else 0)
    sa = suffix_array(toks)
    want = sorted(range(len(toks)), key=lambda i: toks[i:].tolist())
    assert sa.dtype == np.int64 and sa.tolist() == want


def test_matches_finds_every_occurrence():
    toks = [1, 2, 3, 1, 2, 4, 1, 2, 3, 9]
    store = Datastore(toks)
    assert sorted(store.matches([1, 2]).tolist()) == [0, 3, 6]
    assert sorted(store.matches([1, 2, 3]).tolist()) == [0, 6]
    assert store.matches([3, 3]).tolist() == []


def test_frequent_prefixes_keep_the_commonest_closed_under_prefixes():
    conts = np.array([[1, 2, 3], [1, 2, 4], [1, 2, 3], [5, 6, -1]])
    got = frequent_prefixes(conts, 4)
    assert got == [(3, [1]), (3, [1, 2]), (2, [1, 2, 3]), (1, [5])]  # shorter first among equals
    kept = {tuple(p) for _, p in frequent_prefixes(conts, 3)}
    assert all(p[:-1] in kept or len(p) == 1 for p in kept)


def test_rest_tries_the_longest_suffix_first_and_drafts_its_continuations():
    store = Datastore([9, 8, 7, 1, 2, 3, 4, 5, 0, 2, 3, 6, 6])
    nodes, q = retrieve_tree(3, [5, 1, 2], store, suffix=4, matches=10, span=3, drafts=8)
    assert q.tried == (4, 3) and q.matched_n == 3  # [5, 1, 2, 3] is absent; [1, 2, 3] occurs once
    assert [nd.token for nd in nodes] == [3, 4, 5, 0] and all(nd.origin == "retrieved" for nd in nodes[1:])
    nodes, q = retrieve_tree(42, [1], store, suffix=4, matches=10, span=3, drafts=8)
    assert not q.matched and len(nodes) == 1


# ----- the n-gram pool's kinds ----------------------------------------------------------------------------

def test_the_longest_pool_prefers_an_occurrence_with_a_full_continuation():
    toks = [1, 2, 10, 11, 12, 13, 14, 1, 2, 20]
    recent = NgramPool((2,), toks, "recent", span=4).query("g1", [1, 2], 4)
    longest = NgramPool((2,), toks, "longest", span=4).query("g1", [1, 2], 4)
    assert recent.continuation == [20] and longest.continuation == [10, 11, 12, 13]
    # among occurrences with a full continuation, the latest wins
    toks2 = [1, 2, 5, 5, 5, 5, 1, 2, 6, 6, 6, 6, 7]
    assert NgramPool((2,), toks2, "longest", span=4).query("g1", [1, 2], 4).continuation == [6, 6, 6, 6]


def test_an_unknown_pool_is_refused_in_one_line():
    with pytest.raises(InputError, match="pool must be one of recent, longest"):
        check_settings(DecodeSettings(pool="oldest"))

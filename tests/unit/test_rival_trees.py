"""RACER's automaton and SuffixDecoding's trees against brute force over the same tokens."""
from __future__ import annotations

import random

import pytest

from logitspec.core.settings import DecodeSettings
from logitspec.drafters.racer import Automaton, logits_branches, retrieval_branches
from logitspec.drafters.recycling import SuccessorMatrix
from logitspec.drafters.suffix import OutputTree, SuffixTrie, best_speculation, speculate_chain, speculate_tree


def _text(seed: int, n: int, vocab: int = 5) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def _grams(text: list[int], n: int) -> list[list[int]]:
    return [text[i:i + n] for i in range(len(text) - n + 1)]


def _prefix_counts(patterns: list[list[int]]) -> dict[tuple[int, ...], int]:
    counts: dict[tuple[int, ...], int] = {}
    for p in patterns:
        for j in range(1, len(p) + 1):
            counts[tuple(p[:j])] = counts.get(tuple(p[:j]), 0) + 1
    return counts


def test_automaton_counts_every_prefix_of_its_ngrams():
    for seed in range(5):
        text = _text(seed, 60)
        ac = Automaton(100_000)
        for g in _grams(text, 4):
            ac.insert(g)
        want = _prefix_counts(_grams(text, 4))
        for key, c in want.items():
            node = ac.walk(key)
            assert node is not None and ac.freq[node] == c
        assert len(ac) == len(want) + 1  # the root and nothing else


def _longest_proper_suffix(ac: Automaton, node: int) -> int:
    path = ac.path(node)
    return next((n for i in range(1, len(path)) if (n := ac.walk(path[i:])) is not None), 0)


def test_the_automatons_matches_are_every_suffix_followed_by_the_token():
    """Fed a text with exact links, the fail chain lists exactly the suffixes of the text (n-gram
    prefixes) that the token extends, the longest first."""
    for seed in range(8):
        ctx = _text(seed, 50)
        ac = Automaton(100_000, links="exact")
        patterns = _grams(ctx, 5)
        for g in patterns:
            ac.insert(g)
        counts = _prefix_counts(patterns)
        query = _text(seed + 100, 12)
        for upto in range(1, len(query)):
            ac.state = 0
            ac.feed(query[:upto])
            text = query[:upto]
            for tok in range(5):
                want = sorted(len(text) - i + 1 for i in range(len(text) + 1)
                              if tuple(text[i:] + [tok]) in counts)
                got, _ = ac.matches(tok, 1)
                assert sorted(ac.depth[v] for v in got) == want, (seed, upto, tok)
                assert [ac.path(v) for v in got] == [text[len(text) - d + 1:] + [tok] for d in sorted(want, reverse=True)]


def test_exact_links_stay_the_longest_proper_suffix_as_nodes_come_and_go():
    """Inserted one n-gram at a time, and evicted past 60 nodes, every node's link is the longest
    proper suffix of its path in the trie, as a rebuild from scratch finds."""
    for seed in range(4):
        ac = Automaton(60, links="exact")
        for g in _grams(_text(seed, 120, vocab=4), 4):
            ac.insert(g)
            live = [n for n in range(1, len(ac.children)) if n not in set(ac.free)]
            assert all(ac.fail(n) == _longest_proper_suffix(ac, n) for n in live), seed


def test_reference_links_are_built_once_then_reset_to_the_root_where_touched():
    """automaton.cpp: `build` links every node (308-330); a node made later links to the root
    (166-170); a transition that fails resets the node it reaches and its ancestors (140-153, 340)."""
    ac = Automaton(1000)
    for g in _grams([1, 2, 3, 1, 2, 4, 2, 3, 5], 3):
        ac.insert(g)
    ac.build()
    live = [n for n in range(1, len(ac.children))]
    assert all(ac.fail(n) == _longest_proper_suffix(ac, n) for n in live)
    ac.insert([2, 3, 9])
    assert ac.fail(ac.walk([2, 3, 9])) == 0
    ac.feed([1, 2, 3])  # 1 2 3 is a path: no failure, links kept
    assert ac.state == ac.walk([1, 2, 3]) and ac.fail(ac.walk([1, 2, 3])) == ac.walk([2, 3])
    ac.feed([5])  # fails over to "2 3", which holds 5: "2 3" and "2" link to the root now
    assert ac.state == ac.walk([2, 3, 5]) and ac.fail(ac.walk([2, 3])) == 0


def test_the_automaton_evicts_least_recently_used_leaves_and_stays_a_trie():
    ac = Automaton(40)
    text = _text(9, 200, vocab=7)
    for g in _grams(text, 5):
        ac.insert(g)
        assert len(ac) <= 40
    # every node still hangs under the root, with its parent's child pointing back at it
    live = [n for n in range(len(ac.children)) if n not in set(ac.free)]
    for n in live[1:]:
        assert ac.children[ac.parent[n]][ac.token[n]] == n
    # the latest n-gram was used last: it survives whole
    assert ac.walk(_grams(text, 5)[-1]) is not None


def test_retrieval_keeps_the_most_frequent_nodes():
    ac = Automaton(1000)
    for p in ([[1, 2, 3, 4]] * 5 + [[1, 2, 5, 6]] * 2 + [[1, 7, 8, 9]]):
        ac.insert(p)
    border = ac.walk([1])
    branches, used = retrieval_branches(ac, [border], 4)
    assert used == 4 and [b.tokens for b in branches] == [[2, 3, 4]]  # counts 8, 7 (2), 5 (3), 5 (4)


# The root's 8 successors: "paper" keeps the breadth at the root (8, 4, 2, 1...), "first-release"
# halves it there and keeps it at depth 1 (4, 2, 1, 1...); 12 nodes: the root's 8 children first.
SHAPES = {"paper": ([8, 4, 2, 1, 1, 1, 1, 1], [[10, 1000 + i] for i in range(4)]),
          "first-release": ([4, 2, 1, 1, 1, 1, 1, 1], [[10, 1000 + i] for i in range(4)])}
# The authors' figure 9 test (hkr04/RACER 4b25165, tests/test_automaton_paper_alignment.py): k = 4,
# token t's successors 4t+1..4t+4, 21 nodes with the root; its leaf paths, and fc494a3's for the same rows.
FIGURE9 = {"paper": {(0, 4, 17), (0, 1, 5, 21), (0, 1, 5, 22), (0, 1, 6, 25), (0, 1, 7, 29), (0, 1, 8, 33),
                     (0, 2, 9, 37), (0, 2, 10, 41), (0, 3, 13, 53)},
           "first-release": {(0, 4, 17, 69), (0, 1, 5, 21, 85), (0, 1, 5, 22, 89), (0, 1, 6, 25, 101),
                             (0, 2, 9, 37, 149), (0, 3, 13, 53, 213)}}


@pytest.mark.parametrize("rule", sorted(SHAPES))
def test_the_logits_tree_halves_its_breadth_in_either_shape(rule):
    m = SuccessorMatrix(8)
    m.rows = {0: tuple(range(10, 18)), **{t: tuple(range(100 * t, 100 * t + 8)) for t in range(10, 18)}}
    firsts = [b.tokens[0] for b in logits_branches(m, 0, 64, 8, rule)]
    counts, short = SHAPES[rule]
    assert [firsts.count(t) for t in range(10, 18)] == counts
    assert sorted(b.tokens for b in logits_branches(m, 0, 12, 8, rule)) == short + [[t] for t in range(11, 18)]
    k4 = SuccessorMatrix(4)
    k4.rows = {t: tuple(4 * t + j for j in range(1, 5)) for t in range(1024)}
    tree = logits_branches(k4, 0, 20, 4, rule)
    assert {(0, *b.tokens) for b in tree} == FIGURE9[rule]
    assert len({tuple(b.tokens[:j]) for b in tree for j in range(1, len(b.tokens) + 1)}) == 20


def _substring_counts(seqs: list[list[int]], depth: int) -> dict[tuple[int, ...], int]:
    counts: dict[tuple[int, ...], int] = {}
    for s in seqs:
        for i in range(len(s)):
            for j in range(i + 1, min(len(s), i + depth) + 1):
                counts[tuple(s[i:j])] = counts.get(tuple(s[i:j]), 0) + 1
    return counts


def test_the_suffix_trie_counts_every_substring_up_to_its_depth_in_pieces_and_after_removal():
    for seed in range(5):
        a, b = _text(seed, 70), _text(seed + 50, 40)
        trie = SuffixTrie(6)
        active: list[int] = []
        for k in range(0, len(a), 7):  # appended in pieces, as steps commit tokens
            active = trie.extend(active, a[k:k + 7])
        trie.extend([], b)
        want = _substring_counts([a, b], 6)
        assert all(trie.count[trie.walk(k)] == c for k, c in want.items())
        assert len(trie) == len(want) + 1
        trie.remove(a)
        want = _substring_counts([b], 6)
        assert all(trie.count[trie.walk(k)] == c for k, c in want.items())
        assert len(trie) == len(want) + 1


def test_the_speculation_is_best_first_by_count_ratios_and_stops_at_min_prob():
    trie = SuffixTrie(8)
    for seq in ([[1, 2, 3]] * 6 + [[1, 4, 5]] * 3 + [[1, 6]]):
        trie.extend([], seq)
    spec = speculate_tree(trie, trie.walk([1]), 10, 0.25)
    # after 1: 2 (6/10), 4 (3/10); after 2: 3 (6/6); 6 (1/10) is under 0.25
    assert [(t, round(p, 3)) for t, _, p in spec] == [(2, 0.6), (3, 0.6), (4, 0.3), (5, 0.3)]
    assert [at for _, at, _ in spec] == [-1, 0, -1, 2]
    assert len(speculate_tree(trie, trie.walk([1]), 2, 0.25)) == 2


def test_the_draft_is_at_most_spec_factor_times_the_match():
    s = DecodeSettings(suffix_depth=8, suffix_spec_factor=1.0, suffix_min_prob=0.0)
    trie = SuffixTrie(8)
    trie.extend([], [9, 8, 1, 2, 3, 4, 5, 6])
    spec = best_speculation([("prompt-tree", trie)], [7, 8, 1], s, 64)
    assert spec.match_len == 2 and [t for t, _, _ in spec.nodes] == [2, 3]


def test_the_output_tree_keeps_its_last_outputs_as_vllm_keeps_requests():
    tree = OutputTree(4, 2, 10**6)
    for i in range(4):
        seq = tree.start()
        seq.append([i] * 10 + list(range(20, 30)))
    assert len(tree.outputs) == 2 and [o.tokens[0] for o in tree.outputs] == [2, 3]
    assert tree.trie.walk([0, 0]) is None and tree.trie.walk([3, 3]) is not None
    assert tree.trie.count[tree.trie.walk([20, 21])] == 2


def test_the_output_tree_drops_the_oldest_finished_outputs_past_its_tokens():
    tree = OutputTree(4, 100, 50)
    for i in range(4):
        seq = tree.start()
        seq.append([i] * 10 + list(range(20, 30)))
        seq.finish()
    assert tree.tokens <= 50 and len(tree.outputs) == 2
    assert tree.trie.walk([0, 0]) is None and tree.trie.walk([3, 3]) is not None


def test_the_token_bound_never_drops_an_output_still_being_written():
    """Only finished outputs go for the token bound: another run's append must not uncount a run
    that still writes (its node ids would be reused under it)."""
    tree = OutputTree(4, 100, 30)
    first, second = tree.start(), tree.start()
    first.append(list(range(20)))
    second.append(list(range(100, 120)))  # 40 tokens, both still writing: both kept
    assert not first.evicted and not second.evicted and tree.tokens == 40
    first.finish()
    second.append([7])
    assert first.evicted and not second.evicted and tree.tokens == 21


def test_the_output_tree_has_no_token_bound_by_default_and_keeps_no_outputs_at_zero_requests():
    assert DecodeSettings().suffix_cache_tokens is None  # vLLM bounds requests only
    tree = OutputTree(4, 0)  # vLLM's max_cached_requests=0: past outputs are not kept
    seq = tree.start()
    seq.append([1, 2, 3])
    assert seq.evicted and not tree.outputs and tree.trie.walk([1]) is None


def test_a_finished_run_lets_its_output_go():
    from types import SimpleNamespace

    from logitspec.drafters.suffix import SuffixDrafter

    drafter = SuffixDrafter.build(DecodeSettings(), SimpleNamespace())
    seq = drafter.output
    assert seq.writing
    del drafter
    assert not seq.writing


def test_the_chain_follows_the_likeliest_child_and_the_tree_branches():
    trie = SuffixTrie(8)
    for seq in ([[1, 2, 3]] * 6 + [[1, 4, 5]] * 3 + [[1, 6]]):
        trie.extend([], seq)
    chain = speculate_chain(trie, trie.walk([1]), 10, 0.25)
    assert [(t, at, round(p, 3)) for t, at, p in chain] == [(2, -1, 0.6), (3, 0, 0.6)]
    tree = speculate_tree(trie, trie.walk([1]), 10, 0.25)
    assert {t for t, _, _ in tree} == {2, 3, 4, 5}


def test_equal_counts_rank_as_arctic_inferences_sibling_lists():
    """A new child goes last among its equals; one counted again goes first among its new equals if it
    led its old ones, else last (arctic-inference's _increment_count); the chain takes the first."""
    trie = SuffixTrie(4)
    for t in (5, 6, 7):
        trie.extend([], [1, t])
    assert [t for t, _ in trie.ranked(trie.walk([1]))] == [5, 6, 7]
    trie.extend([], [1, 7])  # 7 trailed its equals: it leads alone now
    trie.extend([], [1, 6])  # 6 trailed 5 (both 1): it joins 7 at 2, behind it
    assert [t for t, _ in trie.ranked(trie.walk([1]))] == [7, 6, 5]
    trie.remove([1, 7])  # uncounted: first among its new equals, ahead of 5
    assert [t for t, _ in trie.ranked(trie.walk([1]))] == [6, 7, 5]


def test_an_output_evicted_while_its_run_writes_leaves_the_others_counts_whole():
    """A run still writing when newer runs push its output out writes on outside the tree: the
    node ids it held may be reused by the others, and its later tokens must not count there."""
    tree = OutputTree(4, 1, 10**6)
    first = tree.start()
    first.append([1, 2, 3])
    second = tree.start()  # evicts the first, still writing
    second.append([5, 6, 5, 6])
    first.append([5, 6, 7])
    assert first.evicted and tree.trie.walk([1, 2]) is None and tree.trie.walk([6, 7]) is None
    fresh = SuffixTrie(4)
    fresh.extend([], [5, 6, 5, 6])
    for path in ([5], [6], [5, 6], [6, 5], [5, 6, 5], [6, 5, 6]):
        assert tree.trie.count[tree.trie.walk(path)] == fresh.count[fresh.walk(path)], path


@pytest.mark.parametrize("method", ["racer", "suffix", "recycling"])
def test_a_tree_of_branches_draws_each_node_in_a_place_of_its_own_named_by_its_source(method):
    """Every node of a step at its own (depth, lane), and the lanes named by the method's own sources:
    RACER's and SuffixDecoding's trees were drawn in LogitSpec's lanes, every node on a "g1 lookup" row."""
    from helpers.tiny_models import char_lm, tiny_llama
    from logitspec.runner import run_trace
    from visual.tree_lanes import lane_names, node_lanes

    prompt = "abcabcabc the cat sat on the mat, the cat sat on the mat, the cat"
    # a model of its own: SuffixDecoding's output tree is the model's, shared with every later run on it
    lm, settings = char_lm(tiny_llama(seed=0)), DecodeSettings(max_new_tokens=32, tree="static")
    t = run_trace(lm, prompt, method, settings)
    if method == "suffix":  # a random model's text rarely repeats its prompt: the second run drafts from the first's
        t = run_trace(lm, prompt, method, settings)
    drafted = [s for s in t.steps if sum(n.depth > 0 for n in s.tree) > 1]
    assert drafted, method
    for s in drafted:
        lanes = node_lanes(t, s)
        places = [(n.depth, lanes[n.id]) for n in s.tree]
        assert len(places) == len(set(places)), (method, s.index, places)
    names = lane_names(t)
    assert len(names) == max(max(node_lanes(t, s).values()) for s in t.steps) + 1
    assert not any("g1" in n or n.startswith("rank ") for n in names), names

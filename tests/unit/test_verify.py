"""Verification: the acceptance walk, cache compaction, and one tree forward pass against
the same tokens fed one at a time."""
from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, LlamaConfig, MistralConfig

from logitspec.core.loop import prefill
from logitspec.runtime.kvcache import new_cache
from logitspec.core.trace import TreeNode
from logitspec.core.verify import UnsupportedCache, accept_walk, compact_cache, prepare_inputs
from helpers.tiny_models import greedy_reference

pytestmark = pytest.mark.usefixtures("one_thread")

ATOL = 1e-4  # float32 tree batch vs one token at a time: same maths, different rounding


def forward_tree(model, cache, inputs: dict) -> tuple[torch.Tensor, list[int]]:
    """One forward pass over the tree with the full output head: every node's logits and
    argmax (the decoders compute only the rows the walk reads; see LazyHead)."""
    logits = model(**inputs, cache=cache, use_cache=True).logits[0]
    return logits, logits.argmax(dim=-1).tolist()


def hand_tree(spec: list[tuple[int, int]]) -> list[TreeNode]:
    """Nodes from (token, parent) pairs, parents first; depth follows the parents."""
    nodes: list[TreeNode] = []
    for i, (tok, parent) in enumerate(spec):
        depth = 0 if parent < 0 else nodes[parent].depth + 1
        nodes.append(TreeNode(id=i, token=tok, parent=parent, depth=depth, origin="root" if parent < 0 else "g2"))
    return nodes


# ----- the acceptance walk ------------------------------------------------------------------

#        0:10
#       /    \
#    1:11    2:12
#     |      /   \
#    3:13  4:14  5:15
#                 |
#                6:16
TREE = hand_tree([(10, -1), (11, 0), (12, 0), (13, 1), (14, 2), (15, 2), (16, 5)])


@pytest.mark.parametrize("preds, path, bonus", [
    ([99, 0, 0, 0, 0, 0, 0], [0], 99),  # the root's argmax matches no child
    ([11, 13, 0, 77, 0, 0, 0], [0, 1, 3], 77),  # leaf reached: the bonus is the leaf's argmax
    ([12, 0, 15, 0, 0, 16, 5], [0, 2, 5, 6], 5),  # the deepest branch, non-contiguous ids
    ([12, 0, 14, 0, 44, 0, 0], [0, 2, 4], 44),
    ([12, 0, 16, 0, 0, 0, 0], [0, 2], 16),  # 16 exists in the tree but not under node 2
    ([11, 12, 0, 0, 0, 0, 0], [0, 1], 12),  # 12 is a child of the root, not of node 1
])
def test_accept_walk_on_a_hand_made_tree(preds, path, bonus):
    assert accept_walk(TREE, preds) == (path, bonus)


def test_accept_walk_on_the_root_alone():
    assert accept_walk(hand_tree([(3, -1)]), [42]) == ([0], 42)


# ----- cache compaction on known tensors ---------------------------------------------------

def numbered_cache(layers: int, length: int, buffered: bool = False) -> DynamicCache:
    """A cache whose entry at position p holds p in keys and -p - 100*layer in values.

    `buffered`: the decoders' cache (rows written into reserved buffers), else the stock one.
    """
    if buffered:
        cache = new_cache(LlamaConfig(num_hidden_layers=layers, hidden_size=8, num_attention_heads=2,
                                      num_key_value_heads=2), reserve=length)
    else:
        cache = DynamicCache()
    for layer in range(layers):
        pos = torch.arange(length, dtype=torch.float32).view(1, 1, length, 1)
        keys = pos.expand(1, 2, length, 3).clone()
        values = (-pos - 100 * layer).expand(1, 2, length, 3).clone()
        cache.update(keys, values, layer)
    return cache


def kept_positions(cache: DynamicCache) -> list[list[int]]:
    out = []
    for layer_idx, layer in enumerate(cache.layers):
        k = layer.keys[0, :, :, 0]
        v = layer.values[0, :, :, 0]
        assert torch.equal(k[0], k[1]) and torch.equal(v[0], v[1])  # every head alike
        assert torch.equal(v[0], -k[0] - 100 * layer_idx)  # keys and values kept together
        assert layer.keys.shape[-1] == 3
        out.append([int(x) for x in k[0]])
    return out


@pytest.mark.parametrize("context_len, tree_len, path, expected", [
    (4, 6, [0, 2, 5], [0, 1, 2, 3, 4, 6, 9]),  # a branch: gather
    (4, 6, [0, 1, 2], [0, 1, 2, 3, 4, 5, 6]),  # a prefix: crop
    (4, 6, [0], [0, 1, 2, 3, 4]),
    (0, 3, [0, 2], [0, 2]),
    (3, 1, [0], [0, 1, 2, 3]),
])
@pytest.mark.parametrize("buffered", [False, True], ids=["stock", "buffered"])
def test_compact_cache_keeps_context_and_path(context_len, tree_len, path, expected, buffered):
    cache = numbered_cache(layers=3, length=context_len + tree_len, buffered=buffered)
    compact_cache(cache, context_len, path)
    assert kept_positions(cache) == [expected] * 3
    assert cache.get_seq_length() == context_len + len(path)


def test_sliding_window_cache_is_refused():
    cfg = MistralConfig(sliding_window=16, num_hidden_layers=2, hidden_size=32,
                        num_attention_heads=4, num_key_value_heads=2)
    cache = DynamicCache(config=cfg)
    for layer in range(2):
        cache.update(torch.zeros(1, 2, 6, 8), torch.zeros(1, 2, 6, 8), layer)
    with pytest.raises(UnsupportedCache, match="cannot be compacted"):
        compact_cache(cache, 4, [0, 2])


# ----- one tree forward pass on tiny real models ---------------------------------------------

@pytest.fixture(params=["tiny_llama", "tiny_gpt2"])
def tiny(request):
    return request.getfixturevalue(request.param)


PROMPT = [5, 17, 99, 3, 5, 17, 42, 8, 1, 64, 5, 17]


def path_of(nodes: list[TreeNode], i: int) -> list[int]:
    out = []
    while i >= 0:
        out.append(nodes[i].token)
        i = nodes[i].parent
    return out[::-1]


def distracted_tree(greedy: list[int]) -> list[TreeNode]:
    """A tree whose true greedy path is not its first nodes, next to wrong branches.

    greedy[0] is the root; the accepted path should be root -> 2 -> 4 -> 6.
    """
    g = greedy
    wrong = [(t + 1) % 128 for t in g]
    return hand_tree([
        (g[0], -1),
        (wrong[1], 0),  # 1: wrong first draft
        (g[1], 0),  # 2: right
        (g[2], 1),  # 3: under the wrong node (never reached)
        (g[2], 2),  # 4: right
        (wrong[3], 4),  # 5: wrong
        (g[3], 4),  # 6: right
        (wrong[4], 6),  # 7: wrong: the walk stops at 6
    ])


def tree_step(model, cache) -> tuple[list[int], list[TreeNode], torch.Tensor, list[int]]:
    """Prefill PROMPT into `cache` and verify a distracted tree over it in one pass:
    greedy's first tokens, the tree, every node's logits and argmax."""
    greedy = greedy_reference(model, PROMPT, 6)
    nodes = distracted_tree(greedy)
    prefill(model, cache, PROMPT)
    logits, preds = forward_tree(model, cache, prepare_inputs(model, nodes, len(PROMPT)))
    return greedy, nodes, logits, preds


@torch.inference_mode()
def test_tree_logits_equal_each_path_fed_sequentially(tiny):
    _, nodes, logits, preds = tree_step(tiny, DynamicCache(config=tiny.config))
    assert logits.shape == (len(nodes), tiny.config.vocab_size)
    for i in range(len(nodes)):
        ids = torch.tensor([PROMPT + path_of(nodes, i)])
        expected = tiny(input_ids=ids).logits[0, -1]
        torch.testing.assert_close(logits[i], expected, atol=ATOL, rtol=1e-4)
        assert preds[i] == int(expected.argmax())


@torch.inference_mode()
@pytest.mark.parametrize("buffered", [False, True], ids=["stock", "buffered"])
def test_tree_step_leaves_the_cache_of_sequential_decoding(tiny, buffered):
    cache = new_cache(tiny.config, 64) if buffered else DynamicCache(config=tiny.config)
    greedy, nodes, _, preds = tree_step(tiny, cache)
    path, bonus = accept_walk(nodes, preds)
    assert path == [0, 2, 4, 6]
    assert [nodes[i].token for i in path] == greedy[:4]
    assert bonus == greedy[4]
    compact_cache(cache, len(PROMPT), path)

    # The same tokens fed one at a time into a fresh cache.
    ref = DynamicCache(config=tiny.config)
    tiny(input_ids=torch.tensor([PROMPT]), cache=ref, use_cache=True)
    for tok in greedy[:4]:
        tiny(input_ids=torch.tensor([[tok]]), cache=ref, use_cache=True)
    assert cache.get_seq_length() == ref.get_seq_length() == len(PROMPT) + 4
    for mine, theirs in zip(cache.layers, ref.layers):
        torch.testing.assert_close(mine.keys, theirs.keys, atol=ATOL, rtol=1e-4)
        torch.testing.assert_close(mine.values, theirs.values, atol=ATOL, rtol=1e-4)

    # And the next step, taken from the compacted cache, continues greedy decoding.
    nxt = tiny(input_ids=torch.tensor([[bonus]]), cache=cache, use_cache=True).logits[0, -1]
    assert int(nxt.argmax()) == greedy[5]


@torch.inference_mode()
def test_lone_root_is_an_ordinary_causal_step(tiny):
    nodes = hand_tree([(PROMPT[-1], -1)])
    inputs = prepare_inputs(tiny, nodes, len(PROMPT) - 1)
    assert set(inputs) == {"input_ids"}
    cache = DynamicCache(config=tiny.config)
    prefill(tiny, cache, PROMPT[:-1])
    logits, preds = forward_tree(tiny, cache, inputs)
    expected = tiny(input_ids=torch.tensor([PROMPT])).logits[0, -1]
    torch.testing.assert_close(logits[0], expected, atol=ATOL, rtol=1e-4)
    assert preds == [int(expected.argmax())]


@torch.inference_mode()
def test_verify_tree_walks_and_returns_the_next_logits(tiny):
    """The decoders' verification call: path, bonus and the logits row after the path."""
    from logitspec.core.verify import verify_tree

    greedy = greedy_reference(tiny, PROMPT, 6)
    nodes = distracted_tree(greedy)
    cache = DynamicCache(config=tiny.config)
    prefill(tiny, cache, PROMPT)
    path, bonus, row = verify_tree(tiny, cache, nodes, prepare_inputs(tiny, nodes, len(PROMPT)))
    assert path == [0, 2, 4, 6] and bonus == greedy[4]
    expected = tiny(input_ids=torch.tensor([PROMPT + greedy[:4]])).logits[0, -1]
    torch.testing.assert_close(row, expected, atol=ATOL, rtol=1e-4)


def test_accept_walk_takes_a_function():
    calls = []

    def pred(i: int) -> int:
        calls.append(i)
        return {0: 12, 2: 14, 4: 7}[i]

    assert accept_walk(TREE, pred) == ([0, 2, 4], 7)
    assert set(calls) == {0, 2, 4}  # only the nodes the walk visits


@torch.inference_mode()
@pytest.mark.parametrize("rows", [1, 2, 3, 8])
def test_padding_the_head_batch_changes_nothing_but_where_leaves_are_computed(tiny, rows):
    """A root with one right leaf: with a padded first batch the leaf needs no second call."""
    from logitspec.core.verify import LazyHead

    greedy = greedy_reference(tiny, PROMPT, 3)
    nodes = hand_tree([(greedy[0], -1), (greedy[1], 0)])
    cache = DynamicCache(config=tiny.config)
    prefill(tiny, cache, PROMPT)
    hidden = tiny.base_model(**prepare_inputs(tiny, nodes, len(PROMPT)), cache=cache,
                             use_cache=True).last_hidden_state[0]
    head = LazyHead(tiny, hidden, nodes, rows)
    path, bonus = accept_walk(nodes, head.argmax)
    assert path == [0, 1] and bonus == greedy[2]
    assert (1 in head.row_of) == (rows >= 2)
    assert (1 in head.extra) == (rows < 2)  # the leaf's row came from a second call only unpadded
    expected = tiny(input_ids=torch.tensor([PROMPT + greedy[:2]])).logits[0, -1]
    torch.testing.assert_close(head.row(1), expected, atol=ATOL, rtol=1e-4)


def test_head_batch_rows_is_measured_within_its_bounds(monkeypatch):
    from helpers.tiny_models import tiny_llama
    from logitspec.core.profile import profile_of
    from logitspec.core.verify import head_batch_rows, measure_head_batch_rows

    model = tiny_llama(seed=11)
    assert 1 <= measure_head_batch_rows(model, max_rows=4, rounds=2) <= 4
    monkeypatch.setenv("LOGITSPEC_MEASURE_CURVES", "1")
    monkeypatch.setattr("logitspec.core.verify.measure_head_batch_rows", lambda m: 3)
    assert head_batch_rows(model) == 3 and profile_of(model).head_rows == 3  # measured once, then kept


def test_head_batch_rows_is_fixed_where_nothing_may_be_timed(monkeypatch):
    """The rows computed change what Token Recycling learns: an untimed run sizes them alike anywhere."""
    from helpers.tiny_models import tiny_llama
    from logitspec.core import verify
    from logitspec.runtime import UNTIMED_HEAD_ROWS

    monkeypatch.setenv("LOGITSPEC_MEASURE_CURVES", "0")
    monkeypatch.setattr(verify, "measure_head_batch_rows", lambda m: pytest.fail("timed the head"))
    assert verify.head_batch_rows(tiny_llama(seed=12)) == UNTIMED_HEAD_ROWS


class NoLogitsToKeep(torch.nn.Module):
    """A causal LM whose forward has no `logits_to_keep` (as some hub model classes)."""

    def __init__(self, inner) -> None:
        super().__init__()
        self.inner = inner
        self.device = inner.device

    def forward(self, input_ids, cache=None, use_cache=False):
        return self.inner(input_ids=input_ids, cache=cache, use_cache=use_cache)


@torch.inference_mode()
def test_prefill_returns_the_last_logits_with_or_without_logits_to_keep(tiny):
    full = tiny(input_ids=torch.tensor([PROMPT])).logits[0, -1]
    for model in (tiny, NoLogitsToKeep(tiny)):
        cache = DynamicCache(config=tiny.config)
        torch.testing.assert_close(prefill(model, cache, PROMPT), full, atol=ATOL, rtol=1e-4)
        assert cache.get_seq_length() == len(PROMPT)  # the prompt is cached once, not twice


def test_the_head_batch_takes_inner_nodes_then_leaves_worth_a_row():
    """Root and inner nodes always; leaves likeliest first up to the rows, each only if its
    chance beats LEAF_WORTH; a leaf of unknown chance (a prompt-lookup chain's) while rows last."""
    from logitspec.core.tree import TreeIndex
    from logitspec.core.verify import LEAF_WORTH, first_batch

    def tree(chances):  # a root with one inner node (1), then leaves 2.. under it
        nodes = [TreeNode(id=0, token=0, parent=-1, depth=0, origin="root"),
                 TreeNode(id=1, token=1, parent=0, depth=1, origin="g1", accept_prob=0.9)]
        nodes += [TreeNode(id=2 + i, token=2 + i, parent=1, depth=2, origin="g2", accept_prob=p)
                  for i, p in enumerate(chances)]
        return nodes, TreeIndex.of(nodes)

    nodes, index = tree([0.1, LEAF_WORTH / 2, 0.4, LEAF_WORTH])
    assert first_batch(nodes, index, 1) == [0, 1]  # inner nodes even past the rows
    assert first_batch(nodes, index, 3) == [0, 1, 4]  # the likeliest leaf first
    assert first_batch(nodes, index, 5) == [0, 1, 2, 4, 5]
    assert first_batch(nodes, index, 16) == [0, 1, 2, 4, 5]  # never a leaf under LEAF_WORTH
    chain, index = tree([None])
    assert first_batch(chain, index, 3) == [0, 1, 2]
    assert first_batch(chain, index, 2) == [0, 1]


def test_head_batch_rows_ignore_one_slow_sample_and_a_round_under_load(tiny_llama, monkeypatch):
    """The count is read off median ratios: one slow sample of two rows (which stopped the
    count at one row before) and a round slowed throughout by other work move nothing."""
    from logitspec.core import verify

    rounds = [0]

    def fake_time(head, x):
        m = x.shape[0]
        rounds[0] += m == 1  # each round times one row first
        load = 3.0 if rounds[0] == 3 else 1.0
        cost = 5.0 if (rounds[0], m) == (2, 2) else 1.0 if m <= 6 else 2.0
        return load * cost

    monkeypatch.setattr(verify, "_time_head", fake_time)
    assert verify.measure_head_batch_rows(tiny_llama, max_rows=10, rounds=5) == 6
    assert verify.measure_head_batch_rows(tiny_llama, max_rows=4, rounds=5) == 4

"""Verification: one forward pass over the draft tree, the greedy acceptance walk, and
compaction of the KV cache down to the accepted path."""
from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from transformers import Cache, PreTrainedModel

from .profile import profile_of
from .families import FULL, SLIDING, attention_layout
from ..runtime.kvcache import COMPACTABLE
from .processors import Processing
from .sampling import Lead, leads_of, perturbed, probabilities
from .trace import TreeNode
from ..runtime import UNTIMED_HEAD_ROWS, measuring_allowed
from ..runtime.fixedshape import fixed_rows, pad_rows
from .tree import TreeIndex, layered_tree_inputs


class UnsupportedCache(RuntimeError):
    """The model's cache cannot be compacted (e.g. the stock sliding-window layers)."""


def pad_nodes(nodes: list[TreeNode], rows: int) -> list[TreeNode]:
    """`nodes` and then leaves under the root up to `rows` in all (the root's token: any would do)."""
    root = nodes[0]
    return nodes + [TreeNode(len(nodes) + i, root.token, 0, 1, "root") for i in range(rows - len(nodes))]


def prepare_inputs(model: PreTrainedModel, nodes: Sequence[TreeNode],
                   context_len: int) -> dict[str, torch.Tensor | dict]:
    """Model inputs for the verified nodes (T of them): `input_ids` [1, T], and for a real
    tree `position_ids` [1, T] and the additive `attention_mask` [1, 1, T, context + T].

    A model with sliding-window layers gets their own, narrower mask (see tree.window_mask);
    one with both kinds of layer gets a dict {layer type: mask}, which such models use as given.
    """
    device = model.device
    if (rows := fixed_rows(model)) is not None and len(nodes) < rows:
        nodes = pad_nodes(list(nodes), rows)  # one shape for every pass (runtime/fixedshape.py)
    if len(nodes) == 1:
        # A lone root needs no mask: the ordinary causal step, the very call vanilla makes.
        return {"input_ids": torch.tensor([[nodes[0].token]], dtype=torch.long, device=device)}
    layout = attention_layout(model)
    if not layout.sliding:
        windows: tuple[int | None, ...] = (None,)
    elif layout.mixed:
        windows = (None, layout.window)
    else:
        windows = (layout.window,)
    ids, pos, masks = layered_tree_inputs(nodes, context_len, model.dtype, device, windows)
    mask = {FULL: masks[None], SLIDING: masks[layout.window]} if layout.mixed else masks[windows[0]]
    return {"input_ids": ids, "position_ids": pos, "attention_mask": mask}


def accept_walk(nodes: Sequence[TreeNode], preds: Sequence[int] | Callable[[int], int],
                index: TreeIndex | None = None) -> tuple[list[int], int]:
    """Walk from the root while the model's argmax at a node is one of its children.

    `preds` gives each node's argmax (a list, or a function computing it on demand).
    Returns the accepted node ids (root first) and the bonus token: the argmax after the
    last accepted node, which is exactly what greedy decoding would emit next. With
    sampling, `preds` gives the token drawn at each node (the argmax over its perturbed
    logits), and the walk is the same. `index`: the nodes' TreeIndex, if already built.
    """
    pred = preds if callable(preds) else preds.__getitem__
    child = (index if index is not None else TreeIndex.of(nodes)).child
    path = [0]
    while True:
        nxt = child.get((path[-1], pred(path[-1])))
        if nxt is None:
            return path, int(pred(path[-1]))
        path.append(nxt)


def head_logits(model: PreTrainedModel, hidden: torch.Tensor,
                head: torch.nn.Module | None = None) -> torch.Tensor:
    """Logits [n, V] from final hidden states [n, d]: the output head and what the model's own
    forward does after it (Cohere's logit_scale, Granite's logits_scaling, Gemma's soft cap),
    so a tree step samples from the very distribution a plain step does."""
    cfg = model.config.get_text_config(decoder=True)
    logits = (head or model.get_output_embeddings())(hidden)
    if getattr(cfg, "logit_scale", None) is not None:
        logits = logits * cfg.logit_scale
    if getattr(cfg, "logits_scaling", None):
        logits = logits / cfg.logits_scaling
    softcap = getattr(cfg, "final_logit_softcapping", None)
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    return logits


@torch.inference_mode()
def head_matches_forward(model: PreTrainedModel, tokens: int = 4) -> bool:
    """Whether `head_logits` over the base model's hidden states gives the model's own logits,
    on a few tokens: a model that transforms its logits some other way is caught at load."""
    vocab = int(model.config.get_text_config(decoder=True).vocab_size)
    ids = torch.arange(1, tokens + 1, device=model.device).unsqueeze(0) % vocab  # [1, tokens]
    want = model(input_ids=ids).logits[0].float()
    got = head_logits(model, model.base_model(input_ids=ids).last_hidden_state[0]).float()
    return bool(torch.allclose(got, want, rtol=1e-3, atol=1e-3 * float(want.abs().max()) + 1e-5))


class LazyHead:
    """Node logits computed only where the acceptance walk may need them.

    The output projection (hidden -> vocabulary) is a large share of a small model's cost
    per token. The walk needs the argmax of every node it visits, and it can only move on
    from a node with children; so the head runs at once, in one batch, for the root and
    every inner node, and for a leaf only if the walk arrives there (then it ends).

    The first batch is padded with leaves up to `rows` (`first_batch`, `head_batch_rows`):
    on a small model the head reads its weights once for a dozen rows at little more than
    the cost of one, while a leaf the walk reaches later costs a second full read of them.

    With a `processing` that samples or holds logits processors, `choose` processes a node's
    row with the node's own prefix (`context`, then the path from the root to the node) and,
    when sampling, draws the token at its child's absolute position (context_len + depth + 1)
    with that position's noise (see sampling.py, processors.py). Only the nodes the walk visits
    are processed: one choice per position, as plain decoding makes.

    `hidden`: the final hidden states of the verified nodes, [T, d]; logits rows are [V].
    `index`: the nodes' TreeIndex, if already built. `context`: the tokens before the root,
    needed only when processors read prefixes.
    """

    def __init__(self, model: PreTrainedModel, hidden: torch.Tensor, nodes: Sequence[TreeNode], rows: int = 1,
                 processing: Processing | None = None, context_len: int = 0, index: TreeIndex | None = None,
                 context: Sequence[int] = ()) -> None:
        self.head = model.get_output_embeddings()
        self.hidden = hidden
        self.index = index if index is not None else TreeIndex.of(nodes)
        inner = first_batch(nodes, self.index, rows)
        self.row_of = {node: i for i, node in enumerate(inner)}
        self.model = model
        self.fixed = fixed_rows(model)  # the head's rows padded to one count, where passes are
        self.logits = self._logits(hidden[inner])
        self.processing = processing or Processing()
        self.rule, self.context_len, self.context = self.processing.rule, context_len, context
        self.nodes = nodes
        # Plain greedy: the step's one host sync. Otherwise each visited node is processed on its own.
        self.fast = self.rule is None and self.processing.plain
        self.preds = self.logits.argmax(dim=-1).tolist() if self.fast else []
        self.extra: dict[int, torch.Tensor] = {}
        self.chosen: dict[int, int] = {}  # node -> the token the walk took after it
        self.processed: dict[int, torch.Tensor] = {}  # node -> its processed row [V], unless fast
        self.scores: dict[int, torch.Tensor] = {}  # node -> the scores its token maximised [V], unless fast

    def row(self, node: int) -> torch.Tensor:
        """The logits after `node`, [V]."""
        if node in self.row_of:
            return self.logits[self.row_of[node]]
        if node not in self.extra:
            self.extra[node] = self._logits(self.hidden[node : node + 1])[0]
        return self.extra[node]

    def rows(self, nodes: Sequence[int]) -> torch.Tensor:
        """The logits after each of `nodes`, [m, V]; those not yet computed in one batch."""
        missing = [n for n in dict.fromkeys(nodes) if n not in self.row_of and n not in self.extra]
        step = self.fixed or len(missing) or 1
        for i in range(0, len(missing), step):  # a fixed-shape head takes at most its row count at once
            part = missing[i : i + step]
            self.extra.update(zip(part, self._logits(self.hidden[part])))
        return torch.stack([self.row(n) for n in nodes])

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.fixed is None:
            return head_logits(self.model, hidden, self.head)
        return head_logits(self.model, pad_rows(hidden, self.fixed), self.head)[: hidden.shape[0]]

    def argmax(self, node: int) -> int:
        if node in self.row_of and self.fast:
            return self.preds[self.row_of[node]]
        return int(self.row(node).argmax())

    def position(self, node: int) -> int:
        """The absolute position of the token drawn after `node`: its child's."""
        return self.context_len + self.index.depth[node] + 1

    def prefix(self, node: int) -> list[int]:
        """The tokens before the one drawn after `node`: the context, then the root's path to `node`."""
        path = []
        while node >= 0:
            path.append(self.nodes[node].token)
            node = self.index.parent[node]
        return [*self.context, *reversed(path)]

    def choose(self, node: int) -> int:
        """The token after `node`: the argmax (greedy) or the draw at its child's position,
        over its row processed with its own prefix."""
        if node not in self.chosen:
            if self.fast:
                self.chosen[node] = self.argmax(node)
            else:
                z = self.processed[node] = self.processing.scores(self.prefix(node), self.row(node))
                scores = self.scores[node] = z if self.rule is None else perturbed(z, self.position(node), self.rule)
                self.chosen[node] = int(torch.argmax(scores))
        return self.chosen[node]

    def leads(self, nodes: Sequence[int]) -> list[Lead]:
        """The lead of the token the walk took after each of `nodes` over the runner-up."""
        if not nodes:
            return []
        logits = torch.stack([self.row(n) for n in nodes])
        chosen = [self.chosen[n] for n in nodes]
        if self.fast:
            return leads_of(logits, chosen)
        return leads_of(torch.stack([self.scores[n] for n in nodes]), chosen, logits, self.processing.temperature)

    def child_probs(self, nodes: Sequence[TreeNode]) -> dict[int, float]:
        """node id -> the probability its parent's distribution gave it, for the children of
        the nodes the walk visited (the only ones whose distribution was computed)."""
        out: dict[int, float] = {}
        for parent in self.chosen:
            children = self.index.children.get(parent)
            if not children:
                continue
            z = self.processed.get(parent)
            probs = torch.softmax(z, dim=-1) if z is not None else probabilities(self.row(parent), None)
            values = probs[[nodes[c].token for c in children]].tolist()
            out.update((c, round(float(v), 6)) for c, v in zip(children, values))
        return out


@dataclass
class WalkLog:
    """What the acceptance walk saw: the token taken after each visited node (path order),
    and the target's probability of each drafted child of a visited node."""

    sampled: list[int] = field(default_factory=list)
    leads: list[Lead] = field(default_factory=list)  # each sampled token's lead over the runner-up
    child_prob: dict[int, float] = field(default_factory=dict)
    head: LazyHead | None = None  # the pass's logits, for a drafter that recycles them (core/loop.py)


# A leaf's chance of ending the walk, above which it is worth a row of the head's first
# batch: a row there adds ~0.1 ms, a second batch for the leaf ~4 ms (docs/performance.md).
LEAF_WORTH = 0.03
HEAD_SLACK = 1.5  # the first batch may cost this many times one row


def first_batch(nodes: Sequence[TreeNode], index: TreeIndex, rows: int) -> list[int]:
    """The node ids whose logits the head computes at once: the root and every inner node
    (the walk can only move on from a node with children), then leaves up to `rows` in all,
    likeliest first, each only if its chance of being reached beats LEAF_WORTH. A leaf of
    unknown chance (prompt lookup's chain, the paper's static tree) is taken while rows
    are left."""
    first = {0} | set(index.children)
    if len(first) < rows:
        leaves = sorted((n for n in nodes if n.id not in first), key=lambda n: (-_chance(n), n.id))
        first.update(n.id for n in leaves[: rows - len(first)] if _chance(n) >= LEAF_WORTH)
    return sorted(first)


def _chance(node: TreeNode) -> float:
    return 1.0 if node.accept_prob is None else node.accept_prob


_HEAD_LOCK = threading.Lock()


@torch.inference_mode()
def measure_head_batch_rows(model: PreTrainedModel, max_rows: int = 16, rounds: int = 6,
                            slack: float = HEAD_SLACK) -> int:
    """The most rows the output head maps to logits within `slack` times the cost of one row.

    Times the head alone on this device, every row count once per round, and holds each
    count against one row timed in the same round, so load from other work slows both
    sides of a ratio alike. The count is the largest whose median ratio, and every smaller
    count's, is within `slack`: one slow sample no longer stops the count at one row.
    """
    head = model.get_output_embeddings()
    width = head.weight.shape[1]
    device, dtype = head.weight.device, head.weight.dtype
    ratios: dict[int, list[float]] = {m: [] for m in range(2, max_rows + 1)}
    xs = {m: torch.randn(m, width, device=device, dtype=dtype) for m in range(1, max_rows + 1)}
    for r in range(rounds + 1):  # round 0 warms up
        secs = {m: _time_head(head, x) for m, x in xs.items()}
        if r:
            for m in ratios:
                ratios[m].append(secs[m] / secs[1])
    rows = 1
    while rows < max_rows and statistics.median(ratios[rows + 1]) <= slack:
        rows += 1
    return rows


def _time_head(head: torch.nn.Module, x: torch.Tensor) -> float:
    return seconds_of(x.device, lambda: head(x))


def seconds_of(device: torch.device, fn: Callable[[], object]) -> float:
    """Wall seconds of fn(), with an accelerator's queued work finished on both sides."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t


def head_batch_rows(model: PreTrainedModel) -> int:
    """`measure_head_batch_rows` for this model, measured once and cached (UNTIMED_HEAD_ROWS
    where nothing may be timed: the rows computed change what Token Recycling learns)."""
    with _HEAD_LOCK:
        prof = profile_of(model)
        if prof.head_rows is None:
            prof.head_rows = measure_head_batch_rows(model) if measuring_allowed() else UNTIMED_HEAD_ROWS
        return prof.head_rows


@torch.inference_mode()
def verify_tree(model: PreTrainedModel, cache: Cache, nodes: Sequence[TreeNode], inputs: dict,
                head_rows: int = 1, processing: Processing | None = None, context_len: int = 0,
                log: WalkLog | None = None, context: Sequence[int] = ()) -> tuple[list[int], int, torch.Tensor]:
    """Verify the tree in one forward pass and walk it.

    Returns the accepted path, the bonus token and next_logits: [V], the logits after the
    last accepted node (where the next step's speculation reads its candidates).
    `head_rows`: the rows the head's first batch is padded to with leaves (`first_batch`).
    `processing` applies logits processors and samples instead of taking the argmax;
    `context_len` places the nodes' positions then and `context` (its tokens) begins each
    node's prefix. `log`, if given, is filled with what the walk saw.
    """
    hidden = model.base_model(**inputs, cache=cache, use_cache=True).last_hidden_state[0]  # [T, d]
    index = TreeIndex.of(nodes)
    head = LazyHead(model, hidden, nodes, head_rows, processing, context_len, index, context)
    path, bonus = accept_walk(nodes, head.choose, index)
    if log is not None:
        log.sampled = [head.chosen[n] for n in path]
        log.leads = head.leads(path)
        log.child_prob = head.child_probs(nodes)
        log.head = head
    return path, bonus, head.row(path[-1])


def trial_pass(model: PreTrainedModel, cache: Cache, nodes: Sequence[TreeNode], context_len: int,
               head_rows: int) -> float:
    """Seconds of one verification pass of `nodes` over the first `context_len` cached
    tokens, the cache left as it was: for timing passes (c(n), the thread count)."""
    inputs = prepare_inputs(model, nodes, context_len)
    seconds = seconds_of(model.device, lambda: verify_tree(model, cache, nodes, inputs, head_rows))
    crop_cache(cache, context_len)
    return seconds


def crop_cache(cache: Cache, length: int) -> None:
    """Drop every cached entry past `length` (undoes a forward pass that failed midway)."""
    for layer in cache.layers:
        if getattr(layer, "keys", None) is not None and layer.keys.dim() == 4:
            layer.keys = layer.keys[..., :length, :]
            layer.values = layer.values[..., :length, :]


@torch.inference_mode()
def compact_cache(cache: Cache, context_len: int, path: Sequence[int]) -> None:
    """Keep the cached context plus the accepted path's entries, drop the rest.

    The path's entries move down in place, next to the context (a few rows per layer);
    the cache is then cut to length. When the path is the first nodes in order (always
    so for a chain) nothing moves at all.
    """
    keep_n = context_len + len(path)
    moved = [(j, p) for j, p in enumerate(path) if p != j]
    src = dst = None
    if moved:
        device = cache.layers[0].keys.device
        src = torch.tensor([context_len + p for _, p in moved], dtype=torch.long, device=device)
        dst = torch.tensor([context_len + j for j, _ in moved], dtype=torch.long, device=device)
    for layer in cache.layers:
        if type(layer) not in COMPACTABLE:
            raise UnsupportedCache(f"cache layer {type(layer).__name__} cannot be compacted")
        if not getattr(layer, "is_initialized", True) or layer.keys is None:
            continue
        if moved:
            # index_select copies the sources first, so overlapping rows cannot clobber.
            layer.keys.index_copy_(-2, dst, layer.keys.index_select(-2, src))
            layer.values.index_copy_(-2, dst, layer.values.index_select(-2, src))
        layer.keys = layer.keys[..., :keep_n, :]
        layer.values = layer.values[..., :keep_n, :]

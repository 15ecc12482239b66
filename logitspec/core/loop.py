"""The decode loop: prefill, then one step per forward pass that reads as the paper: speculate,
retrieve, build the tree (the drafter), verify and accept (verify.py).

Every decoder shares this loop, the prefill, the verification and the acceptance, so they race
on equal terms and stay lossless; only the drafter differs (drafter.py, logitspec/drafters/).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from transformers import Cache, LogitsProcessor, PreTrainedModel

from ..runtime.kvcache import new_cache
from ..runtime.prefills import PrefillStore
from ..runtime.tuner import ThreadTuner, thread_tuner
from .drafter import Draft, Drafter
from .errors import DecodeError
from .processors import Processing, processing_for
from .profile import profile_of
from .retrieval import NgramPool
from .sampling import Lead
from .settings import DecodeSettings
from .trace import StepRecord, TreeNode
from .tree import chain_tree
from .verify import (LazyHead, WalkLog, compact_cache, crop_cache, head_batch_rows, head_logits, prepare_inputs,
                     trial_pass, verify_tree)

PROMPT_ROW_BLOCK = 2**24  # logits elements the prompt's rows are computed in at once (64 MiB in float32)


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


def decode_run(
    model: PreTrainedModel,
    prompt: Sequence[int],
    drafter: Drafter,
    s: DecodeSettings,
    eos_ids: Sequence[int] = (),
    on_prefill: Callable[[float, bool], None] | None = None,
    processors: Sequence[LogitsProcessor] | None = None,
) -> Iterator[StepRecord]:
    """The decode loop with `drafter`, one StepRecord per forward pass: prefill, then steps
    until `max_new_tokens` or EOS (see decoders.decode, which picks the drafter by method)."""
    method = drafter.method
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
    logits, seconds, reused, hidden = prefill_once(model, run.cache, prompt, s.share_prefill)
    t0 = time.perf_counter()
    hear_prompt(drafter, model, prompt, hidden)  # charged to the prefill, as a prefill computing them pays
    # The first new token sits at position len(prompt).
    root, lead = run.processing.choose_with_lead(prompt, logits, len(prompt))
    if on_prefill:
        on_prefill(seconds + time.perf_counter() - t0, reused)
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


def prefill_once(model: PreTrainedModel, cache: Cache, prompt: Sequence[int], share: bool
                 ) -> tuple[torch.Tensor, float, bool, torch.Tensor | None]:
    """The prompt's prefill into the empty `cache`: copied from the model's store when an earlier
    run of the same prompt kept one (`share`), else computed, and then kept. Returns the last
    position's logits: [V], the measured seconds of the pass that computed them, whether they
    were copied, and every position's final hidden state [n, d] (see prefill_states)."""
    prof = profile_of(model)
    if share and prof.prefills is None:
        prof.prefills = PrefillStore()
    store = prof.prefills if share else None
    kept = store.restore(model, prompt, cache) if store else None
    if kept is not None:
        return kept.logits.clone(), kept.seconds, True, kept.hidden
    t0 = time.perf_counter()
    logits, hidden = prefill_states(model, cache, prompt)
    seconds = time.perf_counter() - t0
    if store:
        store.keep(model, prompt, cache, logits, seconds, hidden)
    return logits, seconds, False, hidden


def prefill(model: PreTrainedModel, cache: Cache, prompt: Sequence[int]) -> torch.Tensor:
    """Run the prompt through the model; return the last position's logits: [V]."""
    return prefill_states(model, cache, prompt)[0]


@torch.inference_mode()
def prefill_states(model: PreTrainedModel, cache: Cache, prompt: Sequence[int]
                   ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Run the prompt through the model; return the last position's logits: [V], and the base
    model's final hidden state at every position: [n, d] (None for a model with no separate base).
    The hidden states are read from the pass itself: its logits are the ones a plain forward gives."""
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=model.device)  # input_ids: [1, n]
    base, me, seen = getattr(model, "base_model", model), threading.get_ident(), []
    # Only this thread's pass: lanes of a race prefill the shared model at once.
    hook = None if base is model else base.register_forward_hook(
        lambda _m, _i, out: seen.append(out) if threading.get_ident() == me else None)
    try:
        # Only the last position's logits are needed: the head over every position is a large share of a prefill.
        out = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
    except TypeError:  # a model class without the argument: every position's logits
        out = model(input_ids=ids, cache=cache, use_cache=True)
    finally:
        if hook is not None:
            hook.remove()
    states = getattr(seen[-1], "last_hidden_state", None) if seen else None
    return out.logits[0, -1], None if states is None else states[0]


def hear_prompt(drafter: Drafter, model: PreTrainedModel, prompt: Sequence[int], hidden: torch.Tensor | None) -> None:
    """Hand a drafter that stores them (`wants_prompt_rows`) the logits row after every prompt
    position, through `observe_logits` in position order: the head over the prefill's hidden
    states, a block of rows at a time, so a long prompt never holds n x V logits at once."""
    if not drafter.wants_prompt_rows or hidden is None:
        return
    with torch.inference_mode():
        block = max(1, PROMPT_ROW_BLOCK // int(model.get_output_embeddings().weight.shape[0]))
        for i in range(0, len(prompt), block):
            drafter.observe_logits(list(prompt[i:i + block]), head_logits(model, hidden[i:i + block]))


def decode_step(run: Decoding, pool: NgramPool, root: int, root_lead: Lead, logits: torch.Tensor, index: int,
                remaining: int) -> tuple[StepRecord, torch.Tensor, Lead]:
    """One forward pass: speculate, retrieve, build the tree, verify, accept.

    `logits`: [V], the row `root` was taken from, with `root_lead` its lead there. Returns the
    step's record, next_logits: [V], the row after the last accepted token, where the next
    step's speculation reads, and the bonus token's lead in that row.
    Commits at most `remaining` tokens, up to the first EOS; the pool then holds them, and
    the cache too unless the run ends with this step.
    """
    context_len, clock, log = len(pool), StepClock(), WalkLog()
    # The thread count for this step's pass, probed first when due: outside the step's clock.
    tuning = run.tuner.between(lambda: root_pass(run, root, context_len))
    clock.stamp("draft")
    draft = run.drafter.draft(root, logits, pool, context_len)  # speculate, retrieve, build the tree
    verified = [n for n in draft.nodes if not n.pruned]
    clock.stamp("prep")
    path, bonus, next_logits, clock.forward = verify_fitting(run.model, run.cache, verified, context_len,
                                                             run.head_rows, run.processing, log, pool.tokens)  # verify
    clock.stamp("book")
    run.tuner.heard(clock.forward_seconds)
    hear_logits(run.drafter, draft, verified, log)
    tokens, done = accept(run, pool, verified, path, log, remaining, context_len)  # accept: commit the path
    run.drafter.observe(tokens if done else tokens + [bonus], len(verified), clock.forward_seconds, run.tuner.now)
    clock.stamp("end")
    accepted = Accepted(path, tokens, None if done else bonus, log)
    step = record_step(run, index, context_len, root, root_lead, draft, accepted, clock, tuning)
    return step, next_logits, log.leads[len(path) - 1]


@dataclass
class StepClock:
    """A step's stamps (perf_counter): drafting starts, the inputs' preparation starts, the
    forward pass starts (taken inside verify_fitting) and ends, the bookkeeping ends."""

    draft: float = 0.0
    prep: float = 0.0
    forward: float = 0.0
    book: float = 0.0
    end: float = 0.0

    def stamp(self, name: str) -> None:
        setattr(self, name, time.perf_counter())

    def draft_seconds(self, calibration: float) -> float:
        """Drafting, less the one-off measuring of c(n) that happened inside it."""
        return self.prep - self.draft - calibration

    @property
    def forward_seconds(self) -> float:
        return self.book - self.forward

    @property
    def bookkeeping_seconds(self) -> float:
        """Preparing the tree's inputs, and everything after the forward pass."""
        return (self.forward - self.prep) + (self.end - self.book)


@dataclass
class Accepted:
    """What a step committed: the accepted path (node indices), its tokens, the bonus token
    (None when the run ends with this step) and the walk's log."""

    path: list[int]
    tokens: list[int]
    bonus: int | None
    log: WalkLog


def hear_logits(drafter: Drafter, draft: Draft, verified: list[TreeNode], log: WalkLog) -> None:
    """Hand the drafter the logits rows the pass computed anyway, where it listens for them."""
    if drafter.wants_logits and log.head is not None:
        drafter.observe_logits(*computed_rows(log.head, verified))
    if draft.read_rows and log.head is not None:
        read = [i for i in draft.read_rows if i < len(verified)]  # a pass halved for memory verified fewer
        drafter.observe_rows([verified[i] for i in read], log.head.rows(read))


def accept(run: Decoding, pool: NgramPool, verified: list[TreeNode], path: list[int], log: WalkLog,
           remaining: int, context_len: int) -> tuple[list[int], bool]:
    """Commit the accepted path, up to the first EOS and `remaining` tokens: to the pool, and
    to the cache unless the run ends here. Returns the tokens and whether the run ends."""
    for node in verified:
        node.target_prob = log.child_prob.get(node.id)
    tokens, eos_hit = cut_at_eos([verified[i].token for i in path][:remaining], run.eos)
    done = eos_hit or len(tokens) >= remaining
    if not done:
        compact_cache(run.cache, context_len, path)
    pool.extend(tokens)
    return tokens, done


def record_step(run: Decoding, index: int, context_len: int, root: int, root_lead: Lead, draft: Draft,
                accepted: Accepted, clock: StepClock, tuning: float) -> StepRecord:
    """The step's record: what was drafted, what was accepted, and where the time went."""
    tokens, log = accepted.tokens, accepted.log
    # Token i > 0 was taken after path node i - 1; the bonus after the last.
    leads = [root_lead] + log.leads[: len(tokens) - 1]
    return StepRecord(
        index=index, method=run.method, context_len=context_len, root=root, tokens=tokens,
        bonus=accepted.bonus, candidates=draft.candidates, queries=draft.queries,
        tree=draft.nodes, accepted_path=accepted.path[: len(tokens)],
        draft_seconds=clock.draft_seconds(draft.calibration_seconds), forward_seconds=clock.forward_seconds,
        bookkeeping_seconds=clock.bookkeeping_seconds, sizing=draft.sizing,
        root_prob=draft.root_prob, calibration_seconds=draft.calibration_seconds + tuning,
        sampled=log.sampled[: len(tokens)], threads=run.tuner.now if run.model.device.type == "cpu" else None,
        leads=[ld.ulps for ld in leads], runners_up=[ld.runner_up for ld in leads], lookups=draft.lookups,
    )


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

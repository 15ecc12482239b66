"""Token Recycling is lossless as every drafter is: its output equals plain greedy decoding
(or plain sampling with the same seed), token for token, whatever its matrix holds.

On tiny random models of every family that decodes, greedy and sampled, and on the bundled
model (slow); then two mutations: a matrix fed wrong successors stays lossless but accepts
fewer drafts, and a tree mask that lets every node see every other breaks the output. The
hybrid (LogitSpec with the root's recycled successors as more candidates) is checked alike.
"""
from __future__ import annotations

import random
from dataclasses import replace
from functools import cache

import pytest
import torch

import logitspec.core.verify as verify
from helpers.faults import all_visible
from helpers.families import WORKS, prepared
from helpers.lossless_prompts import lossless_prompts
from helpers.references import BUNDLED_MAX_NEW, vanilla_run
from helpers.tiny_models import greedy_reference, repetitive_prompt, sampling_reference
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.drafters.recycling import ORIGIN, SuccessorMatrix
from logitspec.runner import run_trace

pytestmark = [pytest.mark.lossless]

MAX_NEW = 40
TREES = ["static", "cost"]


@cache
def prompts(n: int, length: int = 48) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(repetitive_prompt(random.Random(900 + i), length)) for i in range(n))


def run(model, prompt, s: DecodeSettings, method: str = "recycling") -> tuple[list[int], int, list]:
    """The tokens, the draft tokens accepted (beyond one per pass) and the steps."""
    steps = list(decode(model, list(prompt), method, s))
    tokens = [t for st in steps for t in st.tokens]
    return tokens, len(tokens) - sum(st.forward for st in steps), steps


def fresh(tree: str, **kw) -> DecodeSettings:
    """A run whose matrix starts empty, so runs do not depend on the order tests ran in."""
    return DecodeSettings(max_new_tokens=MAX_NEW, tree=tree, recycle_across_runs=False, **kw)


# ----- tiny families -----------------------------------------------------------------------------

@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("fam", WORKS, ids=lambda f: f.name)
def test_family_recycling_equals_greedy_with_drafts_accepted(fam):
    model = prepared(fam.name)
    accepted = dict.fromkeys(TREES, 0)
    for prompt in prompts(3):
        want = greedy_reference(model, prompt, MAX_NEW)
        for tree in TREES:
            got, extra, steps = run(model, prompt, fresh(tree))
            assert got == want, (fam.name, tree, prompt)
            accepted[tree] += extra
            assert all(n.origin in ("root", ORIGIN) for st in steps for n in st.tree)
    assert all(accepted.values()), accepted  # drafts were accepted: the check is not vacuous


SAMPLING = [
    pytest.param(0.7, 1.0, 0, 21, id="T0.7"),
    pytest.param(1.0, 0.9, 0, 121, id="T1.0-top_p0.9"),
    pytest.param(1.5, 1.0, 20, 1021, id="T1.5-top_k20"),
]


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", ["llama", "gpt2", "gemma3-window16"])
@pytest.mark.parametrize("temperature, top_p, top_k, seed", SAMPLING)
def test_sampled_recycling_equals_plain_sampling(name, temperature, top_p, top_k, seed):
    model = prepared(name)
    accepted = 0
    for i, prompt in enumerate(prompts(3)):
        s = fresh("static", temperature=temperature, top_p=top_p, top_k=top_k, seed=seed + i)
        want = sampling_reference(model, prompt, MAX_NEW, s)
        for tree in TREES:
            got, extra, _ = run(model, prompt, replace(s, tree=tree))
            assert got == want, (name, tree, i)
            accepted += extra
    assert accepted > 0


@pytest.mark.usefixtures("one_thread")
def test_a_matrix_kept_across_runs_changes_no_token(tiny_llama):
    """The hot start (the matrix outliving a run) changes the trees, never the tokens."""
    for prompt in prompts(4):
        want = greedy_reference(tiny_llama, prompt, MAX_NEW)
        for tree in TREES:
            assert run(tiny_llama, prompt, replace(fresh(tree), recycle_across_runs=True))[0] == want


HYBRID = "logitspec+recycling"


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", ["llama", "gpt2", "mistral-window8", "gemma3-window16", "cohere"])
def test_the_hybrid_equals_greedy_and_plain_sampling(name):
    model = prepared(name)
    recycled = 0
    for i, prompt in enumerate(prompts(3)):
        want = greedy_reference(model, prompt, MAX_NEW)
        for tree in TREES:
            got, _, steps = run(model, prompt, fresh(tree), HYBRID)
            assert got == want, (name, tree, i)
            recycled += sum(n.origin == ORIGIN for st in steps for n in st.tree)
        s = fresh("cost", temperature=0.8, seed=40 + i)
        assert run(model, prompt, s, HYBRID)[0] == sampling_reference(model, prompt, MAX_NEW, s), (name, i)
    assert recycled > 0  # recycled candidates were drafted, not only the logits' own


# ----- mutations: the checks are not vacuous ---------------------------------------------------------

def shuffled_update(self: SuccessorMatrix, tokens, logits: torch.Tensor) -> None:
    """A wrong update: each row's successors stored in a random order (the top-k themselves kept)."""
    rng = random.Random(len(self.rows))
    top = torch.topk(logits, self.k, dim=-1).indices.tolist()
    for tok, row in zip(tokens, top):
        rng.shuffle(row)
        self.rows[int(tok)] = tuple(row)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("tree", TREES)
def test_shuffled_successors_stay_lossless_but_accept_fewer_drafts(tiny_llama, monkeypatch, tree):
    cases = prompts(8)
    want = [greedy_reference(tiny_llama, p, MAX_NEW) for p in cases]
    right = sum(run(tiny_llama, p, fresh(tree))[1] for p in cases)
    monkeypatch.setattr(SuccessorMatrix, "update", shuffled_update)
    wrong = 0
    for p, w in zip(cases, want):
        got, extra, _ = run(tiny_llama, p, fresh(tree))
        assert got == w
        wrong += extra
    assert wrong < right, (wrong, right)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("tree", TREES)
def test_a_broken_tree_mask_breaks_recycling(tiny_llama, monkeypatch, tree):
    cases = prompts(6)
    want = [greedy_reference(tiny_llama, p, MAX_NEW) for p in cases]
    monkeypatch.setattr(verify, "layered_tree_inputs", all_visible(verify.layered_tree_inputs))
    differ = sum(run(tiny_llama, p, fresh(tree))[0] != w for p, w in zip(cases, want))
    assert differ >= 2, differ


# ----- the bundled model ----------------------------------------------------------------------------

# Code, a summary, an early EOS and a 1,000-token context; the tiny families catch a broken mask or matrix.
BUNDLED_PROMPTS = [p for p in lossless_prompts() if p.id in ("code-121", "summarization-241", "eos-capital", "long-summary")]


@pytest.mark.slow
@pytest.mark.parametrize("prompt", BUNDLED_PROMPTS, ids=lambda p: p.id)
def test_bundled_recycling_equals_vanilla(bundled, prompt):
    s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW)
    want = vanilla_run(bundled, prompt.text, s).tokens
    for tree in TREES:
        got = run_trace(bundled, prompt.text, "recycling", replace(s, tree=tree))
        assert got.tokens == want, tree


@pytest.mark.slow
def test_bundled_recycling_sampled_equals_vanilla_sampled(bundled):
    s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW, temperature=0.7, seed=5)
    for pid in ("summarization-241",):
        text = next(p.text for p in BUNDLED_PROMPTS if p.id == pid)
        want = vanilla_run(bundled, text, s).tokens
        for tree in TREES:
            assert run_trace(bundled, text, "recycling", replace(s, tree=tree)).tokens == want, (pid, tree)
        assert run_trace(bundled, text, HYBRID, s).tokens == want, (pid, HYBRID)


@pytest.mark.slow
@pytest.mark.parametrize("prompt", BUNDLED_PROMPTS[:2], ids=lambda p: p.id)
def test_bundled_hybrid_equals_vanilla(bundled, prompt):
    s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW)
    assert run_trace(bundled, prompt.text, HYBRID, s).tokens == vanilla_run(bundled, prompt.text, s).tokens

"""The first promise: every decoder's output is greedy decoding's output, token for token.

On the bundled model (float32) over prompts of many kinds, and on tiny random models of two
position schemes (rotary Llama, learned-position GPT-2) over many repetitive prompts.
"""
from __future__ import annotations

import random
from functools import cache

import pytest
import torch

from helpers.lossless_prompts import LosslessPrompt, lossless_prompts
from helpers.references import BUNDLED_MAX_NEW, vanilla_run
from helpers.tiny_models import greedy_reference, repetitive_prompt
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.runner import run_trace
from logitspec.core.trace import RunTrace

pytestmark = pytest.mark.lossless

TREES = ["static", "cost"]

MAX_NEW = BUNDLED_MAX_NEW
PROMPTS = lossless_prompts()
PROMPT_BY_ID = {p.id: p for p in PROMPTS}

# (id, method, tree mode) raced against vanilla.
VARIANTS = [("pld", "pld", "static"), ("logitspec-static", "logitspec", "static"),
            ("logitspec-cost", "logitspec", "cost")]
# Every variant on the prompts that try a decoder's own limits (a 1,000-token context, an answer
# ending on EOS, the copy the drafts are checked to reach), and each other kind on one variant in
# turn: the tiny models below catch a broken mask, positions, window, cache or walk on every
# variant (scripts/mutation_catch.py, docs/testing.md); these runs add the real tokenizer, chat
# template, long context and EOS, which a kind run again on another variant does not.
STATIC_KINDS = {"chat", "long", "code", "translation", "math", "eos", "summarization"}
EVERY_VARIANT = ("long-summary", "eos-capital", "copy-list")
ONE_VARIANT = ("chat-hello", "code-121", "translation-161", "math-111", "summarization-241")
STATIC_PROMPTS = EVERY_VARIANT + ONE_VARIANT
CASES = [pytest.param(PROMPT_BY_ID[pid], method, tree, id=f"{vid}-{pid}") for vid, method, tree in VARIANTS
         for pid in EVERY_VARIANT]
CASES += [pytest.param(PROMPT_BY_ID[pid], *VARIANTS[i % len(VARIANTS)][1:], id=f"{VARIANTS[i % len(VARIANTS)][0]}-{pid}")
          for i, pid in enumerate(ONE_VARIANT)]


# ----- the bundled model ---------------------------------------------------------------------

_runs: dict[tuple[str, str, str], RunTrace] = {}


def bundled_run(lm, prompt: LosslessPrompt, method: str, tree: str = "static") -> RunTrace:
    """One run per (prompt, method, tree) for the whole module; vanilla's is the session's."""
    settings = DecodeSettings(max_new_tokens=MAX_NEW, tree=tree)
    if method == "vanilla":
        return vanilla_run(lm, prompt.text, settings)
    key = (prompt.id, method, tree)
    if key not in _runs:
        _runs[key] = run_trace(lm, prompt.text, method, settings)
    return _runs[key]


@pytest.mark.slow
def test_the_suite_covers_what_it_claims(bundled):
    assert len(PROMPTS) >= 20
    kinds = {p.kind for p in PROMPTS}
    assert STATIC_KINDS <= kinds
    assert STATIC_KINDS <= {PROMPT_BY_ID[pid].kind for pid in STATIC_PROMPTS}
    assert len(bundled.encode_chat(PROMPT_BY_ID["long-summary"].text)) > 1000


@pytest.mark.slow
@pytest.mark.parametrize("prompt, method, tree", CASES)
def test_bundled_equals_vanilla(bundled, prompt, method, tree):
    want = bundled_run(bundled, prompt, "vanilla")
    got = bundled_run(bundled, prompt, method, tree)
    assert got.tokens == want.tokens
    assert len(want.tokens) == MAX_NEW or want.tokens[-1] in bundled.eos_ids
    if method == "logitspec" and tree == "static":
        # The paper's tree always holds top-k candidates: every forward pass verified a draft.
        assert all(len(s.verified_nodes) > 1 for s in got.steps if s.forward)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["vanilla", "logitspec"])
def test_switching_thread_counts_mid_run_changes_no_token(bundled, monkeypatch, method):
    """The thread tuner may move any pass to another count: tokens must not depend on it."""
    from logitspec.runtime import tuner as tuning

    monkeypatch.setattr(tuning, "PROBE_SECONDS", 0.0)  # probe whenever there is a reference
    monkeypatch.setattr(tuning, "WIN", 1e9)  # and let every probe win: the count flips each time
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        t = tuning.reset_thread_tuner(2, fixed=False)
        prompt = PROMPT_BY_ID["code-121"]
        got = run_trace(bundled, prompt.text, method, DecodeSettings(max_new_tokens=MAX_NEW, tree="cost"))
        assert t.switches >= 5 and set(t.passes) == {1, 2}
    finally:
        tuning.reset_thread_tuner(before)
    assert got.tokens == bundled_run(bundled, prompt, "vanilla").tokens


@pytest.mark.slow
def test_eos_prompt_ends_early_on_eos(bundled):
    run = bundled_run(bundled, PROMPT_BY_ID["eos-capital"], "vanilla")
    assert len(run.tokens) < MAX_NEW and run.tokens[-1] in bundled.eos_ids
    assert "Paris" in bundled.decode(run.tokens)
    for method, tree in [("pld", "static")] + [("logitspec", t) for t in TREES]:
        other = bundled_run(bundled, PROMPT_BY_ID["eos-capital"], method, tree)
        assert other.tokens == run.tokens and other.steps[-1].bonus is None


@pytest.mark.slow
def test_speculation_accepts_drafts_somewhere(bundled):
    """Lossless output would be trivial if no draft were ever accepted."""
    for pid in ("copy-list", "summarization-241", "long-summary"):
        run = bundled_run(bundled, PROMPT_BY_ID[pid], "logitspec")
        assert run.mean_accepted_tokens > 1.0, pid


@pytest.mark.slow
@pytest.mark.parametrize("pid", ["chat-hello", "long-summary", "eos-capital"])
def test_vanilla_equals_transformers_generate(bundled, pid):
    prompt = PROMPT_BY_ID[pid]
    ids = torch.tensor([bundled.encode_chat(prompt.text)])
    with torch.inference_mode():
        out = bundled.model.generate(
            ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=MAX_NEW,
            eos_token_id=bundled.eos_ids, pad_token_id=bundled.eos_ids[0],
        )
    assert bundled_run(bundled, prompt, "vanilla").tokens == out[0, ids.shape[1]:].tolist()


# ----- tiny random models: two position schemes ---------------------------------------------

TINY_SETTINGS = [
    pytest.param(DecodeSettings(max_new_tokens=40, tree="static"), id="static"),
    pytest.param(DecodeSettings(max_new_tokens=40, k=4, capacity=6, ngram_sizes=(1, 2), tree="static"),
                 id="static-small"),
    pytest.param(DecodeSettings(max_new_tokens=40, k=128, capacity=128, ngram_sizes=(2, 3, 4, 5),
                                continuation=30, pld_tokens=16, tree="static"), id="static-wide"),
    pytest.param(DecodeSettings(max_new_tokens=40, tree="cost"), id="cost"),
    pytest.param(DecodeSettings(max_new_tokens=40, k=128, capacity=128, continuation=30, tree="cost"),
                 id="cost-wide"),
]


TINY_PROMPTS = 8  # each setting's first prompt already fails on a broken mask, positions, cache or walk


@cache
def tiny_case(n: int) -> list[int]:
    rng = random.Random(1000 + n)
    return repetitive_prompt(rng, rng.randint(1, 80))


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("model_name", ["tiny_llama", "tiny_gpt2"])
@pytest.mark.parametrize("settings", TINY_SETTINGS)
def test_tiny_models_equal_greedy(request, model_name, settings):
    model = request.getfixturevalue(model_name)
    accepted_extra = 0
    for n in range(TINY_PROMPTS):
        prompt = tiny_case(n)
        want = greedy_reference(model, prompt, settings.max_new_tokens)
        for method in ("vanilla", "pld", "logitspec"):
            if method != "logitspec" and settings.tree == "cost":
                continue  # the tree mode only changes LogitSpec
            steps = list(decode(model, prompt, method, settings))
            got = [t for s in steps for t in s.tokens]
            assert got == want, f"{method} on prompt {n}: {prompt}"
            if method == "vanilla":
                assert all(len(s.tokens) == 1 for s in steps)
            else:
                accepted_extra += len(got) - sum(s.forward for s in steps)
    assert accepted_extra > 0  # retrieval matched and drafts were accepted


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("model_name", ["tiny_llama", "tiny_gpt2"])
def test_tiny_models_stop_on_eos(request, model_name):
    model = request.getfixturevalue(model_name)
    prompt = tiny_case(3)
    free = greedy_reference(model, prompt, 30)
    eos = free[len(free) // 2]  # a token greedy will emit: make it the EOS
    want = free[: free.index(eos) + 1]
    assert len(want) < 30
    for method, tree in [("vanilla", "static"), ("pld", "static")] + [("logitspec", t) for t in TREES]:
        settings = DecodeSettings(max_new_tokens=30, tree=tree)
        got = [t for s in decode(model, prompt, method, settings, eos_ids=[eos]) for t in s.tokens]
        assert got == want, (method, tree)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("max_new", [1, 2, 3, 7])
def test_tiny_models_honour_max_new_tokens(tiny_llama, max_new):
    prompt = tiny_case(5)
    want = greedy_reference(tiny_llama, prompt, max_new)
    for method, tree in [("vanilla", "static"), ("pld", "static")] + [("logitspec", t) for t in TREES]:
        steps = list(decode(tiny_llama, prompt, method, DecodeSettings(max_new_tokens=max_new, tree=tree)))
        assert [t for s in steps for t in s.tokens] == want, (method, tree)
        assert steps[-1].bonus is None

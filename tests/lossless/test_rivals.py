"""The rivals published since the paper, RACER and SuffixDecoding, are lossless as every drafter is:
their output equals plain greedy decoding (or plain sampling with the same seed), token for token,
on tiny random models of several families and on the bundled model (slow); a tree mask that lets
every node see every other must break them; and SuffixDecoding's output tree, kept across runs,
drafts a second run of a prompt from the first one's answer."""
from __future__ import annotations

import random
from dataclasses import replace
from functools import cache

import pytest

import logitspec.core.verify as verify
from helpers.faults import all_visible
from helpers.families import prepared
from helpers.lossless_prompts import lossless_prompts
from helpers.references import BUNDLED_MAX_NEW, vanilla_run
from helpers.tiny_models import greedy_reference, repetitive_prompt, sampling_reference
from logitspec.core.profile import fresh_profile
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.drafters.racer import AUTOMATON, COPIED
from logitspec.drafters.suffix import OUTPUT_TREE, PROMPT_TREE
from logitspec.runner import run_trace

pytestmark = [pytest.mark.lossless]

MAX_NEW = 32
METHODS = ["racer", "suffix"]
FAMILIES = ["llama", "gpt2", "gemma3-window16"]  # rotary, learned positions, sliding layers
ORIGINS = {"racer": (AUTOMATON, COPIED), "suffix": (PROMPT_TREE, OUTPUT_TREE)}


@cache
def prompts(n: int, length: int = 48) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(repetitive_prompt(random.Random(900 + i), length)) for i in range(n))


def run(model, prompt, method: str, s: DecodeSettings) -> tuple[list[int], list]:
    steps = list(decode(model, list(prompt), method, s))
    return [t for st in steps for t in st.tokens], steps


def accepted_origins(steps) -> set[str]:
    return {st.tree[i].origin for st in steps for i in st.accepted_path[1:]}


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", FAMILIES)
def test_family_rivals_equal_greedy_and_plain_sampling(name):
    model = prepared(name)
    seen = {m: set() for m in METHODS}
    for i, prompt in enumerate(prompts(2)):
        want = greedy_reference(model, prompt, MAX_NEW)
        sampled = DecodeSettings(max_new_tokens=MAX_NEW, temperature=0.8, top_p=0.95, seed=40 + i)
        want_sampled = sampling_reference(model, prompt, MAX_NEW, sampled)
        for method in METHODS:
            got, steps = run(model, prompt, method, DecodeSettings(max_new_tokens=MAX_NEW))
            assert got == want, (name, method, i)
            seen[method] |= accepted_origins(steps)
            assert run(model, prompt, method, sampled)[0] == want_sampled, (name, method, i, "sampled")
    # drafts of each method were accepted: the check is not vacuous
    assert all(seen[m] & set(ORIGINS[m]) for m in METHODS), seen


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("method", METHODS)
def test_a_broken_mask_breaks_the_rivals(tiny_llama, monkeypatch, method):
    cases = prompts(4)
    want = [greedy_reference(tiny_llama, p, MAX_NEW) for p in cases]
    monkeypatch.setattr(verify, "layered_tree_inputs", all_visible(verify.layered_tree_inputs))
    s = DecodeSettings(max_new_tokens=MAX_NEW)
    differ = sum(run(tiny_llama, p, method, s)[0] != w for p, w in zip(cases, want))
    assert differ >= 2, differ


@pytest.mark.usefixtures("one_thread")
def test_the_output_tree_drafts_a_second_run_from_the_first(tiny_llama):
    """The first run of a prompt drafts from its own text; the second also finds the first's answer
    in the model's output tree: more of its drafts come from there, in fewer passes, same tokens."""
    fresh_profile(tiny_llama)
    prompt = prompts(3)[2]
    s = DecodeSettings(max_new_tokens=40)
    first, steps1 = run(tiny_llama, prompt, "suffix", s)
    second, steps2 = run(tiny_llama, prompt, "suffix", s)
    assert first == second == greedy_reference(tiny_llama, prompt, 40)

    def from_outputs(steps) -> int:
        return sum(st.tree[i].origin == OUTPUT_TREE for st in steps for i in st.accepted_path[1:])

    assert from_outputs(steps2) > from_outputs(steps1) + 10, (from_outputs(steps1), from_outputs(steps2))
    assert sum(st.forward for st in steps2) < sum(st.forward for st in steps1)
    fresh_profile(tiny_llama)
    assert from_outputs(run(tiny_llama, prompt, "suffix", s)[1]) == from_outputs(steps1)  # a fresh profile forgets


# ----- the bundled model ----------------------------------------------------------------------------

BUNDLED_PROMPTS = [p for p in lossless_prompts() if p.id in ("code-121", "summarization-241", "copy-list")]


@pytest.mark.slow
@pytest.mark.parametrize("prompt", BUNDLED_PROMPTS, ids=lambda p: p.id)
def test_bundled_rivals_equal_vanilla(bundled, prompt):
    s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW)
    want = vanilla_run(bundled, prompt.text, s).tokens
    for method in METHODS:
        assert run_trace(bundled, prompt.text, method, s).tokens == want, method


@pytest.mark.slow
def test_bundled_rivals_sampled_equal_vanilla_sampled(bundled):
    s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW, temperature=0.7, seed=5)
    text = BUNDLED_PROMPTS[0].text
    want = vanilla_run(bundled, text, s).tokens
    for method in METHODS:
        assert run_trace(bundled, text, method, replace(s)).tokens == want, method

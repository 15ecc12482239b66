"""The paper's baselines, Lookahead decoding and REST, are lossless as every drafter is: their
output equals plain greedy decoding (or plain sampling with the same seed), token for token.

On tiny random models of several families, greedy and sampled, and on the bundled model
(slow); then mutations: a tree mask that lets every node see every other, and positions that
ignore depth, must break them. REST's datastore on tiny models is made of other runs' text
(the prompts and their greedy continuations), so its drafts are often right.
"""
from __future__ import annotations

import random
from dataclasses import replace
from functools import cache

import pytest

import logitspec.core.verify as verify
from helpers.faults import all_visible, flat_positions
from helpers.families import prepared
from helpers.lossless_prompts import lossless_prompts
from helpers.references import BUNDLED_MAX_NEW, vanilla_run
from helpers.tiny_models import greedy_reference, repetitive_prompt, sampling_reference
from logitspec.drafters import rest
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.drafters.lookahead import POOL, WINDOW
from logitspec.runner import run_trace

pytestmark = [pytest.mark.lossless]

MAX_NEW = 40
METHODS = ["lookahead", "rest"]
FAMILIES = ["llama", "gpt2", "gemma3-window16"]  # rotary, learned positions, sliding layers


@cache
def prompts(n: int, length: int = 48) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(repetitive_prompt(random.Random(700 + i), length)) for i in range(n))


def give_datastore(model, n: int = 3) -> None:
    """REST's datastore for a tiny model: each prompt followed by its greedy continuation."""
    text = []
    for p in prompts(n):
        text += list(p) + greedy_reference(model, p, MAX_NEW)
    rest.attach(model, store=rest.Datastore(text))


def run(model, prompt, method: str, s: DecodeSettings) -> tuple[list[int], int, list]:
    """The tokens, the draft tokens accepted (beyond one per pass) and the steps."""
    steps = list(decode(model, list(prompt), method, s))
    tokens = [t for st in steps for t in st.tokens]
    return tokens, len(tokens) - sum(st.forward for st in steps), steps


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", FAMILIES)
def test_family_baselines_equal_greedy_and_plain_sampling(name):
    model = prepared(name)
    give_datastore(model)
    accepted = dict.fromkeys(METHODS, 0)
    for i, prompt in enumerate(prompts(2)):
        want = greedy_reference(model, prompt, MAX_NEW)
        sampled = DecodeSettings(max_new_tokens=MAX_NEW, temperature=0.8, top_p=0.95, seed=30 + i)
        want_sampled = sampling_reference(model, prompt, MAX_NEW, sampled)
        for method in METHODS:
            got, extra, _ = run(model, prompt, method, DecodeSettings(max_new_tokens=MAX_NEW))
            assert got == want, (name, method, i)
            accepted[method] += extra
            assert run(model, prompt, method, sampled)[0] == want_sampled, (name, method, i, "sampled")
    assert all(accepted.values()), accepted  # drafts were accepted: the check is not vacuous


@pytest.mark.usefixtures("one_thread")
def test_lookahead_window_is_computed_never_accepted(tiny_llama):
    """The window rides in every pass; the accepted path holds the root and pool tokens only."""
    steps = run(tiny_llama, prompts(1)[0], "lookahead", DecodeSettings(max_new_tokens=MAX_NEW))[2]
    assert all(any(n.origin == WINDOW for n in st.tree) for st in steps if st.forward)
    assert any(n.origin == POOL for st in steps for n in st.tree)
    assert all(st.tree[i].origin in ("root", POOL) for st in steps for i in st.accepted_path)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fault", [all_visible, flat_positions], ids=["mask", "positions"])
def test_a_broken_mask_or_position_breaks_the_baselines(tiny_llama, monkeypatch, method, fault):
    give_datastore(tiny_llama, 4)
    cases = prompts(4)
    want = [greedy_reference(tiny_llama, p, MAX_NEW) for p in cases]
    monkeypatch.setattr(verify, "layered_tree_inputs", fault(verify.layered_tree_inputs))
    s = DecodeSettings(max_new_tokens=MAX_NEW)
    differ = sum(run(tiny_llama, p, method, s)[0] != w for p, w in zip(cases, want))
    assert differ >= 2, differ


def test_rest_without_a_datastore_says_so_in_one_line(tiny_gpt2):
    from logitspec.core.errors import DecodeError

    vars(tiny_gpt2).pop(rest.ATTRIBUTE, None)
    with pytest.raises(DecodeError, match="REST has no datastore"):
        next(decode(tiny_gpt2, [1, 2, 3], "rest", DecodeSettings(max_new_tokens=4)))


# ----- the bundled model ----------------------------------------------------------------------------

BUNDLED_PROMPTS = [p for p in lossless_prompts() if p.id in ("code-121", "summarization-241", "copy-list")]
SMALL_CORPUS = 300_000  # characters of the standard library: REST's datastore in seconds, not minutes


@pytest.fixture(scope="module")
def small_store(bundled):
    """A small standard-library datastore for the bundled model, built once for the module."""
    return rest.build_datastore(bundled.tokenizer, SMALL_CORPUS)


@pytest.fixture
def bundled_store(bundled, small_store):
    """The bundled model with the small datastore, its own source restored after."""
    before = vars(bundled.model).get(rest.ATTRIBUTE)
    rest.attach(bundled.model, store=small_store)
    yield bundled
    vars(bundled.model)[rest.ATTRIBUTE] = before


@pytest.mark.slow
@pytest.mark.parametrize("prompt", BUNDLED_PROMPTS, ids=lambda p: p.id)
def test_bundled_baselines_equal_vanilla(bundled_store, prompt):
    s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW)
    want = vanilla_run(bundled_store, prompt.text, s).tokens
    for method in METHODS:
        assert run_trace(bundled_store, prompt.text, method, s).tokens == want, method


@pytest.mark.slow
def test_bundled_baselines_sampled_equal_vanilla_sampled(bundled_store):
    s = DecodeSettings(max_new_tokens=BUNDLED_MAX_NEW, temperature=0.7, seed=5)
    text = BUNDLED_PROMPTS[0].text
    want = vanilla_run(bundled_store, text, s).tokens
    for method in METHODS:
        assert run_trace(bundled_store, text, method, replace(s)).tokens == want, method

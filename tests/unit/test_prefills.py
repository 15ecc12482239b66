"""A prompt's prefill, kept on the model and copied by the next run of the same prompt
(logitspec/runtime/prefills.py): the copy is the computed pass bit for bit, each run keeps its own
cache, a timed run (the bench) pays its own prefill, and a set run forgets a finished prompt's."""
from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

import logitspec.core.loop as loop
from helpers.tiny_models import greedy_reference, tiny_prompts
from logitspec.core.profile import fresh_profile, profile_of
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.runtime.kvcache import new_cache
from logitspec.runtime.prefills import PrefillStore

N = 16


@pytest.fixture
def counted(monkeypatch) -> list[int]:
    """The prompt lengths of the prefills actually computed."""
    seen: list[int] = []
    compute = loop.prefill_states

    def spy(model, cache, prompt):
        seen.append(len(prompt))
        return compute(model, cache, prompt)

    monkeypatch.setattr(loop, "prefill_states", spy)
    return seen


def run(model, prompt, method: str, **kw) -> tuple[list[int], tuple[float, bool]]:
    told: list[tuple[float, bool]] = []
    steps = decode(model, prompt, method, DecodeSettings(max_new_tokens=N, **kw), on_prefill=lambda *a: told.append(a))
    return [t for s in steps for t in s.tokens], told[0]


@pytest.mark.parametrize("family", ["tiny_llama", "tiny_gpt2"])
def test_the_lanes_of_one_prompt_prefill_once_and_each_equals_greedy(request, family, counted, one_thread):
    model = request.getfixturevalue(family)
    fresh_profile(model)
    prompt = tiny_prompts(1)[0]
    want = greedy_reference(model, prompt, N)
    first, (seconds, reused) = run(model, prompt, "vanilla")
    assert first == want and not reused
    (kept,) = profile_of(model).prefills.entries.values()
    assert seconds >= kept.seconds > 0
    for method in ("logitspec", "pld", "recycling", "vanilla"):
        got, (again, reused) = run(model, prompt, method)
        assert got == want and reused, method
        assert again >= kept.seconds  # the pass that ran, and this run's own first choice
    assert counted == [len(prompt)]  # one prefill for five runs


def test_a_copy_is_the_computed_pass_bit_for_bit_and_each_run_owns_its_cache(tiny_llama, one_thread):
    prompt = tiny_prompts(1, 200)[0]
    store = PrefillStore()
    computed = new_cache(tiny_llama.config, 300)
    logits = loop.prefill(tiny_llama, computed, prompt)
    store.keep(tiny_llama, prompt, computed, logits, 0.01)
    copied = new_cache(tiny_llama.config, 5000)  # another run's room: the copy does not depend on it
    kept = store.restore(tiny_llama, prompt, copied)
    assert torch.equal(kept.logits, logits)
    for a, b in zip(computed.layers, copied.layers):
        assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
        assert a.keys.data_ptr() != b.keys.data_ptr()
    copied.layers[0].keys.zero_()  # a run writing its own cache leaves the kept rows as they were
    again = new_cache(tiny_llama.config, 300)
    store.restore(tiny_llama, prompt, again)
    assert torch.equal(again.layers[0].keys, computed.layers[0].keys)


def test_another_prompt_or_dtype_prefills_anew(tiny_llama, counted, one_thread):
    fresh_profile(tiny_llama)
    a, b = tiny_prompts(2)
    run(tiny_llama, a, "vanilla")
    assert not run(tiny_llama, b, "vanilla")[1][1]
    half = type(tiny_llama)(tiny_llama.config).to(torch.bfloat16).eval()
    half.load_state_dict(tiny_llama.state_dict())
    assert not run(half, a, "vanilla")[1][1]
    assert counted == [len(a), len(b), len(a)]


def test_share_prefill_off_computes_every_prefill(tiny_llama, counted, one_thread):
    fresh_profile(tiny_llama)
    prompt = tiny_prompts(1)[0]
    for _ in range(2):
        assert not run(tiny_llama, prompt, "logitspec", share_prefill=False)[1][1]
    assert counted == [len(prompt)] * 2 and profile_of(tiny_llama).prefills is None


def test_the_bench_times_each_run_with_its_own_prefill(tiny_llama, counted, one_thread):
    from logitspec.bench.run import measure
    from helpers.tiny_models import char_lm

    lm = char_lm(tiny_llama)
    fresh_profile(tiny_llama)
    prompt = tiny_prompts(1)[0]
    for method in ("vanilla", "vanilla", "logitspec"):
        measure(lm, prompt, method, DecodeSettings(max_new_tokens=8))
    assert counted == [len(prompt)] * 3


def test_the_oldest_prompt_goes_first_past_the_budget(tiny_llama, one_thread):
    prompts = tiny_prompts(3, 100)
    store = PrefillStore()
    sizes = []
    for p in prompts:
        cache = new_cache(tiny_llama.config)
        store.keep(tiny_llama, p, cache, loop.prefill(tiny_llama, cache, p), 0.01)
        sizes.append(next(reversed(store.entries.values())).nbytes)
    store.clear()
    store.budget = sizes[0] + sizes[1]  # room for two
    for p in prompts:
        cache = new_cache(tiny_llama.config)
        store.keep(tiny_llama, p, cache, loop.prefill(tiny_llama, cache, p), 0.01)
    fresh = new_cache(tiny_llama.config)
    assert store.restore(tiny_llama, prompts[0], fresh) is None
    assert all(store.restore(tiny_llama, p, new_cache(tiny_llama.config)) for p in prompts[1:])


def test_a_cache_with_layers_of_other_kinds_is_never_kept(tiny_llama, one_thread):
    prompt = tiny_prompts(1)[0]
    store = PrefillStore()
    stock = DynamicCache(config=tiny_llama.config)  # stock layers: state this copy does not know
    store.keep(tiny_llama, prompt, stock, loop.prefill(tiny_llama, stock, prompt), 0.01)
    assert not store.entries


def test_where_the_time_went_says_when_the_prefill_was_a_shared_pass():
    import dataclasses

    from helpers.paths import FIXTURES
    from logitspec.core.trace import RunTrace
    from visual.observations import time_breakdown_figure

    own = RunTrace.load(FIXTURES / "writing-81.json.gz")
    for trace, said in ((own, False), (dataclasses.replace(own, prefill_reused=True), True)):
        words = time_breakdown_figure(trace, fit=True).layout.meta["caption"]["subtitle"]
        assert ("one pass shared with an earlier run" in words) == said, words


def test_a_set_shares_a_prompts_prefill_between_its_runs_and_forgets_it_after(tiny_llama, counted, one_thread, tmp_path):
    from helpers.tiny_models import char_lm
    from logitspec.analysis.sets import SetWriter
    from logitspec.runner import run_trace
    from logitspec.workbench import decode_set, set_runs

    lm = char_lm(tiny_llama)
    fresh_profile(tiny_llama)
    raced, other = "the raced prompt, kept", "a prompt of the set alone"
    run_trace(lm, raced, "vanilla", DecodeSettings(max_new_tokens=4))  # a race's lane keeps its prefill
    store = profile_of(tiny_llama).prefills
    questions = [{"question_id": i, "turns": [p]} for i, p in enumerate([other, raced])]
    with SetWriter(tmp_path / "set.jsonl", {}) as w:
        list(decode_set(lm, questions, [other, raced], set_runs("vanilla,pld", {"max_new_tokens": 4}), w))
    # One prefill computed for the set's other prompt (its two runs share it); the raced one was copied.
    assert counted == [len(lm.encode_chat(p)) for p in (raced, other)]
    assert store.holds(tiny_llama, lm.encode_chat(raced)) and not store.holds(tiny_llama, lm.encode_chat(other))
    assert len(store.entries) == 1

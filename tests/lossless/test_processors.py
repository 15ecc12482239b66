"""Logits processors per tree node: each verified node's logits go through generate's
processors with the node's own prefix (the context, then the root's path to the node).

Greedy: every decoder equals `model.generate(do_sample=False, <the same options>)` token for
token, for each option alone and in combination, on several families. Sampling: every decoder
equals the project's own vanilla sampling under the same processors and seed.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from transformers import LogitsProcessor, LogitsProcessorList

from helpers.families import WORKS
from helpers.tiny_models import IdsTokenizer, tiny_prompts
from logitspec.custom_generate import generate as logitspec_generate
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode

pytestmark = [pytest.mark.lossless, pytest.mark.usefixtures("one_thread")]

MAX_NEW = 32
FAMILIES = ["llama", "qwen2-window8", "gemma3-window16", "gpt2"]
# (method, tree): every decoder, the paper's static tree and the cost tree.
DECODERS = [("vanilla", "cost"), ("pld", "cost"), ("logitspec", "static"), ("logitspec", "cost"),
            ("recycling", "cost")]


def greedy_options(plain: list[int], prompt_len: int) -> dict[str, dict]:
    """Each option, set from the plain greedy output so that it changes it."""
    return {
        "repetition_penalty": dict(repetition_penalty=1.3),
        "no_repeat_ngram_size": dict(no_repeat_ngram_size=2),
        "min_new_tokens": dict(min_new_tokens=20, eos_token_id=plain[2]),
        "min_length": dict(min_length=prompt_len + 20, eos_token_id=plain[2]),
        "bad_words_ids": dict(bad_words_ids=[[plain[3]], [plain[5], plain[6]]]),
        "suppress_tokens": dict(suppress_tokens=[plain[1], plain[4]]),
        "begin_suppress_tokens": dict(begin_suppress_tokens=[plain[0]]),
        "sequence_bias": dict(sequence_bias={(plain[2],): -6.0, (plain[6], plain[7]): -20.0}),
        "forced_eos_token_id": dict(forced_eos_token_id=plain[3]),
        "exponential_decay_length_penalty": dict(exponential_decay_length_penalty=(4, 1.6), eos_token_id=plain[9]),
        # A constraint that reads the prefix's last token: never the same token twice in a row.
        "prefix_allowed_tokens_fn": dict(prefix_allowed_tokens_fn=lambda batch, ids: [
            t for t in range(128) if t != int(ids[-1])]),
        "combined": dict(repetition_penalty=1.2, no_repeat_ngram_size=3, min_new_tokens=16, eos_token_id=plain[2],
                         suppress_tokens=[plain[1]]),
        "combined-bias": dict(bad_words_ids=[[plain[3]]], sequence_bias={(plain[4],): -4.0},
                              forced_eos_token_id=plain[0], begin_suppress_tokens=[plain[0]]),
    }


OPTIONS = list(greedy_options(list(range(10)), 0))


def generated(model, ids: torch.Tensor, **kw) -> torch.Tensor:
    return model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=MAX_NEW, **kw)


@pytest.fixture(scope="module")
def models():
    return {f.name: f.build() for f in WORKS if f.name in FAMILIES}


def families_for(option: str) -> list[str]:
    """Two families in turn for one option, every family for a combination: the per-node
    processing is the loop's, not a family's, and each family still meets several options."""
    if option.startswith("combined"):
        return FAMILIES
    i = OPTIONS.index(option)
    return [FAMILIES[i % len(FAMILIES)], FAMILIES[(i + 1) % len(FAMILIES)]]


@pytest.mark.parametrize("option", OPTIONS)
def test_every_decoder_equals_greedy_generate_with_the_option(models, option):
    changed = 0
    for name in families_for(option):
        model = models[name]
        ids = torch.tensor([tiny_prompts(1)[0]])
        plain = generated(model, ids)
        options = greedy_options(plain[0, ids.shape[1]:].tolist(), ids.shape[1])[option]
        want = generated(model, ids, **options)
        changed += not torch.equal(want, plain)
        for method, tree in DECODERS:
            got = generated(model, ids, custom_generate=logitspec_generate, method=method, tree=tree, **options)
            assert torch.equal(got, want), (name, method, tree)
    assert changed, f"{option} changed no family's greedy output: the test would show nothing"


class Recorder(LogitsProcessor):
    """Records every prefix it is handed, and lowers the logit of the prefix's last token (it
    reads the node itself: a wrong prefix changes the output, yet drafts are still accepted)."""

    def __init__(self) -> None:
        self.prefixes: list[list[int]] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.prefixes.append(input_ids[0].tolist())
        return scores.index_add(-1, input_ids[:, -1], torch.full((1, 1), -1.5))


@pytest.mark.parametrize("method, tree", DECODERS[1:])
def test_each_position_is_processed_once_with_its_own_prefix(models, method, tree):
    model = models["llama"]
    drafted = 0
    for prompt in tiny_prompts(3):
        ids = torch.tensor([prompt])
        want = generated(model, ids, logits_processor=LogitsProcessorList([Recorder()]))
        seen = Recorder()
        out = generated(model, ids, custom_generate=logitspec_generate, method=method, tree=tree,
                        logits_processor=LogitsProcessorList([seen]), return_dict_in_generate=True)
        assert torch.equal(out.sequences, want)
        full = want[0].tolist()
        kept = [p for p in seen.prefixes if len(p) < len(full)]  # past max_new_tokens the walk may read on
        assert sorted(len(p) for p in kept) == list(range(len(prompt), len(full)))
        assert all(p == full[: len(p)] for p in kept)
        drafted += sum(len(s.tokens) - 1 for s in out.trace.steps)
    assert drafted, "no step accepted a draft: no node below a root was processed"


SAMPLED = [
    pytest.param(dict(repetition_penalty=1.3, no_repeat_ngram_size=3, min_new_tokens=24), 0.8, 0.9, 20,
                 id="penalties-T0.8"),
    pytest.param(dict(min_p=0.05), 1.0, 1.0, 0, id="min_p"),
    pytest.param(dict(typical_p=0.9, repetition_penalty=1.1), 1.2, 1.0, 0, id="typical_p"),
    pytest.param(dict(epsilon_cutoff=3e-3, suppress_tokens=[5, 9]), 0.7, 0.95, 0, id="epsilon_cutoff"),
]


@pytest.mark.parametrize("processors, temperature, top_p, top_k", SAMPLED)
def test_every_decoder_samples_as_vanilla_under_the_same_processors(models, processors, temperature, top_p, top_k):
    model = models["llama"]
    for i, prompt in enumerate(tiny_prompts(2)):
        s = DecodeSettings(max_new_tokens=MAX_NEW, temperature=temperature, top_p=top_p, top_k=top_k, seed=40 + i,
                           processors=dict(processors))
        eos = [prompt[3]]
        want = [t for st in decode(model, prompt, "vanilla", s, eos) for t in st.tokens]
        plain = [t for st in decode(model, prompt, "vanilla", replace(s, processors={}), eos) for t in st.tokens]
        for method in ("pld", "logitspec", "recycling", "logitspec+recycling"):
            for tree in ("static", "cost"):
                got = [t for st in decode(model, prompt, method, replace(s, tree=tree), eos) for t in st.tokens]
                assert got == want, (method, tree, i)
        assert i or want != plain, "the processors changed nothing"


def test_the_projects_own_options_equal_greedy_generate(models):
    model = models["qwen2-window8"]
    ids = torch.tensor([tiny_prompts(1)[0]])
    plain = generated(model, ids)[0, ids.shape[1]:].tolist()
    options = dict(repetition_penalty=1.2, no_repeat_ngram_size=3, min_new_tokens=16, suppress_tokens=[plain[1]])
    want = generated(model, ids, eos_token_id=plain[2], **options)[0, ids.shape[1]:].tolist()
    s = DecodeSettings(max_new_tokens=MAX_NEW, processors=options)
    for method in ("vanilla", "logitspec"):
        assert [t for st in decode(model, ids[0].tolist(), method, s, [plain[2]]) for t in st.tokens] == want


def test_sampling_through_generate_equals_vanilla_under_the_same_processors(models):
    model = models["gpt2"]
    prompt = tiny_prompts(1)[0]
    ids = torch.tensor([prompt])
    options = dict(repetition_penalty=1.2, no_repeat_ngram_size=3, min_p=0.02)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=0.9, top_k=30,
                         top_p=0.95, max_new_tokens=MAX_NEW, custom_generate=logitspec_generate, seed=7,
                         return_dict_in_generate=True, **options)
    s = DecodeSettings(max_new_tokens=MAX_NEW, temperature=0.9, top_k=30, top_p=0.95, seed=7, processors=options)
    assert out.sequences[0, len(prompt):].tolist() == [t for st in decode(model, prompt, "vanilla", s) for t in st.tokens]
    assert out.trace.settings["processors"] == options


# Popular models' own generation configs (their generation_config.json), the special token ids
# moved into the tiny vocabulary; `settings` is what the project's vanilla run takes for each.
REAL_CONFIGS = {
    "Qwen2.5-Instruct": ("qwen2-window8", dict(bos_token_id=120, do_sample=True, eos_token_id=[121, 120],
                                               pad_token_id=120, repetition_penalty=1.05, temperature=0.7,
                                               top_p=0.8, top_k=20),
                         dict(temperature=0.7, top_p=0.8, top_k=20, processors={"repetition_penalty": 1.05})),
    "Gemma 3": ("gemma3-window16", dict(bos_token_id=2, cache_implementation="hybrid", do_sample=True,
                                        eos_token_id=[1, 106], pad_token_id=0, top_k=64, top_p=0.95),
                dict(temperature=1.0, top_p=0.95, top_k=64)),
    # top_k unset: generate's default of 50 applies.
    "Llama 3.2": ("llama", dict(bos_token_id=100, do_sample=True, eos_token_id=[101, 102, 103], temperature=0.6,
                                top_p=0.9),
                  dict(temperature=0.6, top_p=0.9, top_k=50)),
}


@pytest.mark.parametrize("config", list(REAL_CONFIGS))
def test_a_popular_models_own_generation_config_runs_with_no_options(config):
    from transformers import GenerationConfig

    family, values, settings = REAL_CONFIGS[config]
    model = next(f for f in WORKS if f.name == family).build()
    model.generation_config = GenerationConfig(**values)
    for i, prompt in enumerate(tiny_prompts(2)):
        ids = torch.tensor([prompt])
        s = DecodeSettings(max_new_tokens=MAX_NEW, seed=i, **settings)
        want = [t for st in decode(model, prompt, "vanilla", s, values["eos_token_id"]) for t in st.tokens]
        for method in ("logitspec", "pld"):
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_NEW, seed=i,
                                 custom_generate=logitspec_generate, method=method)
            assert out[0, len(prompt):].tolist() == want, (method, i)


@pytest.mark.parametrize("config", list(REAL_CONFIGS))
def test_logitspec_generate_honours_the_models_generation_config_and_the_callers_options_win(config):
    from transformers import GenerationConfig

    import logitspec

    family, values, settings = REAL_CONFIGS[config]
    model = next(f for f in WORKS if f.name == family).build()
    model.generation_config = GenerationConfig(**values, max_new_tokens=MAX_NEW)
    prompt = tiny_prompts(1)[0]
    text = " ".join(map(str, prompt))
    s = DecodeSettings(max_new_tokens=MAX_NEW, seed=3, **settings)
    want = [t for st in decode(model, prompt, "vanilla", s, values["eos_token_id"]) for t in st.tokens]
    got = logitspec.generate(model, IdsTokenizer(), text, "logitspec", chat=False, seed=3)
    assert got.token_ids == want and got.trace.settings["processors"] == settings.get("processors", {})
    # A caller's setting wins over the config's, and a caller's processor joins the config's.
    given = dict(temperature=0.0, max_new_tokens=MAX_NEW // 2, processors={"no_repeat_ngram_size": 2})
    s = replace(s, temperature=0.0, max_new_tokens=MAX_NEW // 2,
                processors={**settings.get("processors", {}), "no_repeat_ngram_size": 2})
    want = [t for st in decode(model, prompt, "vanilla", s, values["eos_token_id"]) for t in st.tokens]
    assert logitspec.generate(model, IdsTokenizer(), text, "pld", chat=False, **given).token_ids == want
    # A config passed in replaces the model's own, as generate's generation_config= does.
    plain = GenerationConfig(max_new_tokens=MAX_NEW // 2)
    want = [t for st in decode(model, prompt, "vanilla", DecodeSettings(max_new_tokens=MAX_NEW // 2),
                               values["eos_token_id"]) for t in st.tokens]
    assert logitspec.generate(model, IdsTokenizer(), text, chat=False, generation_config=plain).token_ids == want


@pytest.mark.parametrize("method", ["vanilla", "pld", "logitspec"])
def test_a_passed_generation_configs_eos_ends_the_run_where_it_appears(method):
    """generate(generation_config=...) stops on that config's eos_token_id, as generate does."""
    from transformers import GenerationConfig

    import logitspec

    model = next(f for f in WORKS if f.name == "llama").build()
    prompt = tiny_prompts(1)[0]
    text = " ".join(map(str, prompt))
    free = [t for st in decode(model, prompt, "vanilla", DecodeSettings(max_new_tokens=MAX_NEW), []) for t in st.tokens]
    stop = free[MAX_NEW // 2]  # a token greedy reaches midway: the run must end at its first appearance
    want = free[: free.index(stop) + 1]
    config = GenerationConfig(eos_token_id=[stop], max_new_tokens=MAX_NEW)
    got = logitspec.generate(model, IdsTokenizer(), text, method, chat=False, generation_config=config)
    assert got.token_ids == want and len(want) < MAX_NEW and got.trace.eos_token_ids == [stop]


@pytest.mark.slow
def test_the_bundled_model_equals_greedy_generate_with_processors(bundled):
    from helpers.lossless_prompts import first_turn

    model = bundled.model
    ids = torch.tensor([bundled.encode_chat(first_turn(81))])  # a Spec-Bench writing prompt
    options = dict(repetition_penalty=1.3, no_repeat_ngram_size=3, min_new_tokens=MAX_NEW,
                   suppress_tokens=[bundled.tokenizer.convert_tokens_to_ids(",")], eos_token_id=bundled.eos_ids)
    want = generated(model, ids, **options)
    assert not torch.equal(want, generated(model, ids, eos_token_id=bundled.eos_ids))
    for method, tree in (("logitspec", "cost"), ("pld", "cost"), ("logitspec", "static")):
        got = generated(model, ids, custom_generate=logitspec_generate, method=method, tree=tree, **options)
        assert torch.equal(got, want), (method, tree)


def test_an_unknown_processor_option_is_refused_in_one_line():
    from logitspec.api import settings_of
    from logitspec.core.limits import InputError

    with pytest.raises(InputError, match="unknown processor option 'colour'"):
        settings_of("logitspec", {"processors": {"colour": 1}})

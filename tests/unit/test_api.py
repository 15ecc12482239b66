"""The Python API and transformers' `generate(custom_generate=...)`: the same tokens as greedy
generate, the caller's model left as it was, and one line for every option refused."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import StoppingCriteriaList, TextStreamer
from transformers.generation.stopping_criteria import StopStringCriteria

import logitspec
from helpers.families import WORKS
from helpers.tiny_models import IdsTokenizer, sampling_reference, tiny_prompts
from logitspec.custom_generate import generate as logitspec_generate
from logitspec.core.settings import DecodeSettings
from logitspec.core.limits import InputError

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ["llama", "qwen2-window8", "gemma3-window16", "gpt2", "mixtral"]
MAX_NEW = 32


def model_state(model) -> tuple:
    return ({n: type(m) for n, m in model.named_modules()}, model.config.to_json_string(),
            {n: p.clone() for n, p in model.state_dict().items()})


def same_state(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[1] == b[1] and all(torch.equal(a[2][k], b[2][k]) for k in a[2])


def greedy_generate(model, ids: torch.Tensor, **kw) -> torch.Tensor:
    return model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=MAX_NEW, **kw)


@pytest.mark.lossless
@pytest.mark.parametrize("name", FAMILIES)
def test_custom_generate_callable_equals_greedy_generate_and_leaves_the_model_as_it_was(name):
    model = next(f for f in WORKS if f.name == name).build()
    before = model_state(model)
    for prompt in tiny_prompts(2):
        ids = torch.tensor([prompt])
        want = greedy_generate(model, ids)
        for method in ("logitspec", "pld", "vanilla"):
            assert torch.equal(greedy_generate(model, ids, custom_generate=logitspec_generate, method=method), want)
        assert torch.equal(greedy_generate(model, ids, custom_generate=logitspec_generate, tree="static"), want)
    assert same_state(model_state(model), before)


@pytest.mark.lossless
def test_custom_generate_folder_equals_greedy_generate():
    model = WORKS[0].build()
    ids = torch.tensor([tiny_prompts(1)[0]])
    got = greedy_generate(model, ids, custom_generate=str(ROOT), trust_remote_code=True)
    assert torch.equal(got, greedy_generate(model, ids))


@pytest.mark.lossless
def test_sampling_through_generate_equals_the_projects_own_vanilla_sampling():
    model = WORKS[0].build()
    prompt = tiny_prompts(1)[0]
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=0.8, top_k=0,
                         top_p=1.0, max_new_tokens=MAX_NEW, custom_generate=logitspec_generate, seed=5)
    want = sampling_reference(model, prompt, MAX_NEW, DecodeSettings(temperature=0.8, seed=5))
    assert out[0, len(prompt):].tolist() == want


def test_eos_stop_criteria_streamer_and_the_trace(capsys):
    model = WORKS[0].build()
    ids = torch.tensor([tiny_prompts(1)[0]])
    plain = greedy_generate(model, ids)[0, ids.shape[1]:].tolist()
    eos = plain[9]  # the 10th new token (or its first occurrence) ends the answer
    out = greedy_generate(model, ids, custom_generate=logitspec_generate, eos_token_id=eos,
                          return_dict_in_generate=True)
    new = out.sequences[0, ids.shape[1]:].tolist()
    assert new == plain[: plain.index(eos) + 1]
    assert out.trace.tokens == new and out.trace.method == "logitspec"

    class Words:  # turns ids into text for TextStreamer and StopStringCriteria
        def decode(self, ids, **kw):
            return " ".join(f"w{int(i)}" for i in (ids if isinstance(ids, list) else ids.tolist()))

    stream_tok = Words()
    streamer = TextStreamer(stream_tok, skip_prompt=True)
    out = greedy_generate(model, ids, custom_generate=logitspec_generate, streamer=streamer)
    printed = capsys.readouterr().out.split()
    assert printed == [f"w{t}" for t in out[0, ids.shape[1]:].tolist()]

    class Stop:  # a criterion that holds once token plain[4] was produced
        def __call__(self, seq, scores, **kw):
            return torch.tensor([plain[4] in seq[0, ids.shape[1]:].tolist()])

    out = greedy_generate(model, ids, custom_generate=logitspec_generate, stopping_criteria=StoppingCriteriaList([Stop()]))
    assert out[0, ids.shape[1]:].tolist() == plain[: plain.index(plain[4]) + 1]


@pytest.mark.parametrize("options, words", [
    (dict(num_beams=2), "num_beams=2"),
    (dict(guidance_scale=1.5), "UnbatchedClassifierFreeGuidanceLogitsProcessor"),
    (dict(method="medusa"), "unknown method 'medusa'"),
    (dict(logitspec_settings={"capacity": 0}), "capacity"),
    (dict(logitspec_settings={"colour": 1}), "unknown setting 'colour'"),
    (dict(prompt_lookup_num_tokens=4), "prompt_lookup_num_tokens"),
])
def test_an_option_it_cannot_serve_is_refused_in_one_line(options, words):
    model = WORKS[0].build()
    ids = torch.tensor([tiny_prompts(1)[0]])
    with pytest.raises(InputError) as e:
        greedy_generate(model, ids, custom_generate=logitspec_generate, **options)
    assert words in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError, match="batch size 2"):
        greedy_generate(model, ids.repeat(2, 1), custom_generate=logitspec_generate)


def test_the_python_api_decodes_streams_and_checks_its_settings():
    model = WORKS[0].build()
    before = model_state(model)
    prompt = " ".join(map(str, tiny_prompts(1)[0]))
    vanilla = logitspec.generate(model, IdsTokenizer(), prompt, "vanilla", max_new_tokens=MAX_NEW)
    result = logitspec.generate(model, IdsTokenizer(), prompt, max_new_tokens=MAX_NEW)
    assert result.token_ids == vanilla.token_ids and len(result.token_ids) == MAX_NEW
    assert result.text == IdsTokenizer().decode(result.token_ids)
    assert result.trace.forward_steps < vanilla.trace.forward_steps  # drafts were accepted
    steps = list(logitspec.stream(model, IdsTokenizer(), prompt, "pld", max_new_tokens=MAX_NEW))
    assert [t for s in steps for t in s.tokens] == vanilla.token_ids
    assert same_state(model_state(model), before)
    for bad, words in [(dict(k=0), "k"), (dict(tree="round"), "tree"), (dict(speed=2), "unknown setting 'speed'")]:
        with pytest.raises(InputError) as e:
            logitspec.generate(model, IdsTokenizer(), prompt, **bad)
        assert words in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError, match="empty"):
        logitspec.generate(model, IdsTokenizer(), "   ")
    with pytest.raises(Exception, match="dtype"):
        logitspec.generate(model.double(), IdsTokenizer(), prompt)

"""The model-family matrix: every family either decodes losslessly with drafts accepted, or
is refused at load with its reason, before any weight is read.

Tiny random models built from transformers' config classes (nothing is downloaded), made
ready by the product's own `prepare_model`. Sliding-window families use windows far
shorter than prompt + answer, so the window slides while decoding.
"""
from __future__ import annotations

import random
from functools import cache

import pytest
import torch

from helpers.families import WINDOWED, WORKS, prepared
from helpers.tiny_models import greedy_reference, repetitive_prompt
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.core.errors import ModelLoadError
from logitspec.core.families import attention_layout, unsupported_reason
from logitspec.models import load_model, prepare_model

pytestmark = [pytest.mark.lossless, pytest.mark.usefixtures("one_thread")]

PROMPT_LEN, MAX_NEW = 48, 40
VARIANTS = [("vanilla", "static"), ("pld", "static"), ("logitspec", "static"), ("logitspec", "cost")]
DRAFTING = [f"{m}-{t}" for m, t in VARIANTS if m != "vanilla"]

ALIBI, RECURRENT = "ALiBi", "recurrent state"
# (name, config class, overrides, words the refusal must hold). Default sizes: no model is built.
REFUSED = [
    ("bloom", "BloomConfig", {}, ALIBI),
    ("mpt", "MptConfig", {}, ALIBI),
    ("falcon-alibi", "FalconConfig", {"alibi": True}, ALIBI),
    ("qwen3-next", "Qwen3NextConfig", {}, RECURRENT),
    ("mamba", "MambaConfig", {}, RECURRENT),
    ("mamba2", "Mamba2Config", {}, RECURRENT),
    ("falcon-mamba", "FalconMambaConfig", {}, RECURRENT),
    ("rwkv", "RwkvConfig", {}, RECURRENT),
    ("xlstm", "xLSTMConfig", {}, RECURRENT),
    ("jamba", "JambaConfig", {}, RECURRENT),
    ("recurrent-gemma", "RecurrentGemmaConfig", {}, RECURRENT),
    ("lfm2", "Lfm2Config", {"full_attn_idxs": [1, 3]}, RECURRENT),
    ("zamba", "ZambaConfig", {}, RECURRENT),
    ("zamba2", "Zamba2Config", {}, RECURRENT),
    ("bamba", "BambaConfig", {}, RECURRENT),
    ("falcon-h1", "FalconH1Config", {}, RECURRENT),
    ("granite-moe-hybrid", "GraniteMoeHybridConfig", {}, RECURRENT),
    ("minimax", "MiniMaxConfig", {}, RECURRENT),
    ("llama4-chunked", "Llama4TextConfig", {}, "chunked_attention"),
]


@cache
def prompts(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(repetitive_prompt(random.Random(500 + i), PROMPT_LEN)) for i in range(n))


def run(model, prompt, method: str, tree: str) -> tuple[list[int], int]:
    """The decoder's tokens and how many of its steps committed more than one token."""
    steps = list(decode(model, list(prompt), method, DecodeSettings(max_new_tokens=MAX_NEW, tree=tree)))
    return [t for s in steps for t in s.tokens], sum(len(s.tokens) > 1 for s in steps)


def check_lossless(model, cases) -> dict[str, int]:
    """Assert every decoder equals plain greedy on `cases`; return multi-token steps per method."""
    multi = {f"{m}-{t}": 0 for m, t in VARIANTS}
    for prompt in cases:
        want = greedy_reference(model, prompt, MAX_NEW)
        for method, tree in VARIANTS:
            got, n = run(model, prompt, method, tree)
            assert got == want, (method, tree, prompt)
            multi[f"{method}-{tree}"] += n
    return multi


@pytest.mark.parametrize("fam", WORKS, ids=lambda f: f.name)
def test_family_decodes_losslessly_with_drafts_accepted(fam):
    model = prepared(fam.name)
    multi = check_lossless(model, prompts(4))
    assert multi["vanilla-static"] == 0  # one token per pass: the plain greedy loop
    assert all(multi[v] > 0 for v in DRAFTING), multi  # drafts were accepted: not vacuous


@pytest.mark.slow  # two threads flipping every step, on a core a worker shares: seconds per family
@pytest.mark.parametrize("name", ["llama", *sorted(WINDOWED)])
def test_a_thread_probe_before_every_step_changes_no_token(name, monkeypatch):
    """The thread tuner's probe runs a pass of the root on the run's own cache and crops it
    back: with one before every step, and the count flipping each time, decoding is unchanged."""
    from logitspec.runtime import tuner as tuning

    monkeypatch.setattr(tuning, "PROBE_SECONDS", 0.0)
    monkeypatch.setattr(tuning, "WIN", 1e9)
    model = prepared(name)
    tuner = tuning.reset_thread_tuner(2, fixed=False)
    try:
        check_lossless(model, prompts(2))
        assert tuner.probes > 100 and tuner.switches >= tuner.probes  # (a curve measurement may settle too)
    finally:
        tuning.reset_thread_tuner(1, fixed=True)


@pytest.mark.parametrize("name", sorted(WINDOWED))
def test_windowed_family_equals_transformers_generate(name):
    model = prepared(name)
    layout = attention_layout(model)
    assert layout.sliding and layout.window is not None
    for prompt in prompts(2):
        ids = torch.tensor([prompt])
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=MAX_NEW)
        want = out[0, len(prompt):].tolist()
        assert greedy_reference(model, prompt, MAX_NEW) == want
        assert run(model, prompt, "logitspec", "static")[0] == want


@pytest.mark.parametrize("name, config, overrides, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_family_is_refused_from_its_config_before_any_weight(tmp_path, name, config, overrides, words):
    import transformers

    cfg = getattr(transformers, config)(**overrides)
    assert words in (unsupported_reason(cfg) or "")
    cfg.save_pretrained(tmp_path)  # a folder with a config and no weights at all
    with pytest.raises(ModelLoadError) as e:
        load_model(str(tmp_path))
    message = str(e.value)
    assert words in message and "\n" not in message and "could not load" not in message


def test_a_mixed_model_is_refused_when_it_cannot_take_one_mask_per_layer_type(monkeypatch):
    import logitspec.core.families as families

    model = WINDOWED["gemma2-window8"].build()
    monkeypatch.setattr(families, "takes_mask_dict", lambda m: False)
    with pytest.raises(ModelLoadError, match="one attention mask per layer type"):
        prepare_model(model, "gemma2")


def test_a_model_whose_forward_transforms_its_logits_otherwise_is_refused():
    """A head the tree steps would not reproduce is refused at load, not sampled wrongly."""
    from transformers import LlamaForCausalLM

    class Tempered(LlamaForCausalLM):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 3.0  # a transform no config field announces
            return out

    base = WORKS[0].build()
    model = Tempered(base.config).eval()
    model.load_state_dict(base.state_dict())
    with pytest.raises(ModelLoadError, match="transforms the output head's logits"):
        prepare_model(model, "tempered")
    prepare_model(base, "llama")  # the same weights with the stock forward are served

"""`--model FILE.gguf` beyond the bundled file: any architecture transformers' GGUF loader
reads, and a one-line refusal for the ones it does not read or the decoders cannot serve."""
from __future__ import annotations

import random

import pytest

from helpers.gguf_files import GGUF_VOCAB, write_gguf
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.core.errors import ModelLoadError
from logitspec.models import load_model
from helpers.tiny_models import greedy_reference, repetitive_prompt

pytestmark = pytest.mark.usefixtures("one_thread")


def refusal(path) -> str:
    with pytest.raises(ModelLoadError) as e:
        load_model(str(path))
    message = str(e.value)
    assert "\n" not in message
    return message


def test_an_architecture_transformers_cannot_read_is_refused_in_one_line(tmp_path):
    message = refusal(write_gguf(tmp_path / "odd.gguf", arch="made-up-arch", weights=False))
    assert "cannot read GGUF files of architecture 'made-up-arch'" in message
    assert "llama" in message and "general" not in message  # the architectures it does read


def test_a_recurrent_gguf_is_refused_from_its_metadata_before_its_weights(tmp_path):
    # No tensors in the file at all: the refusal cannot have come from reading weights.
    message = refusal(write_gguf(tmp_path / "mamba.gguf", arch="mamba", weights=False))
    assert "Mamba is not supported" in message and "recurrent state" in message


@pytest.mark.lossless
def test_a_tiny_llama_gguf_loads_and_decodes_losslessly(tmp_path):
    lm = load_model(str(write_gguf(tmp_path / "tiny-llama.gguf")))
    assert type(lm.model).__name__ == "LlamaForCausalLM" and lm.name == "tiny-llama"
    assert lm.model.config.vocab_size == GGUF_VOCAB
    multi = 0
    for i in range(4):
        prompt = repetitive_prompt(random.Random(900 + i), 40, vocab=GGUF_VOCAB)
        want = greedy_reference(lm.model, prompt, 32)
        for method, tree in [("pld", "static"), ("logitspec", "static"), ("logitspec", "cost")]:
            steps = list(decode(lm.model, prompt, method, DecodeSettings(max_new_tokens=32, tree=tree)))
            assert [t for s in steps for t in s.tokens] == want, (method, tree)
            multi += sum(len(s.tokens) > 1 for s in steps)
    assert multi > 0

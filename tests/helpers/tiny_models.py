"""Tiny randomly initialised causal LMs for fast tests, and plain greedy references.

Two position schemes are covered: Llama (rotary) and GPT-2 (learned absolute positions).
The weights are drawn with a wide spread so the logits are far apart: near-ties between the
top two logits would let float rounding (tree batch vs one token at a time) pick a different
argmax, which says nothing about the decoder.
"""
from __future__ import annotations

import random
from collections.abc import Sequence

import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

VOCAB = 128
INIT_RANGE = 0.3  # wide weights: confident, well-separated logits (see module docstring)


def tiny_llama(seed: int = 0) -> LlamaForCausalLM:
    """A 2-layer Llama with rotary positions, float32, eval mode."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        initializer_range=INIT_RANGE, bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )
    return LlamaForCausalLM(cfg).float().eval()


def tiny_gpt2(seed: int = 0) -> GPT2LMHeadModel:
    """A 2-layer GPT-2 with learned absolute positions, float32, eval mode."""
    torch.manual_seed(seed)
    cfg = GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=512,
        initializer_range=INIT_RANGE, bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )
    return GPT2LMHeadModel(cfg).float().eval()


@torch.inference_mode()
def greedy_reference(model, prompt: Sequence[int], n: int, eos_ids: Sequence[int] = ()) -> list[int]:
    """Plain greedy decoding, one token per forward with the library's cache, no drafting.

    Written independently of the engine so that a shared bug cannot hide.
    """
    cache = DynamicCache(config=model.config)
    ids = torch.tensor([list(prompt)], dtype=torch.long)
    out: list[int] = []
    logits = model(input_ids=ids, cache=cache, use_cache=True).logits[0, -1]
    while len(out) < n:
        tok = int(logits.argmax())
        out.append(tok)
        if tok in eos_ids or len(out) == n:
            break
        logits = model(input_ids=torch.tensor([[tok]]), cache=cache, use_cache=True).logits[0, -1]
    return out


@torch.inference_mode()
def sampling_reference(model, prompt: Sequence[int], n: int, settings, eos_ids: Sequence[int] = ()) -> list[int]:
    """Plain sampling, one token per forward with the library's cache, no drafting: the
    token at absolute position j drawn by logitspec.core.sampling.sample(logits, j, settings)."""
    from logitspec.core.sampling import sample

    cache = DynamicCache(config=model.config)
    ids = torch.tensor([list(prompt)], dtype=torch.long)
    out: list[int] = []
    logits = model(input_ids=ids, cache=cache, use_cache=True).logits[0, -1]
    while len(out) < n:
        tok = sample(logits, len(prompt) + len(out), settings)
        out.append(tok)
        if tok in eos_ids or len(out) == n:
            break
        logits = model(input_ids=torch.tensor([[tok]]), cache=cache, use_cache=True).logits[0, -1]
    return out


def repetitive_prompt(rng: random.Random, length: int, vocab: int = VOCAB, motifs: int = 3) -> list[int]:
    """Random token ids built from a few repeated motifs, so n-gram retrieval finds matches."""
    pieces = [[rng.randrange(vocab) for _ in range(rng.randint(2, 6))] for _ in range(motifs)]
    out: list[int] = []
    while len(out) < length:
        if rng.random() < 0.7:
            out.extend(rng.choice(pieces))
        else:
            out.append(rng.randrange(vocab))
    return out[:length]


def tiny_prompts(n: int, length: int = 48) -> list[list[int]]:
    """n repetitive prompts for the tiny models, the same on every call."""
    return [repetitive_prompt(random.Random(700 + i), length) for i in range(n)]


SMALL = dict(  # sizes every family's config takes; each family adds or renames its own
    vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=256, initializer_range=INIT_RANGE,
    bos_token_id=None, eos_token_id=None, pad_token_id=None,
)


def tiny_config(config_class: str, **overrides):
    """A small config of a transformers config class (by name), wide init, no special tokens."""
    import transformers

    return getattr(transformers, config_class)(**{**SMALL, **overrides})


def tiny_from_config(config_class: str, model_class: str, seed: int = 0, **overrides) -> torch.nn.Module:
    """A tiny random model of any family, float32, eval mode; nothing is downloaded."""
    import transformers

    torch.manual_seed(seed)
    return getattr(transformers, model_class)(tiny_config(config_class, **overrides)).float().eval()


def char_tokenizer():
    """One token per ASCII character (ids 0-127, the tiny models' vocabulary); no chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({chr(i): i for i in range(VOCAB)}, unk_token="?"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="?")


def char_lm(model, name: str = "tiny-llama"):
    """A tiny model as the app loads one, reading and writing text one character a token."""
    from logitspec.models import LoadedModel

    return LoadedModel(name=name, model=model, tokenizer=char_tokenizer(), device="cpu", dtype="float32")


class IdsTokenizer:
    """A tokenizer for the tiny models: the prompt is a list of ids written as text."""

    eos_token_id = None
    chat_template = None

    def __call__(self, text: str) -> dict:
        return {"input_ids": [int(t) for t in text.split()]}

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return " ".join(str(int(i)) for i in ids)

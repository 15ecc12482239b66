"""The model-family matrix's families that decode: tiny random models built from
transformers' config classes (nothing is downloaded), made ready as load_model makes them."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import torch

from helpers.tiny_models import tiny_from_config
from logitspec.models import prepare_model


@dataclass(frozen=True)
class Family:
    """One row of the matrix: a config class, its causal LM class and small settings."""

    name: str
    config: str
    model: str
    overrides: dict = field(default_factory=dict)

    def build(self, seed: int = 0) -> torch.nn.Module:
        return tiny_from_config(self.config, self.model, seed, **self.overrides)


FULL_LAYERS = {"layer_types": ["full_attention"] * 2, "sliding_window": None}
WORKS = [
    Family("llama", "LlamaConfig", "LlamaForCausalLM"),
    Family("qwen2", "Qwen2Config", "Qwen2ForCausalLM"),
    Family("qwen2-window8", "Qwen2Config", "Qwen2ForCausalLM",
           {"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 1}),
    Family("qwen3", "Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 8}),
    Family("mistral", "MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
    Family("mistral-window8", "MistralConfig", "MistralForCausalLM", {"sliding_window": 8}),
    Family("mistral-window16", "MistralConfig", "MistralForCausalLM", {"sliding_window": 16}),
    Family("mistral-window4096", "MistralConfig", "MistralForCausalLM", {"sliding_window": 4096}),
    Family("gemma2-window8", "Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8, "sliding_window": 8}),
    Family("gemma2-full", "Gemma2Config", "Gemma2ForCausalLM", {"head_dim": 8, **FULL_LAYERS}),
    Family("gemma3-window16", "Gemma3TextConfig", "Gemma3ForCausalLM",
           {"head_dim": 8, "sliding_window": 16, "layer_types": ["sliding_attention", "full_attention"]}),
    Family("gemma3-full", "Gemma3TextConfig", "Gemma3ForCausalLM", {"head_dim": 8, **FULL_LAYERS}),
    Family("gpt2", "GPT2Config", "GPT2LMHeadModel", {"n_positions": 256}),
    Family("phi", "PhiConfig", "PhiForCausalLM"),
    Family("stablelm", "StableLmConfig", "StableLmForCausalLM"),
    Family("gpt-neox", "GPTNeoXConfig", "GPTNeoXForCausalLM"),
    Family("falcon-rotary", "FalconConfig", "FalconForCausalLM", {"alibi": False}),
    Family("olmo", "OlmoConfig", "OlmoForCausalLM"),
    Family("olmo2", "Olmo2Config", "Olmo2ForCausalLM"),
    Family("mixtral", "MixtralConfig", "MixtralForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2}),
    # Heads whose forward scales the logits: tree steps must scale them alike (verify.head_logits).
    Family("cohere", "CohereConfig", "CohereForCausalLM", {"logit_scale": 0.5}),
    Family("granite", "GraniteConfig", "GraniteForCausalLM", {"logits_scaling": 4.0}),
    Family("qwen2-moe", "Qwen2MoeConfig", "Qwen2MoeForCausalLM",
           {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 32}),
]
WINDOWED = {f.name: f for f in WORKS if "window" in f.name}


@cache
def prepared(name: str):
    """The family's tiny model, made ready the way load_model makes a model ready."""
    fam = next(f for f in WORKS if f.name == name)
    model = fam.build()
    prepare_model(model, name)
    return model

"""`model.generate(custom_generate=...)`: LogitSpec in transformers' own decoding call.

    from logitspec.custom_generate import generate as logitspec_generate
    out = model.generate(**inputs, custom_generate=logitspec_generate, max_new_tokens=64)
    out = model.generate(**inputs, custom_generate=logitspec_generate, method="pld")  # or tree="static"

transformers prepares the generation config, logits processors and stopping criteria and
hands them here; this replaces its decoding loop. It honours max_new_tokens / max_length,
the eos tokens, stop strings and any other stopping criterion (checked after every token, so
the output stops where greedy generate's would), greedy or sampled decoding (temperature,
top_k, top_p; the sampled tokens follow the project's seeded rule, `seed=`), and with
`return_dict_in_generate=True` returns the run's RunTrace as `.trace`.
transformers 5.24 hands a callable neither the streamer nor the tokenizer: pass the streamer
as `text_streamer=`, and stop strings as a criterion,
`stopping_criteria=StoppingCriteriaList([StopStringCriteria(tokenizer, ["\n\n"])])`. The folder
form (`custom_generate/` at the repository's root) takes `streamer=`, `stop_strings=` and
`tokenizer=` as generate does.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
from transformers.generation.utils import GenerateDecoderOnlyOutput

from .api import installed, loaded, settings_of
from .limits import InputError
from .trace import RunTrace

# The processors the decoders reproduce themselves (logitspec/sampling.py); any other would be skipped.
OWN_PROCESSORS = (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)


@dataclass
class LogitSpecOutput(GenerateDecoderOnlyOutput):
    """generate's usual output, with the run's trace."""

    trace: RunTrace | None = None


def refusal(input_ids: torch.Tensor, config, processors, model_kwargs: dict) -> str | None:
    """Why this call cannot be decoded here, in one line naming the option, or None."""
    if (config.num_beams or 1) > 1:  # before the batch: generate has already repeated the prompt per beam
        return f"num_beams={config.num_beams}: LogitSpec is greedy or sampled decoding, not beam search"
    if input_ids.shape[0] != 1:
        return f"batch size {input_ids.shape[0]}: LogitSpec decodes one sequence at a time (batch size 1)"
    if getattr(config, "prompt_lookup_num_tokens", None) or model_kwargs.get("assistant_model") is not None:
        return "assistant_model / prompt_lookup_num_tokens: LogitSpec drafts by itself; pass method='pld' instead"
    mask = model_kwargs.get("attention_mask")
    if mask is not None and not bool(mask.all()):
        return "attention_mask with padding: pass the prompt's tokens without padding"
    other = [type(p).__name__ for p in processors or () if not isinstance(p, OWN_PROCESSORS)]
    if other:
        return f"{other[0]}: the tree decoders apply temperature, top_k and top_p only"
    return None


def settings_from(config, prompt_len: int, method: str, tree: str | None, seed: int | None, extra: dict):
    """DecodeSettings from the prepared generation config and the caller's own options."""
    values = dict(extra, max_new_tokens=int(config.max_length) - prompt_len)
    if tree is not None:
        values["tree"] = tree
    if seed is not None:
        values["seed"] = seed
    if config.do_sample:
        values.update(temperature=float(config.temperature or 1.0), top_p=float(config.top_p or 1.0),
                      top_k=int(config.top_k or 0))
    return settings_of(method, values)


def generate(model, input_ids: torch.LongTensor, logits_processor=None, stopping_criteria=None,
             generation_config=None, synced_gpus: bool = False, method: str = "logitspec",
             tree: str | None = None, seed: int | None = None, logitspec_settings: dict | None = None,
             text_streamer=None, **model_kwargs):
    """transformers' decoding loop replaced by `method` ("logitspec", "pld" or "vanilla").

    Returns the sequences [1, prompt + new] (LongTensor), or a LogitSpecOutput with the
    trace when the config asks for a dict. Raises InputError with one line for an option it
    cannot serve.
    """
    from .runner import Run

    config = generation_config or model.generation_config
    why = refusal(input_ids, config, logits_processor, model_kwargs)
    if why:
        raise InputError(why)
    prompt = [int(t) for t in input_ids[0]]
    s = settings_from(config, len(prompt), method, tree, seed, logitspec_settings or {})
    eos = config.eos_token_id  # the prepared config's, which generate may have taken from its arguments
    lm = loaded(model, None)
    if text_streamer is not None:
        text_streamer.put(input_ids.cpu())
    with installed(model):
        run = Run(lm, "", method, s, prompt_ids=prompt)
        run.trace.eos_token_ids = [eos] if isinstance(eos, int) else [int(e) for e in (eos or [])]
        out = decode_until_stopped(run, list(prompt), stopping_criteria, text_streamer, model.device)
    if text_streamer is not None:
        text_streamer.end()
    sequences = torch.tensor([out], dtype=torch.long, device=input_ids.device)
    if config.return_dict_in_generate:
        return LogitSpecOutput(sequences=sequences, trace=run.trace)
    return sequences


def decode_until_stopped(run, out: list[int], criteria, streamer, device) -> list[int]:
    """Run's tokens appended to `out`, one at a time through the stopping criteria, until a
    criterion holds (the token it held at is kept, as generate keeps it) or the run ends."""
    for step in run:
        for token in step.tokens:
            out.append(token)
            if streamer is not None:
                streamer.put(torch.tensor([token]))
            if criteria is not None and bool(criteria(torch.tensor([out], device=device), None).any()):
                return out
    return out

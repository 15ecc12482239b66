"""`model.generate(custom_generate=...)`: LogitSpec in transformers' own decoding call.

    from logitspec.custom_generate import generate as logitspec_generate
    out = model.generate(**inputs, custom_generate=logitspec_generate, max_new_tokens=64)
    out = model.generate(**inputs, custom_generate=logitspec_generate, method="pld")  # or tree="static"

transformers prepares the generation config, logits processors and stopping criteria and
hands them here; this replaces its decoding loop. It honours max_new_tokens / max_length,
the eos tokens, stop strings and any other stopping criterion (checked after every token, so
the output stops where greedy generate's would), every logits processor generate builds
(repetition_penalty, no_repeat_ngram_size, min_new_tokens, bad_words_ids, ...: each tree
node's logits go through them with the node's own prefix, see processors.py), greedy or
sampled decoding (the sampled tokens follow the project's seeded rule, `seed=`), a `streamer`
(ended when the call ends), and with `return_dict_in_generate=True` returns the run's
RunTrace as `.trace`. transformers 5.24 hands a callable neither the tokenizer nor the
streamer: pass stop strings as a criterion,
`stopping_criteria=StoppingCriteriaList([StopStringCriteria(tokenizer, ["\\n\\n"])])`; the
streamer is read from the generate call itself (`generate_streamer`). The folder form
(`custom_generate/` at the repository's root) takes `stop_strings=` and `tokenizer=` as
generate does.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch
from transformers import GenerationMixin
from transformers.generation.utils import GenerateDecoderOnlyOutput

from .api import config_eos, installed, loaded, settings_of
from .core.limits import InputError
from .core.processors import config_values
from .core.processors import refusal as processor_refusal
from .core.trace import RunTrace


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
    return processor_refusal(processors or ())


def settings_from(config, prompt_len: int, method: str, tree: str | None, seed: int | None, extra: dict):
    """DecodeSettings from the prepared generation config and the caller's own options."""
    values = {**extra, "max_new_tokens": int(config.max_length) - prompt_len, **config_values(config)}
    if tree is not None:
        values["tree"] = tree
    if seed is not None:
        values["seed"] = seed
    return settings_of(method, values)


def generate_streamer():
    """The `streamer` of the generate call that runs this decoding loop, or None.

    transformers 5.24 puts the prompt into it, then calls a callable custom_generate without
    it and never ends it; read from generate's own frame, it gets the tokens and its end here.
    """
    code = inspect.unwrap(GenerationMixin.generate).__code__
    frame = inspect.currentframe()
    try:
        while frame is not None and frame.f_code is not code:
            frame = frame.f_back
        return None if frame is None else frame.f_locals.get("streamer")
    finally:
        del frame  # a frame held in a local keeps every frame above it alive


def generate(model, input_ids: torch.LongTensor, logits_processor=None, stopping_criteria=None,
             generation_config=None, synced_gpus: bool = False, method: str = "logitspec",
             tree: str | None = None, seed: int | None = None, logitspec_settings: dict | None = None,
             streamer=None, **model_kwargs):
    """transformers' decoding loop replaced by `method` ("logitspec", "pld", "vanilla",
    "recycling" or "logitspec+recycling").

    Returns the sequences [1, prompt + new] (LongTensor), or a LogitSpecOutput with the
    trace when the config asks for a dict. Raises InputError with one line for an option it
    cannot serve. The streamer (generate's, which already holds the prompt) is ended however
    the call ends, so that no consumer waits for ever.
    """
    streamer = streamer if streamer is not None else generate_streamer()
    try:
        return decode_call(model, input_ids, logits_processor, stopping_criteria, generation_config, method,
                           tree, seed, logitspec_settings or {}, streamer, model_kwargs)
    finally:
        if streamer is not None:
            streamer.end()


def decode_call(model, input_ids, processors, criteria, config, method, tree, seed, extra, streamer, model_kwargs):
    """`generate`'s work: checks, settings, the run, its output."""
    from .runner import Run

    config = config or model.generation_config
    why = refusal(input_ids, config, processors, model_kwargs)
    if why:
        raise InputError(why)
    prompt = [int(t) for t in input_ids[0]]
    s = settings_from(config, len(prompt), method, tree, seed, extra)
    eos = config_eos(config) or []  # the prepared config's, which generate may have taken from its arguments
    with installed(model):
        run = Run(loaded(model, None), "", method, s, prompt_ids=prompt, processors=list(processors or ()), eos_ids=eos)
        out = decode_until_stopped(run, list(prompt), criteria, streamer, model.device)
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

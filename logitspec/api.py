"""LogitSpec on your own model, from Python.

    import logitspec
    result = logitspec.generate(model, tokenizer, "Summarise: ...", method="logitspec", max_new_tokens=64)
    result.text, result.token_ids, result.trace       # the trace opens in the app and in `visual`
    for step in logitspec.stream(model, tokenizer, "..."):  # one StepRecord per forward pass
        print(step.tokens)

`model` is any transformers causal LM the families check accepts, on CPU or CUDA, in its own
dtype. The runtime's kernels and attention are installed for the call and taken out after
it: the caller's model keeps its layers, config and weights.
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator

from .analysis.lanes import methods
from .core.errors import ModelLoadError
from .core.limits import InputError, check_prompt, checked_settings
from .core.settings import DecodeSettings
from .core.trace import RunTrace, StepRecord

SETTING_NAMES = tuple(f.name for f in dataclasses.fields(DecodeSettings))
DTYPE_NAMES = {"torch.float32": "float32", "torch.bfloat16": "bfloat16", "torch.float16": "float16"}
_ABSENT = object()  # a config attribute that was not there
_installing = threading.Lock()  # one model's runtime goes in and out at a time


@dataclasses.dataclass
class Result:
    """What `generate` returns: the answer's text and token ids, and the run's trace."""

    text: str
    token_ids: list[int]
    trace: RunTrace


def settings_of(method: str, values: dict) -> DecodeSettings:
    """DecodeSettings from keyword arguments, checked as the CLI checks them (InputError)."""
    if method not in methods():
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(methods())}")
    unknown = sorted(set(values) - set(SETTING_NAMES))
    if unknown:
        raise InputError(f"unknown setting {unknown[0]!r}; the settings are {', '.join(SETTING_NAMES)}")
    return checked_settings(values)


@contextlib.contextmanager
def installed(model) -> Iterator[None]:
    """The runtime on `model` for the block (checked first, ModelLoadError if refused); its
    layers' classes and attention implementation restored after it."""
    from .models import prepare_model

    config, text = model.config, model.config.get_text_config(decoder=True)
    layers = {m: type(m) for m in model.modules()}
    attn = getattr(config, "_attn_implementation", None)
    window = dict(text.__dict__).get("sliding_window", _ABSENT)
    with _installing:
        try:
            prepare_model(model, getattr(config, "_name_or_path", "") or type(model).__name__, pack=False)
            yield
        finally:
            for module, cls in layers.items():
                if type(module) is not cls:
                    module.__class__ = cls
                    for extra in ("packed_weight", "packed_from", "few_rows"):
                        module.__dict__.pop(extra, None)
            if attn is not None and getattr(config, "_attn_implementation", None) != attn:
                model.set_attn_implementation(attn)
            if window is _ABSENT:
                text.__dict__.pop("sliding_window", None)
            else:
                text.sliding_window = window


def loaded(model, tokenizer):
    """A LoadedModel around the caller's model and tokenizer (no copy, no load)."""
    from .models import LoadedModel

    dtype = DTYPE_NAMES.get(str(getattr(model, "dtype", "")))
    if dtype is None:
        raise ModelLoadError(f"the model's dtype {getattr(model, 'dtype', None)} is not one the decoders "
                             f"serve ({', '.join(DTYPE_NAMES.values())})")
    name = getattr(model.config, "_name_or_path", "") or type(model).__name__
    return LoadedModel(name=name, model=model, tokenizer=tokenizer, device=model.device.type, dtype=dtype)


def with_config(model, config, settings: dict) -> dict:
    """The settings a call runs: what the generation config sets (the model's own when `config`
    is None, as generate takes it), then the caller's; the caller's processors join the config's."""
    from .core.processors import config_values

    config = config if config is not None else getattr(model, "generation_config", None)
    if config is None:
        return dict(settings)
    values = config_values(config)
    if config.max_new_tokens is not None:
        values["max_new_tokens"] = int(config.max_new_tokens)
    given = dict(settings)
    if isinstance(given.get("processors", {}), dict):  # anything else is refused by the settings check
        values["processors"] = {**values["processors"], **given.pop("processors", {})}
    return {**values, **given}


def config_eos(config) -> list[int] | None:
    """The end-of-text ids a passed generation config stops on, as generate's do; None where it
    names none (the model's own and the tokenizer's then apply)."""
    ids = getattr(config, "eos_token_id", None) if config is not None else None
    if ids is None:
        return None
    return sorted({int(ids)} if isinstance(ids, int) else {int(i) for i in ids})


def stream(model, tokenizer, prompt: str, method: str = "logitspec", *, chat: bool = True,
           generation_config=None, **settings) -> Iterator[StepRecord]:
    """Decode `prompt` and yield each forward pass's StepRecord as it is decoded. The
    generator's return value (StopIteration.value, or `yield from`) is the finished RunTrace.

    Settings are DecodeSettings' fields (max_new_tokens, k, capacity, tree, temperature,
    top_p, top_k, seed, processors={"repetition_penalty": 1.1, ...}, ...); a bad one raises
    InputError with one line, before any pass.
    `generation_config`: a transformers GenerationConfig, by default the model's own, as generate
    takes it: its logits processors, its sampling (when do_sample), max_new_tokens and
    eos_token_id apply, and a setting given here wins over it.
    `chat`: wrap the prompt in the tokenizer's chat template where it has one.
    """
    from .runner import Run

    s = settings_of(method, with_config(model, generation_config, settings))
    text = check_prompt(prompt)
    lm = loaded(model, tokenizer)
    with installed(model):
        run = Run(lm, text, method, s, chat=chat, eos_ids=config_eos(generation_config))
        yield from run
    return run.trace


def generate(model, tokenizer, prompt: str, method: str = "logitspec", *, chat: bool = True,
             generation_config=None, **settings) -> Result:
    """Decode `prompt` to the end; see `stream` for the arguments."""
    steps = stream(model, tokenizer, prompt, method, chat=chat, generation_config=generation_config, **settings)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            trace: RunTrace = done.value
            break
    ids = trace.tokens
    return Result(text=tokenizer.decode(ids, skip_special_tokens=True), token_ids=ids, trace=trace)

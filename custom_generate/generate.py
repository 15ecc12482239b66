"""LogitSpec through transformers' `generate(custom_generate="<this folder or a Hub repo>",
trust_remote_code=True)`. Needs the `logitspec` package installed (requirements.txt here).

transformers hands this function every argument of its generate call; it maps stop strings
and the tokenizer onto a stopping criterion, then lets generate prepare the config, logits
processors, criteria and streamer and call LogitSpec's decoding loop, which ends the streamer.
"""
from transformers import GenerationMixin, StoppingCriteriaList
from transformers.generation.stopping_criteria import StopStringCriteria


def generate(model, *args, tokenizer=None, stop_strings=None, assistant_model=None, stopping_criteria=None,
             **kwargs):
    from logitspec.custom_generate import generate as logitspec_generate
    from logitspec.core.limits import InputError

    if assistant_model is not None:
        raise InputError("assistant_model: LogitSpec drafts by itself; pass method='pld' for prompt lookup")
    criteria = list(stopping_criteria or [])
    config = kwargs.get("generation_config") or model.generation_config
    stops = stop_strings or getattr(config, "stop_strings", None)
    if stops:
        if tokenizer is None:
            raise InputError("stop_strings need the tokenizer: pass tokenizer=... to generate")
        criteria.append(StopStringCriteria(tokenizer, [stops] if isinstance(stops, str) else list(stops)))
    # The class's own generate, not an override a Hub repo may have bound to this model.
    return GenerationMixin.generate(model, *args, custom_generate=logitspec_generate,
                                    stopping_criteria=StoppingCriteriaList(criteria), **kwargs)

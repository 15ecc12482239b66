"""A run: one decoder over one prompt on a loaded model, gathered into a RunTrace."""
from __future__ import annotations

from collections.abc import Iterator

from .core.settings import DecodeSettings
from .decoders import decode
from .models import LoadedModel
from .tokens import token_bytes_hex
from .core.trace import RunTrace, StepRecord


class Run:
    """Iterate to stream StepRecords; `trace` fills as the run goes."""

    def __init__(self, lm: LoadedModel, prompt_text: str, method: str = "logitspec",
                 settings: DecodeSettings | None = None, prompt_ids: list[int] | None = None,
                 chat: bool = True, processors=None, eos_ids: list[int] | None = None) -> None:
        self.lm = lm
        self.processors = processors  # generate's prepared logits processors, when it hands them
        self.settings = settings or DecodeSettings()
        ids = prompt_ids if prompt_ids is not None else lm.encode_chat(prompt_text, chat=chat)
        eos = lm.eos_ids if eos_ids is None else eos_ids  # a passed generation config's, else the model's
        self.trace = RunTrace(
            method=method, model=lm.name, prompt_text=prompt_text, prompt_tokens=list(ids),
            settings=self.settings.to_dict(), eos_token_ids=eos, device=lm.device, dtype=lm.dtype,
        )

    def _on_prefill(self, seconds: float, reused: bool) -> None:
        self.trace.prefill_seconds, self.trace.prefill_reused = seconds, reused

    def __iter__(self) -> Iterator[StepRecord]:
        t = self.trace
        for step in decode(self.lm.model, t.prompt_tokens, t.method, self.settings, t.eos_token_ids, self._on_prefill,
                           self.processors):
            t.steps.append(step)
            yield step
        self.finish()

    def finish(self) -> RunTrace:
        """Attach the token texts and bytes the pictures need (prompt and every drafted token)."""
        t = self.trace
        if self.lm.tokenizer is None:  # transformers' generate hands no tokenizer: ids only
            return t
        ids = set(t.token_ids())
        t.token_texts = self.lm.token_texts(ids)
        t.token_bytes = token_bytes_hex(self.lm.tokenizer, ids)
        return t


def run_trace(lm: LoadedModel, prompt_text: str, method: str = "logitspec",
              settings: DecodeSettings | None = None, **kw) -> RunTrace:
    """Run to the end and return the finished trace."""
    run = Run(lm, prompt_text, method, settings, **kw)
    for _ in run:
        pass
    return run.trace

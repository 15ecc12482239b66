"""A prompt's prefill kept for the next runs of the same prompt on the same model.

Every decoder starts with the same pass: the prompt through the model, nothing drafted. The
lanes of one race, and repeated runs of one prompt, would each compute it again; here the
first run keeps a copy of its cache rows, last logits and final hidden states, and a later run
copies them into its own cache instead. A copy is the pass's own output, so a reused prefill is bit for bit the one
computed. Each run still gets its own cache (nothing is shared after the copy), and the record
keeps the measured seconds of the pass that ran, so the race charges every lane that one
prefill's real time. Only caches whose every layer is one of ours (kvcache.BufferedLayer,
WindowedLayer) are kept: other layers (linear attention, chunked) hold state this copy does
not know. A set of prompts (workbench.decode_set) forgets each prompt's prefill once its runs are
done, so a long set holds one prompt's, not the budget's.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import torch
from transformers import Cache

from .kvcache import BufferedLayer, WindowedLayer

BUDGET_BYTES = 256 * 2**20  # at most this much kept per model: the bundled model's 1,400-token prompt is 66 MiB


@dataclass
class Prefilled:
    """One prompt's prefill: each layer's cached rows, the last position's logits and every
    position's final hidden state (a drafter that stores the prompt's rows maps them to logits)."""

    keys: list[torch.Tensor]  # per layer: [B, H, n, d]
    values: list[torch.Tensor]  # per layer: [B, H, n, d]
    logits: torch.Tensor  # [V]
    seconds: float  # the measured time of the pass that computed it
    hidden: torch.Tensor | None = None  # [n, d]; None where the model's base gave none

    @property
    def nbytes(self) -> int:
        tensors = [*self.keys, *self.values, self.logits, *([] if self.hidden is None else [self.hidden])]
        return sum(t.numel() * t.element_size() for t in tensors)


def _ours(cache: Cache) -> bool:
    return all(type(layer) in (BufferedLayer, WindowedLayer) for layer in cache.layers)


@dataclass
class PrefillStore:
    """The latest prompts' prefills of one model, least recently used dropped first."""

    budget: int = BUDGET_BYTES
    entries: OrderedDict = field(default_factory=OrderedDict)  # key -> Prefilled
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def key(model, prompt) -> tuple:
        # A model moved to another dtype or device computes another prefill.
        return (str(model.dtype), str(model.device), tuple(int(t) for t in prompt))

    def restore(self, model, prompt, cache: Cache) -> Prefilled | None:
        """Copy a kept prefill of `prompt` into the empty `cache`; None when none is kept."""
        if not _ours(cache):
            return None
        key = self.key(model, prompt)
        with self.lock:
            got = self.entries.get(key)
            if got is None:
                return None
            self.entries.move_to_end(key)
        for layer, k, v in zip(cache.layers, got.keys, got.values):
            layer.update(k, v)  # our layers copy into their own buffers
        return got

    def keep(self, model, prompt, cache: Cache, logits: torch.Tensor, seconds: float,
             hidden: torch.Tensor | None = None) -> None:
        """Keep a copy of a prefill just computed into `cache` (before any step wrote to it)."""
        if not _ours(cache):
            return
        got = Prefilled([layer.keys.clone() for layer in cache.layers],
                        [layer.values.clone() for layer in cache.layers], logits.clone(), seconds,
                        None if hidden is None else hidden.clone())
        if got.nbytes > self.budget:
            return
        with self.lock:
            self.entries[self.key(model, prompt)] = got
            while sum(e.nbytes for e in self.entries.values()) > self.budget:
                self.entries.popitem(last=False)

    @property
    def nbytes(self) -> int:
        """The bytes the kept prefills hold."""
        with self.lock:
            return sum(e.nbytes for e in self.entries.values())

    def holds(self, model, prompt) -> bool:
        with self.lock:
            return self.key(model, prompt) in self.entries

    def forget(self, model, prompt) -> bool:
        """Drop `prompt`'s prefill (a set run's finished prompt is not run again); whether one was kept."""
        with self.lock:
            return self.entries.pop(self.key(model, prompt), None) is not None

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()

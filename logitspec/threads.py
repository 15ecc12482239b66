"""Runtime choices applied to every decoder alike, so a race stays fair."""
from __future__ import annotations

import gc
import os

import torch


def configure_threads(n: int | None = None) -> int:
    """Use one intra-op thread per physical core (LOGITSPEC_THREADS overrides); return it."""
    if n is None:
        n = int(os.environ.get("LOGITSPEC_THREADS", "0")) or (os.cpu_count() or 1)
    torch.set_num_threads(max(1, n))
    return torch.get_num_threads()


def freeze_heap() -> int:
    """Keep every object alive now out of the garbage collector's full passes; return how many.

    With the bundled model loaded the process holds about 370,000 long-lived objects
    (transformers, the tokenizer, the model's modules). A full collection walks them all,
    150-180 ms on the development machine, and one fell inside about four in ten 128-token
    LogitSpec runs of the bench, on whichever step was allocating then. Frozen objects are
    still freed by reference counting; after dropping a model, `refreeze_heap` lets the
    collector reclaim its reference cycles.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def refreeze_heap() -> int:
    """Collect everything, dropped models included, then freeze what is left."""
    gc.unfreeze()
    return freeze_heap()

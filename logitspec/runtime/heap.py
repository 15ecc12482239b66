"""The frozen heap: long-lived objects kept out of the garbage collector's full passes."""
from __future__ import annotations

import gc


def freeze_heap() -> int:
    """Keep every object alive now out of the garbage collector's full passes; return how many.

    Loading a model leaves hundreds of thousands of long-lived objects (transformers, the
    tokenizer, the model's modules), and a full collection that walks them all stalls
    whichever decoding step triggers it (measured: docs/performance.md). Frozen objects are
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

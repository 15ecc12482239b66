"""Runtime choices: the frozen heap keeps long-lived objects out of full collections, and a
refreeze lets the collector reclaim what was dropped since."""
from __future__ import annotations

import gc
import weakref

from logitspec.threads import freeze_heap, refreeze_heap


class Cyclic:
    """An object that only the cyclic collector can free (it refers to itself)."""

    def __init__(self) -> None:
        self.me = self


def test_frozen_objects_wait_for_a_refreeze_to_be_collected():
    try:
        obj = Cyclic()
        ref = weakref.ref(obj)
        assert freeze_heap() > 0
        del obj
        gc.collect()
        assert ref() is not None  # frozen: a full collection does not look at it
        refreeze_heap()
        assert ref() is None  # unfrozen, collected, and the rest frozen again
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_objects_made_after_freezing_are_collected_as_usual():
    try:
        freeze_heap()
        obj = Cyclic()
        ref = weakref.ref(obj)
        del obj
        gc.collect()
        assert ref() is None
    finally:
        gc.unfreeze()

"""Runtime choices: the frozen heap keeps long-lived objects out of full collections, and a
refreeze lets the collector reclaim what was dropped since; the model thread runs all model
work on one thread, whichever thread asks."""
from __future__ import annotations

import gc
import threading
import weakref

import pytest

from logitspec.runtime.heap import freeze_heap, refreeze_heap
from logitspec.runtime.threads import ModelThread


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


def _from_threads(fn, count: int = 4, together: bool = True) -> list:
    """fn() called once from each of `count` fresh threads, all at once or one after another;
    the results in order."""
    out = [None] * count

    def work(i: int) -> None:
        out[i] = fn()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
        if not together:
            t.join()
    for t in threads:
        t.join()
    return out


def test_calls_from_any_thread_run_on_the_one_model_thread():
    mt = ModelThread()
    pairs = _from_threads(lambda: (threading.get_ident(), mt.call(threading.get_ident)))
    assert len({ran_on for _, ran_on in pairs}) == 1
    assert all(caller != ran_on for caller, ran_on in pairs)
    assert mt.call(ModelThread.current) is mt and ModelThread.current() is None  # work on it finds it


def test_a_call_returns_the_result_or_raises_the_error_where_it_was_made():
    mt = ModelThread()
    assert mt.call(divmod, 17, 5) == (3, 2)
    with pytest.raises(ZeroDivisionError):
        mt.call(divmod, 1, 0)
    assert mt.call(lambda: mt.call(lambda: "nested")) == "nested"  # no deadlock on nesting


def test_an_iterator_is_stepped_on_the_model_thread_to_its_end():
    mt = ModelThread()

    def steps():
        for i in range(3):
            yield i, threading.get_ident()
        raise ValueError("after three")

    items = mt.iterate(steps())
    got = _from_threads(lambda: next(items), 3, together=False)  # as a server's workers take turns
    assert [i for i, _ in got] == [0, 1, 2]
    assert {ident for _, ident in got} == {mt.call(threading.get_ident)}
    with pytest.raises(ValueError, match="after three"):
        next(items)
    assert list(mt.iterate(iter([]))) == []

"""The model thread and the intra-op thread count, the same for every decoder so a race stays fair."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import torch

T = TypeVar("T")


def configure_threads(n: int | None = None) -> int:
    """Use at most one intra-op thread per core, fewer while other work makes fewer faster
    (runtime.tuner); a count given here or in LOGITSPEC_THREADS is kept as it is. Return the most."""
    from .tuner import env_threads, reset_thread_tuner

    fixed = n is not None or bool(env_threads())
    if n is None:
        n = env_threads() or (os.cpu_count() or 1)
    torch.set_num_threads(max(1, n))
    return reset_thread_tuner(torch.get_num_threads(), fixed or None).most


class ModelThread:
    """The one long-lived thread on which a serving process runs all of its model work.

    torch's CPU kernels run on OpenMP (libgomp), and every thread that starts parallel work
    gets its own team of helper threads for as long as it lives. Once the process holds more
    of them than there are cores, libgomp stops spinning between parallel regions and each of
    the hundreds of regions of a forward pass waits for its helpers to wake up, so loading on
    one thread and decoding on another slows every step (`python scripts/time_threads.py`;
    figures in docs/performance.md).

    A serving process makes one and hands it to everything that runs the model (the app's model
    cache owns it). A Gradio server runs each step of a streamed handler on whichever of its worker threads is
    free, so the app sends loading, measuring and every decoding step here instead. Work is
    done in the order it arrives: a model loading while a race runs holds the race's next
    step until it is done.
    """

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._ident: int | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="model",
                                        initializer=self._remember)
        self._busy = 0  # foreground calls submitted and not yet finished
        self._last_done = time.monotonic()
        self._guard = threading.Lock()

    def _remember(self) -> None:
        self._ident = threading.get_ident()
        threading.current_thread().model_thread = self  # work running here finds it (`current`)

    @staticmethod
    def current() -> "ModelThread | None":
        """The model thread the caller runs on; None off every model thread."""
        return getattr(threading.current_thread(), "model_thread", None)

    def call(self, fn: Callable[..., T], *args, **kwargs) -> T:
        """fn(*args, **kwargs) run on the model thread; its result, or its exception raised here.

        Called on the model thread itself, fn runs at once (no deadlock on nested calls).
        """
        if threading.get_ident() == self._ident:
            return fn(*args, **kwargs)
        with self._guard:
            self._busy += 1
        try:
            return self._pool.submit(fn, *args, **kwargs).result()
        finally:
            with self._guard:
                self._busy -= 1
                self._last_done = time.monotonic()

    def background(self, fn: Callable[[], T]) -> T:
        """fn() run on the model thread as work that does not count as activity, so
        `idle_seconds` still measures the time since the last foreground call."""
        if threading.get_ident() == self._ident:
            return fn()
        return self._pool.submit(fn).result()

    def idle_seconds(self) -> float:
        """Seconds since the last foreground call finished; 0 while one is pending."""
        with self._guard:
            return 0.0 if self._busy else time.monotonic() - self._last_done

    def iterate(self, items: Iterator[T]) -> Iterator[T]:
        """The items of an iterator, each one produced on the model thread."""
        while True:
            try:
                item = self.call(next, items)
            except StopIteration:
                return
            yield item

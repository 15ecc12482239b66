"""Step drawings kept and drawn ahead, so a step move sends figures instead of drawing them.

A step's figures depend only on its run and the view's options, and drawing them (the tree
above all) takes a few hundred milliseconds of one core: most of a step move's time on the
server. The app keeps the last few dozen, and after each move draws the neighbouring steps in
the background while nothing else wants the cores, so the next move (or Play's next step)
finds them drawn.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from logitspec.core.trace import RunTrace
from .figures import run_stamp

T = TypeVar("T")

KEEP = 48  # drawings kept: a recorded run's steps in one view; an explorer step's is about 1 MB
AHEAD_DELAY_SECONDS = 0.15  # let the move's own reply be sent first: drawing ahead holds the GIL


def trace_key(trace: RunTrace) -> tuple:
    """What a step's drawing depends on besides its step and options: the run, and how many steps
    and token texts it holds (a live run gains both as it goes, and its drawings with them)."""
    return run_stamp(trace), len(trace.steps), len(trace.token_texts)


class Drawings:
    """Drawn pieces by key: `get` draws once, `ahead` draws in the background."""

    def __init__(self, idle: Callable[[], bool] = lambda: True, keep: int = KEEP) -> None:
        self.idle = idle  # drawing ahead may take the cores now (no race wants them)
        self.keep = keep
        self._done: OrderedDict[Hashable, object] = OrderedDict()
        self._pending: dict[Hashable, Future] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="draw-ahead")

    def get(self, key: Hashable, draw: Callable[[], T]) -> T:
        """The drawing for `key`: kept, being drawn ahead (waited for), or drawn now."""
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
            pending = self._pending.get(key)
        if pending is not None:
            try:
                return pending.result()
            except Exception:  # noqa: BLE001 - drawn again below, so its error reaches the caller
                pass
        value = draw()
        self._keep(key, value)
        return value

    def ahead(self, key: Hashable, draw: Callable[[], object]) -> None:
        """Draw `key` in the background unless it is kept or pending, and only while `idle()`."""
        with self._lock:
            if key in self._done or key in self._pending:
                return
            self._pending[key] = self._pool.submit(self._draw_ahead, key, draw)

    def _draw_ahead(self, key: Hashable, draw: Callable[[], object]) -> object:
        try:
            time.sleep(AHEAD_DELAY_SECONDS)
            if not self.idle():
                raise LookupError("busy")  # a race wants the cores; the move draws it when asked
            value = draw()
            self._keep(key, value)
            return value
        finally:
            with self._lock:
                self._pending.pop(key, None)

    def _keep(self, key: Hashable, value: object) -> None:
        with self._lock:
            self._done[key] = value
            self._done.move_to_end(key)
            while len(self._done) > self.keep:
                self._done.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._done)

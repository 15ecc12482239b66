"""Stopping a user's run: when they press Stop, leave the page, start another, or run out of time."""
from __future__ import annotations

import threading
import time

from logitspec.core.limits import Limits


class StopSignals:
    """One stop flag per browser session's run: set by Stop, by leaving the page, or by a new run.

    Run arms the flag the moment it is clicked (`start`), before the run waits in the queue
    or for the model, and the run takes that same flag when it begins (`claim`): a Stop
    pressed while it waited is seen before its first step.
    """

    def __init__(self) -> None:
        self._events: dict[str, threading.Event] = {}
        self._running: set[threading.Event] = set()
        self._guard = threading.Lock()

    def start(self, session: str) -> threading.Event:
        """A fresh flag for a new run of `session` (the previous run's flag is set)."""
        ev = threading.Event()
        with self._guard:
            old = self._events.get(session)
            if old is not None:
                old.set()
            self._events[session] = ev
        return ev

    def claim(self, session: str) -> threading.Event:
        """The flag armed for this session's run (already set if Stop came first), or a fresh one."""
        with self._guard:
            ev = self._events.get(session)
            if ev is not None and ev not in self._running:
                self._running.add(ev)
                return ev
        ev = self.start(session)
        with self._guard:
            self._running.add(ev)
        return ev

    def stop(self, session: str) -> bool:
        """Ask the session's run to stop; True when there was one not yet stopped."""
        with self._guard:
            ev = self._events.get(session)
        if ev is None or ev.is_set():
            return False
        ev.set()
        return True

    def finish(self, session: str, ev: threading.Event) -> None:
        """Forget the flag of a run that ended (unless a newer run replaced it)."""
        with self._guard:
            self._running.discard(ev)
            if self._events.get(session) is ev:
                del self._events[session]

    def racing(self, session: str) -> bool:
        """Whether this session's latest run has begun and not yet ended."""
        with self._guard:
            return self._events.get(session) in self._running

    def running(self) -> int:
        """Runs that have begun and not yet ended, across all sessions."""
        with self._guard:
            return len(self._running)


def run_deadline(limits: Limits | None = None) -> float:
    """time.monotonic() value after which a run must stop."""
    return time.monotonic() + (limits or Limits.from_env()).run_seconds

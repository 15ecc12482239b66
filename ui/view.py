"""One visitor's view: the lanes of their last run (or an opened file) and the step shown."""
from __future__ import annotations

import threading
from copy import deepcopy
from dataclasses import dataclass, field, fields

from logitspec.core.trace import RunTrace


@dataclass
class View:
    """One user's state: the lanes of their last run (or a loaded trace) and the step shown."""

    traces: dict[str, RunTrace] = field(default_factory=dict)
    lane: str = "logitspec"  # the lane the explorer shows
    step: int = 0
    held_at: int | None = None  # the step whose neighbours the page holds (ui/held.py)
    source: str = ""  # what the traces came from, for the status line
    stop_reason: str | None = None  # "stopped" or "time limit" when the race was cut short
    tree_view: str = "lanes"  # the explorer's draft tree: "lanes" or "trie"
    compact_tree: bool = True  # the lanes: only branches with a verified token
    playing: int = 0  # the Play loop that moves this view (0: paused)
    racing: bool = False  # a race is filling these traces now
    shown: bool = True  # False once another run or trace has taken this view's place

    def __post_init__(self) -> None:
        # Play's steps and presses run side by side: each moves from the step the one before reached.
        # Not a field: Gradio turns a state's fields into its config, and a lock cannot be copied.
        self.moving = threading.RLock()

    def __deepcopy__(self, memo) -> "View":
        # Gradio copies the initial view for each visitor; a lock cannot be copied, each gets its own.
        return View(**{f.name: deepcopy(getattr(self, f.name), memo) for f in fields(self)})

    def replaced(self) -> None:
        """Another run or trace takes this view's place: its Play loop ends."""
        self.shown = False
        self.playing = 0

    @classmethod
    def of_lanes(cls, lanes: dict[str, RunTrace], source: str, stop_reason: str | None = None) -> "View":
        """A view exploring a trace or race file (shipped or uploaded): LogitSpec's lane where it has one,
        and a race stopped early still says so."""
        return cls(traces=lanes, lane="logitspec" if "logitspec" in lanes else next(iter(lanes)), source=source,
                   stop_reason=stop_reason)

    @property
    def trace(self) -> RunTrace | None:
        return self.traces.get(self.lane) or next(iter(self.traces.values()), None)

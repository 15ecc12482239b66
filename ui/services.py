"""The app's services: the loaded models (and their thread), the runs' stop flags, the kept
drawings, the Play loops' numbers and the download folder. main() creates them once and hands
them to the page; nothing here is global."""
from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from serve.model_cache import ModelCache, warm_cost_curves
from serve.stop import StopSignals

from .drawings import Drawings


@dataclass
class Services:
    """What every handler of one app shares."""

    models: ModelCache
    stops: StopSignals
    drawings: Drawings  # the explorer's and Explain's step figures, kept and drawn ahead
    plays: Iterator[int]  # numbers each Play loop, so a loop knows when it was paused or replaced
    downloads: Path  # where the explorer writes a step's trie for download

    @classmethod
    def create(cls) -> "Services":
        """Fresh services: no model loaded, no run, nothing drawn. Drawing ahead waits while a race runs."""
        stops = StopSignals()
        return cls(models=ModelCache(warm=warm_cost_curves), stops=stops,
                   drawings=Drawings(idle=lambda: not stops.running()), plays=itertools.count(1),
                   downloads=Path(tempfile.mkdtemp(prefix="logitspec-tries-")))

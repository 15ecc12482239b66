"""Shared helpers of the visual/ tests: the real trace fixtures and figure look-ups."""
from __future__ import annotations

import functools
import json
import struct

from helpers.paths import FIXTURES, ROOT, TRACE_FIXTURES
from logitspec.core.trace import RunTrace

FIXTURE_NAMES = ("summarization-241", "coding-121", "writing-81")
# What `python -m visual` writes: one figure page each, and the HTML-only pages.
FIGURES = ("tree", "candidates", "race", "topk_hit", "retrieval_success", "accepted_hist", "time_breakdown")
PAGES = ("retrieval", "text")


@functools.lru_cache(maxsize=None)
def load(name: str) -> RunTrace:
    """A fixture trace (cached: treat it as read-only)."""
    return RunTrace.load(TRACE_FIXTURES[name])


def shipped_traces() -> list[tuple[str, RunTrace]]:
    """Every trace the project ships, by name: the fixtures (greedy and sampled), traces/ and
    each lane of the recorded races."""
    paths = sorted([*TRACE_FIXTURES.values(), *FIXTURES.glob("sampled/*.json"), *(ROOT / "traces").glob("*.json")])
    out = [(p.name, RunTrace.load(p)) for p in paths]
    for path in sorted((ROOT / "traces" / "races").glob("*.json")):
        for lane, d in json.loads(path.read_text())["lanes"].items():
            out.append((f"{path.name}:{lane}", RunTrace.from_dict(d)))
    return out


def traces_named(fig, name: str) -> list:
    return [t for t in fig.data if t.name == name]


def trace_named(fig, name: str):
    found = traces_named(fig, name)
    assert len(found) == 1, f"expected one trace named {name!r}, found {len(found)}"
    return found[0]


def node_ids(trace) -> list[int]:
    """Node ids from a hover trace's customdata ([id, status, token] rows)."""
    if trace.customdata is None:
        return []
    return [int(row[0]) for row in trace.customdata]


def shape_named(fig, name: str):
    found = [s for s in fig.layout.shapes if s.name == name]
    assert len(found) == 1, f"expected one shape named {name!r}, found {len(found)}"
    return found[0]


def true_next_next(trace: RunTrace, i: int) -> int | None:
    """Written here independently of visual.data: the output token after step i's root."""
    s = trace.steps[i]
    if len(s.tokens) > 1:
        return s.tokens[1]
    if s.bonus is not None:
        return s.bonus
    return trace.steps[i + 1].root if i + 1 < len(trace.steps) else None


def interesting_steps(trace: RunTrace, n: int = 4) -> list[int]:
    """The first step, the longest accepted paths, and a path that runs through a g2 branch."""
    steps = {0}
    steps |= set(sorted(range(len(trace.steps)), key=lambda i: -len(trace.steps[i].tokens))[:n])
    for i, s in enumerate(trace.steps):
        if len(s.accepted_path) >= 2 and s.tree[s.accepted_path[1]].origin == "g2":
            steps.add(i)
            break
    return sorted(steps)


def png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG file's header."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])

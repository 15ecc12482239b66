"""Every kind of file the project writes (a single run's trace, a recorded race) and the broken
files people hand its readers instead, for the tests that feed them to each entry point."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.paths import FIXTURES, ROOT

RACE = ROOT / "traces" / "races" / "summarization-242.json"  # written by scripts/record_race.py
SHIPPED = ROOT / "traces" / "coding-122.json"  # a shipped trace (format 1)

# name -> what the one-line refusal must say, for a reader of traces and races
TRACE_REFUSALS = {
    "not-json": "not JSON",
    "empty": "empty",
    "wrong-shape": "not a LogitSpec trace",
    "bad-step-fields": "wrong shape",
    "bad-race-lane": "logitspec lane",
    "truncated": "truncated",
    "folder": "folder",
    "missing": "no such file",
    "binary": "not text",
}


def saved_trace(tmp: Path) -> Path:
    """A trace as `python -m logitspec generate --save-trace` writes it (RunTrace.save, format 2)."""
    from logitspec.core.trace import RunTrace

    path = tmp / "saved-trace.json"
    RunTrace.load(FIXTURES / "writing-81.json.gz").save(path)
    return path


class GoodFiles(dict):
    """Each kind of file the project writes: name -> path; the saved trace is written when first asked for."""

    def __init__(self, tmp: Path) -> None:
        super().__init__({"shipped-trace": SHIPPED, "race": RACE})
        self.tmp = tmp

    def __missing__(self, kind: str) -> Path:
        if kind != "saved-trace":
            raise KeyError(kind)
        self[kind] = saved_trace(self.tmp)
        return self[kind]

    def get(self, kind: str, default=None):
        return self[kind] if kind in GOOD_KINDS else default


GOOD_KINDS = ("saved-trace", "shipped-trace", "race")


def good_files(tmp: Path) -> GoodFiles:
    """Each kind of file the project writes: name -> path."""
    return GoodFiles(tmp)


def broken_file(tmp: Path, kind: str) -> Path:
    """A file of `kind` (a key of TRACE_REFUSALS) under `tmp`; 'missing' names none."""
    path = tmp / f"{kind}.json"
    def race() -> str:
        return RACE.read_text(encoding="utf-8")

    texts = {  # each made only when asked for
        "not-json": lambda: "hello, this is not JSON\n",
        "empty": lambda: "",
        "wrong-shape": lambda: '{"hello": "world"}',
        "bad-step-fields": lambda: '{"format": "logitspec-trace/2", "steps": [{"index": 0, "colour": 1}]}',
        "bad-race-lane": lambda: _race_with_a_bad_step(race()),
        "truncated": lambda: race()[: len(race()) // 2],
    }
    if kind in texts:
        path.write_text(texts[kind](), encoding="utf-8")
    elif kind == "folder":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 8)
    elif kind != "missing":
        raise ValueError(kind)
    return path


def _race_with_a_bad_step(race: str) -> str:
    """The recorded race with a field no step has in its LogitSpec lane."""
    data = json.loads(race)
    data["lanes"]["logitspec"]["steps"][0]["colour"] = 1
    return json.dumps(data)

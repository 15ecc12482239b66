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


def good_files(tmp: Path) -> dict[str, Path]:
    """Each kind of file the project writes: name -> path."""
    return {"saved-trace": saved_trace(tmp), "shipped-trace": SHIPPED, "race": RACE}


def broken_file(tmp: Path, kind: str) -> Path:
    """A file of `kind` (a key of TRACE_REFUSALS) under `tmp`; 'missing' names none."""
    path = tmp / f"{kind}.json"
    race = RACE.read_text(encoding="utf-8")
    texts = {
        "not-json": "hello, this is not JSON\n",
        "empty": "",
        "wrong-shape": '{"hello": "world"}',
        "bad-step-fields": '{"format": "logitspec-trace/2", "steps": [{"index": 0, "colour": 1}]}',
        "bad-race-lane": _race_with_a_bad_step(race),
        "truncated": race[: len(race) // 2],
    }
    if kind in texts:
        path.write_text(texts[kind], encoding="utf-8")
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

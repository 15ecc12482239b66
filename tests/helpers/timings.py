"""Times a test measures and reports without asserting them (a bound would hold on one CPU and fail
on another): printed, and written to artifacts/timings/<name>.json, where docs/performance.md's
figures are read from."""
from __future__ import annotations

import json

from helpers.paths import ROOT

FOLDER = ROOT / "artifacts" / "timings"


def report_times(name: str, aim: float | None = None, **figures) -> None:
    """Print and keep one test's measured times (seconds), with the aim they are held against by eye."""
    from logitspec.runtime.fewrows import cpu_model

    record = {"cpu": cpu_model(), "aim_seconds": aim, **figures}
    FOLDER.mkdir(parents=True, exist_ok=True)
    (FOLDER / f"{name}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    print(f"timing {name}: {json.dumps(record)}")

"""Where the tests find the project and its recorded data."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"  # real traces recorded on the bundled model
SPEC_BENCH = ROOT / "data" / "spec_bench_subset.jsonl"

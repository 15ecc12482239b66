"""Where the tests find the project and its recorded data."""
from __future__ import annotations

import gzip
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"  # real traces recorded on the bundled model
# Its three single-run traces, gzipped (a trace reads as one either way), by name.
TRACE_FIXTURES = {n: FIXTURES / f"{n}.json.gz" for n in ("coding-121", "summarization-241", "writing-81")}


def fixture_text(path: Path) -> str:
    """A gzipped trace fixture's JSON text."""
    return gzip.decompress(path.read_bytes()).decode("utf-8")
SPEC_BENCH = ROOT / "data" / "spec_bench_subset.jsonl"

"""Rewrite a set file's run records from its own traces, for when the failure summary counts more
than it did when the set was written (the traces are written back as they were read).

    python scripts/resummarise_set.py traces/sets/coding-64.jsonl.gz
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from logitspec.analysis.sets import SetWriter, read_set


def resummarise(path: Path) -> int:
    """The set at `path`, rewritten in place; returns its runs."""
    s = read_set(path)
    header = {k: v for k, v in s.header.items() if k != "format"}
    with tempfile.NamedTemporaryFile(suffix="".join(path.suffixes), dir=path.parent, delete=False) as tmp:
        out = Path(tmp.name)
    with SetWriter(out, header) as w:
        for e in s.entries:
            w.add(e.prompt, {"question_id": e.question_id, "category": e.category}, s.trace(e), e.label)
    out.chmod(path.stat().st_mode)
    out.replace(path)
    return len(s.entries)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {resummarise(Path(arg))} runs resummarised")

"""Where Gradio keeps the drawn examples."""
from __future__ import annotations

import hashlib
from pathlib import Path


def example_cache_folder(base: Path, sources: list[Path]) -> Path:
    """A folder for Gradio's example cache named by a hash of what the examples are drawn from.

    Gradio reuses an existing cache folder as it is; naming the folder by the content of the
    traces and of the code that draws them means a change to either draws afresh instead of
    serving stale pictures.
    """
    h = hashlib.sha256()
    for p in sorted(sources):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return base / h.hexdigest()[:16]

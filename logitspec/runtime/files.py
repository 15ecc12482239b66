"""Files written whole or not at all: each is written under a temporary name beside its place and
renamed into it (a rename within a folder is atomic), so another process reading it never sees
half a file, and two processes writing it at once leave one whole copy."""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` for the block to write; renamed over `path` when the block
    ends, removed if it raises. The folder is made first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)

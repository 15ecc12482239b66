"""Runtime choices applied to every decoder alike, so a race stays fair."""
from __future__ import annotations

import os

import torch


def configure_threads(n: int | None = None) -> int:
    """Use one intra-op thread per physical core (LOGITSPEC_THREADS overrides); return it."""
    if n is None:
        n = int(os.environ.get("LOGITSPEC_THREADS", "0")) or (os.cpu_count() or 1)
    torch.set_num_threads(max(1, n))
    return torch.get_num_threads()

"""Re-make the README pictures in docs/img/ from the shipped fixture traces (needs chromium).

    python -m visual.docs_images [--out docs/img]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from logitspec.core.trace import RunTrace

from . import retrieval_success_figure, topk_hit_figure, tree_figure
from .render import Shooter

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

# (file, fixture, what to draw)
IMAGES = (
    # Step 32 of the summarisation run: 182 nodes, a g2 branch accepted 4 drafts, and pruning
    # cut the very token the model wanted next.
    ("tree-64.png", "summarization-241", lambda t: tree_figure(t, 31)),
    ("topk-hit.png", "summarization-241", topk_hit_figure),
    # The run with the most retrieval failures: g2 rescues most steps that plain lookup loses.
    ("retrieval-success.png", "writing-81", retrieval_success_figure),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m visual.docs_images", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    with Shooter() as shoot:
        for name, fixture, draw in IMAGES:
            fig = draw(RunTrace.load(FIXTURES / f"{fixture}.json.gz"))
            print(shoot.figure(fig, a.out / name))
    return 0


if __name__ == "__main__":
    sys.exit(main())

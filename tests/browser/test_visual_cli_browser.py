"""`python -m visual TRACE.json --png yes` renders every picture of a trace to PNG through
Debian's chromium."""
from __future__ import annotations

import pytest

from helpers.browser import chromium_path
from helpers.commands import visual_cli
from helpers.figures import FIGURES, PAGES, png_size
from helpers.paths import FIXTURES


@pytest.mark.browser
@pytest.mark.slow
def test_cli_renders_pngs_with_chromium(tmp_path):
    chromium_path()  # the renderer finds chromium itself: fail here, clearly, if it is missing
    res = visual_cli(str(FIXTURES / "summarization-241.json.gz"), "--step", "31", "--out", str(tmp_path), "--png", "yes")
    assert res.returncode == 0, res.stderr
    for name in FIGURES + PAGES:
        png = tmp_path / f"{name}.png"
        assert png.exists(), name
        w, h = png_size(png)
        assert w >= 800 and h >= 300
    assert png_size(tmp_path / "tree.png")[1] > 1500  # 66 lanes: the tree grows tall, not cramped

"""`python -m visual TRACE.json --step N --out DIR` renders every picture of a trace."""
from __future__ import annotations

import struct
import subprocess
import sys

import pytest
from visual_helpers import CHROMIUM, FIXTURES, ROOT, load

FIGURES = ("tree", "candidates", "race", "topk_hit", "retrieval_success", "accepted_hist", "time_breakdown")
PAGES = ("retrieval", "text")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "visual", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_cli_renders_every_figure_to_offline_html(tmp_path):
    res = run_cli(str(FIXTURES / "writing-81.json"), "--step", "3", "--out", str(tmp_path), "--png", "no")
    assert res.returncode == 0, res.stderr
    js = tmp_path / "plotly.min.js"
    assert js.stat().st_size > 1_000_000  # plotly.js itself, beside the pages: no network needed
    for name in FIGURES:
        page = (tmp_path / f"{name}.html").read_text(encoding="utf-8")
        assert '<script src="plotly.min.js"></script>' in page
        assert "cdn.plot.ly" not in page and "https://cdn" not in page
        assert "Plotly.newPlot" in page
    for name in PAGES:
        assert (tmp_path / f"{name}.html").stat().st_size > 1000
    tree = (tmp_path / "tree.html").read_text(encoding="utf-8")
    assert "accepted path nodes" in tree
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert f"Step 3 of 0–{len(load('writing-81').steps) - 1}" in summary
    assert (tmp_path / "failures.json").exists()
    assert not list(tmp_path.glob("*.png"))


def test_cli_rejects_a_step_out_of_range(tmp_path):
    res = run_cli(str(FIXTURES / "coding-121.json"), "--step", "999", "--out", str(tmp_path), "--png", "no")
    assert res.returncode != 0
    assert "out of range" in res.stderr


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (make browser)")
def test_cli_renders_pngs_with_chromium(tmp_path):
    res = run_cli(str(FIXTURES / "summarization-241.json"), "--step", "31", "--out", str(tmp_path), "--png", "yes")
    assert res.returncode == 0, res.stderr
    for name in FIGURES + PAGES:
        png = tmp_path / f"{name}.png"
        assert png.exists(), name
        w, h = png_size(png)
        assert w >= 800 and h >= 300
    assert png_size(tmp_path / "tree.png")[1] > 1500  # 66 lanes: the tree grows tall, not cramped

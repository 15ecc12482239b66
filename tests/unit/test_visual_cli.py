"""`python -m visual TRACE.json --step N --out DIR` renders every picture of a trace."""
from __future__ import annotations

from helpers.commands import visual_cli, visual_main
from helpers.figures import FIGURES, PAGES, load
from helpers.paths import FIXTURES


def test_cli_renders_every_figure_to_offline_html(tmp_path):
    res = visual_cli(str(FIXTURES / "writing-81.json.gz"), "--step", "3", "--out", str(tmp_path), "--png", "no")
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


def test_cli_rejects_a_step_out_of_range(tmp_path, capsys):
    res = visual_main(capsys, str(FIXTURES / "coding-121.json.gz"), "--step", "999", "--out", str(tmp_path), "--png", "no")
    assert res.returncode != 0
    assert "out of range" in res.stderr

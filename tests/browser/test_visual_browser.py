"""A 64+ node tree in a real browser (Debian's chromium): no token label overlaps another."""
from __future__ import annotations

import itertools

import pytest

from helpers.figures import load
from visual import tree_figure
from visual.render import write_figure_html

pytestmark = pytest.mark.browser

LABELS_JS = """() => {
  const gd = document.getElementById('figure');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const r = gd.getBoundingClientRect();
  const labels = [...gd.querySelectorAll('.scatterlayer .trace .textpoint text')]
    .filter(t => t.textContent.length > 0)
    .map(t => { const b = t.getBoundingClientRect();
                return {text: t.textContent, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom}; });
  const px = (ax, v, o) => o + ax._offset + ax.l2p(v);
  const boxes = gd._fullLayout.shapes.map(s => {
    const xs = [px(xa, s.x0, r.left), px(xa, s.x1, r.left)], ys = [px(ya, s.y0, r.top), px(ya, s.y1, r.top)];
    return {name: s.name, x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys)};
  });
  return {labels, boxes};
}"""


def test_64_node_tree_labels_never_overlap_in_chromium(browser, tmp_path):
    tr = load("summarization-241")
    step = 31
    assert len(tr.steps[step].tree) >= 64
    fig = tree_figure(tr, step)
    html = write_figure_html(fig, tmp_path / "tree.html")
    errors = []
    page = browser.new_page(viewport={"width": fig.layout.width, "height": fig.layout.height})
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri())
    page.wait_for_selector("#figure .main-svg")
    found = page.evaluate(LABELS_JS)
    page.screenshot(path=str(tmp_path / "tree-64.png"))
    page.close()
    assert not errors
    labels, boxes = found["labels"], found["boxes"]
    assert len(labels) >= 64
    assert len(boxes) == len(tr.steps[step].tree) + (tr.steps[step].bonus is not None)
    for a, b in itertools.combinations(labels, 2):
        ox = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
        oy = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
        assert ox <= 0.5 or oy <= 0.5, f"labels overlap: {a} / {b}"
    # Every label sits inside one node box (the text fits where it is drawn).
    for lab in labels:
        cx, cy = (lab["x0"] + lab["x1"]) / 2, (lab["y0"] + lab["y1"]) / 2
        home = [bx for bx in boxes if bx["x0"] <= cx <= bx["x1"] and bx["y0"] <= cy <= bx["y1"]]
        assert len(home) == 1, lab
        bx = home[0]
        assert lab["x0"] >= bx["x0"] - 0.5 and lab["x1"] <= bx["x1"] + 0.5, (lab, bx)
    assert (tmp_path / "tree-64.png").stat().st_size > 50_000

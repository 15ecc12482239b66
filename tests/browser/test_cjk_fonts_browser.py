"""A Chinese prompt's draft tree in a real browser (Debian's chromium): its Chinese tokens are
drawn as characters, not as empty boxes ("tofu"), and its emoji tokens in colour.

Without the Noto CJK and colour-emoji fonts (`make test` installs them with chromium; the
Dockerfile installs them in the image) chromium has no glyph for these characters and draws
the font's "missing glyph" box for every one of them: the same box for every character. So the
test draws each Chinese label of the tree as it is, screenshots it, replaces each of its
characters by a code point no font has (U+10FFFD, always the box) and screenshots it again: with
the fonts the two pictures differ, without them they are the same pixels. A canvas check says
the same of each character alone, and an emoji must be drawn in its own colours, whatever the pen's.
Checked to fail without the fonts: FONTCONFIG_FILE pointing at a configuration with DejaVu and
Liberation alone.
"""
from __future__ import annotations

import io
import re

import pytest

from helpers.browser import SHOTS
from logitspec.runner import run_trace
from logitspec.core.settings import DecodeSettings
from visual import tree_figure
from visual.render import write_figure_html

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROMPT = "用中文介绍一下长城。"  # "Introduce the Great Wall in Chinese."
HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
EMOJI = re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]")
TOFU = "\U0010FFFD"  # a private-use code point no installed font covers: always the missing-glyph box

# The tree's label <text> elements (what plotly drew), each with its id and bounding box.
LABELS_JS = r"""() => {
  const out = [];
  document.querySelectorAll('#figure .scatterlayer .trace .textpoint text').forEach((t, i) => {
    if (!t.textContent) return;
    t.setAttribute('data-label', String(i));
    const b = t.getBoundingClientRect();
    out.push({id: String(i), text: t.textContent, x: b.left, y: b.top, w: b.width, h: b.height,
              font: getComputedStyle(t).fontFamily});
  });
  return out;
}"""

# Replaces every Han character of the chosen labels by the missing-glyph code point.
TO_TOFU_JS = r"""([ids, tofu]) => {
  for (const id of ids) {
    const t = document.querySelector(`[data-label="${id}"]`);
    t.textContent = t.textContent.replace(/[\u3400-\u9fff\uf900-\ufaff]/g, tofu);
  }
}"""

# Each character drawn alone on a canvas in the labels' font: its pixels, as a string, beside
# the missing-glyph box's; and whether it ignores the pen's colour, as a colour font's glyph does
# (it draws its own colours, grey ones too: 🌪) while an outline glyph or the box takes the pen's.
CANVAS_JS = r"""([chars, font, tofu]) => {
  const c = document.createElement('canvas'); c.width = 64; c.height = 64;
  const g = c.getContext('2d', {willReadFrequently: true});
  const draw = (ch, pen) => {
    g.clearRect(0, 0, 64, 64); g.fillStyle = pen; g.font = `40px ${font}`; g.textBaseline = 'top';
    g.fillText(ch, 4, 8);
    return g.getImageData(0, 0, 64, 64).data;
  };
  const sig = (d) => { let s = 0, ink = 0; for (let i = 0; i < d.length; i++) { s = (s * 31 + d[i]) >>> 0; }
                       for (let i = 3; i < d.length; i += 4) if (d[i] > 0) ink++; return [s, ink]; };
  const box = sig(draw(tofu, '#000'));
  return {tofu: box, chars: chars.map(ch => {
    const black = draw(ch, '#000'), s = sig(black), red = sig(draw(ch, '#f00'));
    return {ch, sig: s, own_colours: s[1] > 0 && s[0] === red[0]};
  })};
}"""


@pytest.fixture(scope="module")
def chinese_trace(bundled):
    """A Chinese prompt decoded by the bundled model: its trees hold the prompt's characters
    (g2 candidates retrieved from it) and a few emoji among the next-next guesses."""
    # The static tree: the same trees on every run (the cost tree's size follows the measured time).
    return run_trace(bundled, PROMPT, "logitspec", DecodeSettings(max_new_tokens=24, tree="static"))


def _colour_font_covers(ch: str) -> bool:
    """Whether the installed colour-emoji font has a glyph for `ch` (fontconfig says)."""
    import subprocess

    found = subprocess.run(["fc-list", f":charset={ord(ch):x}", "family"], capture_output=True, text=True)
    return "Noto Color Emoji" in found.stdout


def _labels_with(fig, pattern) -> list[str]:
    out = []
    for tr in fig.data:
        texts = [tr.text] if isinstance(tr.text, str) else list(tr.text or ())
        out += [t for t in texts if t and pattern.search(t)]
    return out


def test_chinese_draft_tree_draws_characters_not_boxes(browser, chinese_trace, tmp_path):
    from PIL import Image, ImageChops

    tr = chinese_trace
    # The step whose tree shows the most Chinese labels.
    counts = [len(_labels_with(tree_figure(tr, i), HAN)) for i in range(len(tr.steps))]
    step = max(range(len(counts)), key=counts.__getitem__)
    assert counts[step] >= 2, f"no step's tree shows two Chinese tokens: {counts}"
    emoji = sorted({ch for i in range(len(tr.steps)) for lab in _labels_with(tree_figure(tr, i), EMOJI)
                    for ch in EMOJI.findall(lab)})
    # Some pictographs in these blocks are no emoji (🌢, 🌣) and no colour font has them; without
    # the font none is covered and the globe, which must then fail, is checked instead.
    emoji = [ch for ch in emoji if _colour_font_covers(ch)] or ["🌍"]

    fig = tree_figure(tr, step)
    html = write_figure_html(fig, tmp_path / "tree.html")
    SHOTS.mkdir(parents=True, exist_ok=True)
    errors = []
    page = browser.new_page(viewport={"width": fig.layout.width, "height": fig.layout.height})
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri())
    page.wait_for_selector("#figure .scatterlayer .trace .textpoint text")  # the labels, not only the frame
    page.evaluate("document.fonts.ready.then(() => true)")
    labels = [lab for lab in page.evaluate(LABELS_JS) if HAN.search(lab["text"])]
    page.screenshot(path=str(SHOTS / "zh-tree.png"))
    before = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    page.evaluate(TO_TOFU_JS, [[lab["id"] for lab in labels], TOFU])
    page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")  # repainted
    after = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    han = sorted({ch for lab in labels for ch in HAN.findall(lab["text"])})
    font = labels[0]["font"] if labels else "sans-serif"
    # U+FE0F asks for the emoji presentation: some (🌪, ☀) default to a plain text glyph.
    glyphs = page.evaluate(CANVAS_JS, [han + [ch + "\ufe0f" for ch in emoji], font, TOFU])
    page.close()
    assert not errors
    assert len(labels) >= 2, labels

    # The screenshot: each Chinese label changes when its characters become the box.
    boxed = []
    for lab in labels:
        box = (int(lab["x"]) - 1, int(lab["y"]) - 1, int(lab["x"] + lab["w"]) + 2, int(lab["y"] + lab["h"]) + 2)
        if ImageChops.difference(before.crop(box), after.crop(box)).getbbox() is None:
            boxed.append(lab["text"])
    assert not boxed, (f"drawn as missing-glyph boxes (no CJK font?): {boxed}; "
                       f"screenshot {SHOTS / 'zh-tree.png'}")

    # Each character alone: ink, unlike the box, and unlike each other (every box is alike).
    tofu = glyphs["tofu"]
    drawn = {g["ch"]: g for g in glyphs["chars"]}
    for ch in han:
        assert drawn[ch]["sig"][1] > 0, f"{ch!r} drew nothing"
        assert drawn[ch]["sig"] != tofu, f"{ch!r} is drawn as the missing-glyph box"
    assert len({tuple(drawn[ch]["sig"]) for ch in han}) == len(han), "two characters drew the same pixels"
    # Emoji in colour: a colour font's glyph is the same whatever the pen; a missing glyph is not.
    for ch in (e + "\ufe0f" for e in emoji):
        assert drawn[ch]["sig"] != tofu and drawn[ch]["own_colours"], (
            f"{ch!r} is not drawn from a colour font (no colour-emoji font?): {drawn[ch]}")

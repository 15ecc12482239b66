"""Write figures to self-contained HTML (plotly.js beside them, no network) and to PNG
through Debian's chromium in headless mode."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from .style import PLOT_CONFIG, theme_colors

PLOTLY_JS = "plotly.min.js"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
# Chromium's flags for every drawing here (and the browser tests): no sandbox, no network chatter.
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-extensions", "--mute-audio",
                "--force-device-scale-factor=1"]


def find_chromium() -> str | None:
    env = os.environ.get("CHROMIUM")
    for path in ([env] if env else []) + list(CHROMIUM_CANDIDATES):
        if path and os.access(path, os.X_OK):
            return path
    return None


def write_plotly_js(out_dir: Path) -> Path:
    """plotly.js once per folder, so every page works offline."""
    path = Path(out_dir) / PLOTLY_JS
    if not path.exists():
        path.write_text(get_plotlyjs(), encoding="utf-8")
    return path


def page(body: str, title: str, theme: str = "light", head: str = "") -> str:
    c = theme_colors(theme)
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{title}</title>{head}"
        f"<style>html,body{{margin:0;padding:0;background:{c['bg']};color:{c['text']};"
        "font-family:'DejaVu Sans','Liberation Sans',Arial,sans-serif}</style>"
        f"</head><body>{body}</body></html>\n"
    )


def write_figure_html(fig: go.Figure, path: str | Path, theme: str = "light") -> Path:
    """The figure as an HTML page that loads plotly.min.js from its own folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_plotly_js(path.parent)
    div = fig.to_html(full_html=False, include_plotlyjs=False, config={**PLOT_CONFIG, "responsive": False},
                      div_id="figure")
    title = (fig.layout.title.text or path.stem) if fig.layout.title else path.stem
    head = f"<script src=\"{PLOTLY_JS}\"></script>"
    path.write_text(page(div, _plain(title), theme, head), encoding="utf-8")
    return path


def write_html_fragment(fragment: str, path: str | Path, title: str, theme: str = "light", width: int = 1200) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = f"<div style=\"max-width:{width}px;padding:16px\">{fragment}</div>"
    path.write_text(page(body, _plain(title), theme), encoding="utf-8")
    return path


def _plain(text: str) -> str:
    import html
    import re

    return html.escape(re.sub(r"<[^>]+>", " ", text))


def figure_size(fig: go.Figure, default: tuple[int, int] = (1200, 700)) -> tuple[int, int]:
    w = fig.layout.width or default[0]
    h = fig.layout.height or default[1]
    return int(w), int(h)


def chromium_command(exe: str, profile: str, url: str, png_path: Path, width: int, height: int,
                     budget_ms: int = 15000) -> list[str]:
    """Headless chromium drawing `url` into `png_path` at `width` x `height` (BROWSER_ARGS, no network)."""
    return [exe, "--headless", *BROWSER_ARGS, "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--screenshot={png_path}", f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}", url]


def screenshot(html_path: str | Path, png_path: str | Path, width: int, height: int,
               chromium: str | None = None, timeout: float = 60.0) -> Path:
    """A PNG of an HTML page as Debian's chromium draws it (headless, no network)."""
    exe = chromium or find_chromium()
    if exe is None:
        raise RuntimeError("no chromium found: install Debian's chromium (apt-get install chromium)")
    png_path = Path(png_path).resolve()
    png_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="visual-chromium-") as profile:
        cmd = chromium_command(exe, profile, Path(html_path).resolve().as_uri(), png_path, width, height)
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, text=True)
    if not png_path.exists():
        raise RuntimeError(f"chromium made no screenshot (exit {res.returncode}): {res.stderr[-2000:]}")
    return png_path


class Shooter:
    """Screenshots of many pages with one browser: Playwright driving Debian's chromium when
    Playwright is installed, else one headless chromium per page."""

    def __init__(self, chromium: str | None = None) -> None:
        self.exe = chromium or find_chromium()
        if self.exe is None:
            raise RuntimeError("no chromium found: install Debian's chromium (apt-get install chromium)")
        self._pw = self._browser = self._plot_page = None
        self._tmp = None

    def __enter__(self) -> "Shooter":
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            return self
        self._pw = sync_playwright().start()
        self._browser = self._pw.chromium.launch(executable_path=self.exe, args=BROWSER_ARGS)
        return self

    def __exit__(self, *exc) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
        if self._browser is not None:
            self._browser.close()
        if self._pw is not None:
            self._pw.stop()

    def __call__(self, html_path: str | Path, png_path: str | Path, width: int, height: int,
                 full_page: bool = False) -> Path:
        if self._browser is None:
            return screenshot(html_path, png_path, width, height, self.exe)
        png_path = Path(png_path)
        png_path.parent.mkdir(parents=True, exist_ok=True)
        page = self._browser.new_page(viewport={"width": width, "height": height})
        try:
            page.goto(Path(html_path).resolve().as_uri())
            page.wait_for_load_state("load")
            if page.query_selector("#figure") is not None:
                page.wait_for_selector("#figure .main-svg", timeout=30000)
            page.screenshot(path=str(png_path), full_page=full_page)
        finally:
            page.close()
        return png_path

    def figure(self, fig: go.Figure, png_path: str | Path, theme: str = "light") -> Path:
        """A PNG of a figure as plotly.js draws it; one page loads plotly.js once for all figures."""
        width, height = figure_size(fig, (1280, 640))
        png_path = Path(png_path)
        if self._browser is None:
            with tempfile.TemporaryDirectory(prefix="visual-fig-") as tmp:
                html_path = write_figure_html(fig, Path(tmp) / "figure.html", theme)
                return screenshot(html_path, png_path, width, height, self.exe)
        if self._plot_page is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="visual-fig-")
            host = Path(self._tmp.name) / "host.html"
            write_plotly_js(host.parent)
            host.write_text(page('<div id="figure"></div>', "figure", theme,
                                 f'<script src="{PLOTLY_JS}"></script>'), encoding="utf-8")
            self._plot_page = self._browser.new_page(viewport={"width": width, "height": height})
            self._plot_page.goto(host.as_uri())
        pg = self._plot_page
        pg.set_viewport_size({"width": width, "height": height})
        c = theme_colors(theme)
        pg.evaluate(
            """([fig, config, bg]) => { document.body.style.background = bg;
                 const f = JSON.parse(fig);
                 return Plotly.newPlot('figure', f.data, f.layout, config); }""",
            [fig.to_json(), {**PLOT_CONFIG, "responsive": False}, c["bg"]],
        )
        pg.wait_for_selector("#figure .main-svg")
        png_path.parent.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(png_path))
        return png_path

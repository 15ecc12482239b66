"""The present switch: large type for a projector, on every tab.

On, no text on the page and no label on a figure is smaller than PRESENT_VW per cent of the
window's width: 24 px at 1920, 16 px on a 1280 projector (the same share of the screen), at least
16 px on a phone. The page's text grows through Gradio's theme sizes and the root font size
(PRESENT_CSS); the figures raise their own fonts in the browser (ui/figures.js). The switch never
reaches the server, so it is instant and keeps the run on screen; `?present=1` in a link turns it
on when the page opens.
"""
from __future__ import annotations

import gradio as gr

PRESENT_VW = 1.25  # the smallest type with the switch on, in per cent of the window's width
PHONE_PX = 16  # and never below this (a narrow window)
OFF_LABEL, ON_LABEL = "Present: large type", "Presenting: click for normal type"

# Gradio's sizes are theme variables declared on :root, and the ones built from others (a label's
# size from --text-sm) are resolved there too: so they are all set again on the root element.
# rem sizes (the page's own CSS, down to .85rem) follow the root font, set so that .85rem is the floor.
PRESENT_CSS = f"""
html.present {{
  --present-px: max({PHONE_PX}px, {PRESENT_VW}vw);
  --text-xxs: var(--present-px); --text-xs: var(--present-px); --text-sm: var(--present-px);
  --text-md: var(--present-px); --text-lg: calc(var(--present-px) * 1.15);
  --text-xl: calc(var(--present-px) * 1.35); --text-xxl: calc(var(--present-px) * 1.6);
  --block-label-text-size: var(--present-px); --block-info-text-size: var(--present-px);
  --block-title-text-size: var(--present-px); --body-text-size: var(--present-px);
  --button-small-text-size: var(--present-px); --button-large-text-size: calc(var(--present-px) * 1.15);
  --checkbox-label-text-size: var(--present-px); --input-text-size: var(--present-px);
  --section-header-text-size: var(--present-px); --prose-text-size: var(--present-px);
  font-size: calc(var(--present-px) / .85);
}}
/* a sub- or superscript (x_{{i+1}}) keeps its place, not a smaller size */
html.present sub, html.present sup {{ font-size: var(--present-px); }}
html.present .js-plotly-plot tspan[style*="font-size:70%"] {{ font-size: 100% !important; }}  /* Plotly's <sub> */
/* and so in the hidden svg where Plotly measures a text (a legend entry's width), or it clips what it drew */
html.present #js-plotly-tester tspan[style*="font-size:70%"] {{ font-size: 100% !important; }}
/* One column, as on a phone: the prompt and Run, then the results table and the race figure (so
   the live counters stay in view during a race and keep every column), then the rest. */
html.present #race-row {{ flex-direction: column; flex-wrap: nowrap; }}
html.present #race-form, html.present #race-views {{ display: contents; }}
html.present #race-form > *, html.present #race-views > * {{ order: 3; }}
html.present #race-form > :has(#prompt), html.present #race-form > :has(#run) {{ order: 0; }}
html.present #counters {{ order: 1; }}
html.present #race-views > .fig-slot:has(#race-plot) {{ order: 2; }}
/* !important: Gradio also copies each rule under its container, which outranks html.present here */
html.present .counters {{ font-size: max(var(--present-px), 1.05rem) !important; }}
#present-switch {{ flex: 0 0 auto; }}
html.present #present-switch {{ outline: 3px solid var(--color-accent); }}
@media (max-width: 640px) {{ #present-switch {{ display: none; }} }}  /* a phone is no projector; ?present=1 still works */
"""

# Turns the switch on or off (`on`: true, false, or undefined to flip it), keeps it in the address
# so a copied link opens the same way, and draws every figure again for it.
PRESENT_FN = f"""
(on) => {{
  const root = document.documentElement;
  on = on === undefined ? !root.classList.contains('present') : !!on;
  root.classList.toggle('present', on);
  const b = document.querySelector('#present-switch button, button#present-switch');
  if (b) {{ b.textContent = on ? {ON_LABEL!r} : {OFF_LABEL!r}; b.setAttribute('aria-pressed', String(on)); }}
  const url = new URL(window.location.href);
  if (on) url.searchParams.set('present', '1'); else url.searchParams.delete('present');
  window.history.replaceState(window.history.state, '', url);
  window.logitspecFigures?.presentChanged();
}}
"""
TOGGLE_JS = f"() => {{ ({PRESENT_FN})(); }}"
# At page load: a link's `?present=1` turns the switch on.
PRESENT_LOAD_JS = f"""
() => {{
  window.logitspecPresent = {PRESENT_FN};
  const asked = (new URLSearchParams(window.location.search).get('present') || '').toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(asked)) window.logitspecPresent(true);
}}
"""


def present_switch() -> gr.Button:
    """The switch: a button whose press runs in the browser alone."""
    btn = gr.Button(OFF_LABEL, variant="secondary", size="sm", elem_id="present-switch", scale=0, min_width=220)
    btn.click(None, None, None, js=TOGGLE_JS)
    return btn

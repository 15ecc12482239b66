"""The Explain tab's lesson: its stages, each its words and one large figure, then a glossary.

Layout only: the words, the figures and the glossary come from visual.lesson; the last stage
prices the step on the race's own pass costs and on the machines' curves the app ships.
"""
from __future__ import annotations

import html
import re

import gradio as gr

from logitspec.core.trace import RunTrace
from visual.lesson import (
    STAGES, TEXT_PX, g2_step, glossary_html, glossary_words, lesson, lesson_intro, lesson_step, methods_html,
)

from .files import recorded_pass_costs, recorded_race

PHONE_TEXT_PX = 17  # the lesson's words on a phone
# Large words and a visible mark on every defined term; a stage is at most one screen tall.
LESSON_CSS = f"""
.lesson-words p, .lesson-words dt, .lesson-words dd {{ font-size: {TEXT_PX}px; line-height: 1.35; margin: .3rem 0; }}
.lesson-words h3 {{ font-size: {TEXT_PX + 6}px; margin: .2rem 0; }}
.lesson-words abbr.lesson-term {{ text-decoration: underline dotted; cursor: help; }}
.lesson-words dt {{ font-weight: 600; }}
.lesson-words dd {{ margin-left: 1.5rem; }}
/* A phone reads at arm's length: a room's type there gave three to five words a line. */
@media (max-width: 640px) {{
  .lesson-words p, .lesson-words dt, .lesson-words dd {{ font-size: {PHONE_TEXT_PX}px; }}
  .lesson-words h3 {{ font-size: {PHONE_TEXT_PX + 4}px; }}
}}
"""

NO_G2 = ("{run} never needed a guess for the token after next (g2): every guess the model kept was copied "
         "(g1). So this lesson shows a race recorded on this app's model, where such guesses were kept.")


def plain_words(words: str) -> str:
    """The tab's words for a run without its file names (`name`): students see what the run is."""
    return html.escape(re.sub(r",?\s*`[^`]*`", "", words), quote=False)


def linked_words(linked: int, taught: int) -> str:
    """Where the step a link named is shown, beside the step the lesson teaches."""
    if linked == taught:
        return f"Your link named step {linked}: the step this lesson teaches."
    return (f"Your link named step {linked}: it is taken apart in the <b>In detail</b> tab above. "
            f"This lesson teaches step {taught}, for the reason below.")


def stage_html(title: str, words: str) -> str:
    return f'<div class="lesson-words"><h3>{title}</h3>{words}</div>'


def race_of(trace: RunTrace, lanes: dict[str, RunTrace] | None) -> dict[str, RunTrace]:
    """The lanes `trace` ran beside: `lanes` when it is one of them, the recorded race's when it is
    that race's, else none (a trace opened alone is priced on its own passes)."""
    recorded = recorded_race()
    for group in (lanes or {}, recorded[0] if recorded else {}):
        if any(t is trace for t in group.values()):
            return group
    return {}


class LessonView:
    """The lesson's components; `fill` draws them for a run."""

    def build(self) -> None:
        """Call inside the lesson's tab."""
        self.pass_costs = recorded_pass_costs()  # other machines' measured c(n), for the last stage
        self.intro = gr.HTML(elem_id="lesson-intro", css_template=LESSON_CSS)
        self.texts: dict[str, gr.HTML] = {}
        self.plots: dict[str, gr.Plot] = {}
        for key, (title, _, _) in STAGES.items():
            with gr.Column(elem_id=f"lesson-{key}", elem_classes=["lesson-stage"]):
                self.texts[key] = gr.HTML(elem_id=f"lesson-{key}-text", css_template=LESSON_CSS)
                self.plots[key] = gr.Plot(show_label=False, label=title, elem_id=f"lesson-{key}-plot")
        self.glossary = gr.HTML(elem_id="lesson-glossary", css_template=LESSON_CSS)
        gr.HTML(methods_html(), elem_id="lesson-methods", css_template=LESSON_CSS)  # the same for every run

    @property
    def outputs(self) -> list:
        return [self.intro, *self.texts.values(), *self.plots.values(), self.glossary]

    def fill(self, trace: RunTrace, words: str, other: RunTrace | None = None, linked: int | None = None,
             lanes: dict[str, RunTrace] | None = None) -> dict:
        """Every output for `trace`; `words` name the run (as the tab's heading does). A run where
        no next-next guess (g2) was kept is said so, and the lesson is drawn on `other` (a recorded
        run that kept some) when there is one. `linked`: the step a link named, which waits under
        "In detail" while the lesson teaches its own step; the lesson says so. `lanes`: the race on
        screen, whose vanilla lane times the one-token pass the last stage prices against."""
        named = plain_words(words)
        said = f"<p>This lesson reads {named}.</p>"
        if g2_step(trace) is None and other is not None and g2_step(other) is not None:
            said = f"<p>{NO_G2.format(run=named[:1].upper() + named[1:])}</p>"
            trace, linked = other, None  # the link's step is of the run the lesson does not read
        if linked is not None:
            said += f"<p>{linked_words(linked, lesson_step(trace))}</p>"
        stages = lesson(trace, lanes=race_of(trace, lanes), curves=self.pass_costs)
        out = {self.intro: f'<div class="lesson-words">{said}{lesson_intro(trace)}</div>'}
        for st in stages:
            out[self.texts[st.key]] = stage_html(st.title, st.html)
            out[self.plots[st.key]] = st.figure
        said = "".join(out[c] for c in (self.intro, *self.texts.values()))
        out[self.glossary] = stage_html("Words used in this lesson", glossary_html(glossary_words(said)))
        return out

"""A lesson for someone who has never heard of speculative decoding, drawn from one run's trace.

Six stages in plain words: one token per pass is slow; guess ahead; where the guesses come
from; check every guess in one pass; keep what the model agrees with; why it pays on a GPU (the
step priced on measured pass costs, visual/lesson_pays.py). Each stage is a few
sentences and one large figure of the same real step (one where a next-next guess, g2, led to
the tokens the model kept: the paper's own idea), every number read from the trace and
`visual.counts.run_counts`. Every technical word is wrapped in an <abbr> whose title is its
GLOSSARY definition, the words a student cannot guess are defined in the sentence itself, and
the lesson ends with a glossary of the words it used. Pure: a trace in, HTML and Plotly figures out.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import plotly.graph_objects as go

from logitspec.analysis.lanes import lane, race_order
from logitspec.analysis.pays import PassCosts
from logitspec.core.trace import RunTrace, StepRecord, TreeNode

from .counts import RunCounts, plural, run_counts
from .data import context_before, step_position, tok, true_next_next
from .fit import wrap_html
from .glossary import GLOSSARY, ON_SCREEN, term  # noqa: F401  the lesson's words, read from here too
from .lesson_pays import TITLE as PAYS_TITLE, pays_bars, pays_words
from .method_words import LOGITSPEC, words_of
from .style import (
    FONT_FAMILY, MONO_CHAR_EM, MONO_FAMILY, PALETTE, marks_note, node_color_key, text_on, theme_colors, truncate,
    visible,
)
from .trie import edge_trace, fold_leaves, fold_mark, node_traces, step_graph, tidy_positions

TEXT_PX = 26  # lesson words on the page: readable from the back of a room at 1920x1080
TICK_PX = 20  # every tick label and note on a lesson figure (the brief's floor is 18)
FIG_H = 340  # a lesson figure's height: words (their terms defined in the sentence) + figure fit one 1280x720 screen
ROW_BOXES = 9  # token boxes in a row figure: each holds a readable token at TICK_PX
BOX_CHARS = 7  # characters shown in a token box
BOX_PAD_PX = 12  # a token box's room around its label
CONTEXT_BOXES = 2  # tokens of the text so far shown before the step's own
GUESS_BOXES = ROW_BOXES - CONTEXT_BOXES - 1  # guesses drawn in stage 2, after the next token
# A bar's name and the axis title wrap to this width: on a phone both sit whole beside a plot wide enough for its bars.
BAR_WRAP_PX = 170

@dataclass
class Stage:
    key: str  # slow | guess | sources | check | keep | pays
    title: str
    html: str  # the stage's words, each technical term in an <abbr>
    figure: go.Figure


def terms_used(text: str) -> list[str]:
    """The glossary words an HTML text marks as terms, in order of first use."""
    seen: list[str] = []
    for w in re.findall(r'data-term="([^"]+)"', text):
        w = html.unescape(w)
        if w not in seen:
            seen.append(w)
    return seen


def glossary_words(text: str) -> list[str]:
    """The glossary words an HTML text uses, marked or not (plurals too), in order of first use."""
    plain = html.unescape(re.sub(r"<[^>]+>", " ", text)).lower()
    found = {w: m.start() for w in GLOSSARY if (m := re.search(rf"\b{re.escape(w)}(e?s)?\b", plain))}
    return sorted(found, key=found.get)


COMPARED = "Where each method gets its guesses"


def methods_html() -> str:
    """The lesson's comparison: where each race lane's method gets its guesses, in its own words
    (visual/method_words.py), LogitSpec first; a method the race offers twice is said once."""
    said = []
    for name in race_order():
        w = words_of(lane(name).method)
        if w.guesses and w not in said:
            said.append(w)
    said.sort(key=lambda w: w is not LOGITSPEC)
    items = "".join(f"<p><b>{html.escape(w.name)}</b> {html.escape(w.guesses)}</p>" for w in said)
    return f'<div class="lesson-words"><h3>{COMPARED}</h3>{items}</div>'


def glossary_html(words: list[str]) -> str:
    """The glossary of `words`, as a definition list."""
    items = "".join(f"<dt>{html.escape(w)}</dt><dd>{html.escape(GLOSSARY[w])}</dd>" for w in words)
    return f'<dl class="lesson-glossary">{items}</dl>'


# ---------------------------------------------------------------- the step and its facts


def g2_kept(s: StepRecord) -> int:
    """How many of the tokens a step kept came from a next-next guess (g2) and its copied branch."""
    by_id = {n.id: n for n in s.tree}
    return sum(by_id[i].origin == "g2" for i in s.accepted_path[1:] if i in by_id)


def g2_step(trace: RunTrace) -> int | None:
    """The forward step where g2 led to the most kept tokens (the earliest on a tie); None when
    no step of the run kept a g2 guess."""
    steps = [i for i, s in enumerate(trace.steps) if s.forward and g2_kept(s)]
    return max(steps, key=lambda i: (g2_kept(trace.steps[i]), -i)) if steps else None


def lesson_step(trace: RunTrace) -> int:
    """The step the lesson teaches on: g2_step's, else the forward step that accepted the most
    draft tokens (the earliest on a tie)."""
    best = g2_step(trace)
    if best is not None:
        return best
    steps = [i for i, s in enumerate(trace.steps) if s.forward] or list(range(len(trace.steps)))
    if not steps:
        raise IndexError("the trace holds no steps yet")
    return max(steps, key=lambda i: (trace.steps[i].drafts_accepted, -i))


def guessed_chain(s: StepRecord) -> list[TreeNode]:
    """The accepted path's drafts, then the checked guesses that went on along one branch after it."""
    by_id = {n.id: n for n in s.tree}
    chain = [by_id[i] for i in s.accepted_path[1:] if i in by_id]
    last = s.accepted_path[-1] if s.accepted_path else 0
    while True:
        kids = [n for n in s.tree if n.parent == last and not n.pruned]
        if not kids:
            return chain
        chain.append(kids[0])
        last = kids[0].id


@dataclass
class Facts:
    """What the lesson states, read once from the trace."""

    trace: RunTrace
    c: RunCounts
    step: int  # index into trace.steps
    s: StepRecord
    ctx: list[int]  # the context before the step's root
    chain: list[TreeNode]  # guesses on the accepted branch: accepted ones, then rejected ones
    lanes: dict[str, RunTrace] = field(default_factory=dict)  # the race the run ran in, when known
    curves: list[PassCosts] = field(default_factory=list)  # other machines' measured pass costs

    def word(self, tokens: list[int], before: list[int] | None = None) -> str:
        """Tokens as «visible text», HTML-escaped."""
        b = list(self.ctx if before is None else before)
        text = "".join(tok(self.trace, t, b + tokens[:j]) for j, t in enumerate(tokens))
        return html.escape(f"«{truncate(visible(text), 40)}»", quote=False)

    @property
    def verified(self) -> list[TreeNode]:
        return [n for n in self.s.tree if not n.pruned and n.parent >= 0]

    @property
    def sampled(self) -> bool:
        return bool(self.trace.settings.get("temperature") or 0)


def lesson_facts(trace: RunTrace, lanes: dict[str, RunTrace] | None = None,
                 curves: list[PassCosts] | tuple = ()) -> Facts:
    i = lesson_step(trace)
    s = trace.steps[i]
    return Facts(trace, run_counts(trace), i, s, context_before(trace, i), guessed_chain(s), dict(lanes or {}),
                 list(curves))


# ---------------------------------------------------------------- the first five stages' words


def _p(*sentences: str) -> str:
    return "<p>" + " ".join(sentences) + "</p>"


def slow_words(f: Facts) -> str:
    c = f.c
    return _p(f"A language model writes one {term('token', define=True)} at a time: each "
              f"{term('forward pass')} reads all the text so far and gives one more token.",
              f"This run wrote {plural(c.tokens, 'token')}; {term('plain decoding')} would need "
              f"{plural(max(c.tokens - 1, 0), 'forward pass', 'forward passes')} after reading the prompt.",
              f"LogitSpec needed {plural(c.passes, 'forward pass', 'forward passes')}: "
              f"{c.tokens_per_pass:.2f} tokens per pass.")


def marks_words(f: Facts, tokens: list[int]) -> str:
    """The note on how whitespace is drawn: space and new line always, a rarer mark where shown."""
    shown = "".join(tok(f.trace, t) for t in tokens)
    split = ", ‹E3 81› the bytes, in hex, of a character split between tokens" if "‹" in shown else ""
    return f"({marks_note(shown + '·⏎')}{split}.)"


def guess_words(f: Facts) -> str:
    s = f.s
    tail = f.word(f.ctx[-CONTEXT_BOXES:], f.ctx[:-CONTEXT_BOXES])
    guesses = [n.token for n in f.chain]
    tokens = [s.root] + guesses
    more = len(guesses) - GUESS_BOXES
    drawn = f" (the first {GUESS_BOXES} drawn below, and {more} more)" if more > 0 else ""
    said = (f"along its best branch it guessed the {plural(len(guesses), 'token')} after it, "
            f"{f.word(guesses, f.ctx + [s.root])}, as {term('draft', 'drafts')}{drawn}" if guesses
            else "it had no guess to go on with")
    return _p("The idea: guess several tokens ahead, then let the model check them all at once.",
              f"Take step {step_position(f.trace, f.step)} of this run. The text ended in {tail}, and the model's "
              f"next token was {f.word([s.root])};", said + ".", marks_words(f, f.ctx[-CONTEXT_BOXES:] + tokens))


def _origin_counts(nodes: list[TreeNode]) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in nodes:
        out[n.origin] = out.get(n.origin, 0) + 1
    return out


def _copied(got: dict[str, int]) -> int:
    """Guesses copied after the next token: g1's, or prompt lookup's in a run without g1."""
    return got.get("g1", 0) + got.get("pld", 0)


def sources_words(f: Facts) -> str:
    got = _origin_counts(f.verified)
    s = f.s
    first = _p(f"Copying: a {term('g1')} lookup finds the last few tokens (an {term('n-gram')}) earlier in the "
               f"{term('context', define=True)} and copies what followed them there.",
               f"At this step it gave {plural(_copied(got), 'checked guess', 'checked guesses')}.")
    truth = true_next_next(f.trace, f.step)
    rank = next((c.rank for c in s.candidates if c.token == truth), None)
    where = (f"The true token after next, {f.word([truth], f.ctx + [s.root])}, was guess {rank} of "
             f"{len(s.candidates)}." if rank is not None else
             f"The true token after next was not among the {len(s.candidates)} guesses.")
    second = _p(f"The paper's twist: the {term('logits', define=True)} that chose the next token also rank the "
                f"token after next.",
                f"The top {len(s.candidates)} are {term('next-next guess', 'next-next guesses')}, each copied on "
                f"by a {term('g2')} lookup: {plural(got.get('g2', 0), 'checked guess', 'checked guesses')} here.",
                where, _kept_from(f))
    return first + second


ORIGIN_WORDS = {"g1": "copying (g1)", "pld": "copying (g1)", "g2": "a next-next guess (g2)"}


def _kept_from(f: Facts) -> str:
    """Where the guesses the model kept came from."""
    a = f.s.drafts_accepted
    kinds = sorted({ORIGIN_WORDS.get(n.origin, "another source") for n in f.chain[:a]})
    if not kinds:
        return "The model kept none of them at this step."
    return f"The {plural(a, 'guess', 'guesses')} the model kept came from {' and '.join(kinds)}."


def check_words(f: Facts) -> str:
    n = len(f.verified)
    return _p(f"The guesses, joined into a {term('draft tree')}, go through the model together:",
              f"one forward pass checked all {plural(n, 'guessed token')} of step {step_position(f.trace, f.step)}.",
              f"A {term('tree attention mask')} lets each guess see only the text before it and its own branch, "
              f"so each is scored as if it had been written alone.")


def keep_words(f: Facts) -> str:
    s = f.s
    a = s.drafts_accepted
    kept = (f"The model agreed with {plural(a, 'guess', 'guesses')} in a row, "
            f"{f.word(list(s.tokens[1:]), f.ctx + [s.root])}." if a else "The model agreed with none of the guesses.")
    after = f.ctx + list(s.tokens)
    wrong = f.chain[a] if len(f.chain) > a else None
    if s.bonus is None:
        then = "The run ended there."
    elif wrong is not None:
        then = (f"Then it wanted {f.word([s.bonus], after)} where the guess said {f.word([wrong.token], after)}: "
                f"that guess and the rest are dropped, and the model's own choice is kept as the "
                f"{term('bonus token')}.")
    else:
        then = f"Its own next choice, {f.word([s.bonus], after)}, comes free as the {term('bonus token')}."
    if s.bonus is not None and f.step + 1 < len(f.trace.steps):
        # the explorer's text colours it with the next step, which writes it first: say so here too
        then += f" It is written first by step {step_position(f.trace, f.step + 1)}, the next pass."
    plain = term("sampling", "sampling with the same seed") if f.sampled else term("plain decoding")
    return _p(kept, then,
              f"So step {step_position(f.trace, f.step)} wrote {plural(len(s.tokens), 'token')} in one pass, and the "
              f"text is exactly what {plain} writes: {term('lossless')}.")


# ---------------------------------------------------------------- figures


def _layout(theme: str, **kw) -> dict:
    c = theme_colors(theme)

    def axis() -> dict:  # a fresh dict per axis: a title set on one must not show on the other
        return dict(tickfont=dict(size=TICK_PX, color=c["text"]), gridcolor=c["grid"], zeroline=False,
                    title=dict(font=dict(size=TICK_PX, color=c["text"])), automargin=True)

    return dict(height=FIG_H, paper_bgcolor=c["bg"], plot_bgcolor=c["bg"], showlegend=False,
                font=dict(family=FONT_FAMILY, size=TICK_PX, color=c["text"]), margin=dict(l=20, r=30, t=20, b=20),
                xaxis=axis(), yaxis=axis(), hovermode="closest", **kw)


def bars_figure(names: list[str], values: list[float], colors: list[str], unit: str, theme: str,
                texts: list[str] | None = None) -> go.Figure:
    """Horizontal bars, each with its number (or its `texts`) at its end, the first on top."""
    names = [wrap_html(n, BAR_WRAP_PX, TICK_PX)[0] for n in names]
    fig = go.Figure(go.Bar(y=names, x=values, orientation="h", marker=dict(color=colors),
                           text=texts or [str(v) for v in values], textposition="outside", cliponaxis=False,
                           textfont=dict(size=TICK_PX + 4), hovertemplate="%{y}: %{x}<extra></extra>"))
    layout = _layout(theme)
    layout["xaxis"]["title"]["text"] = wrap_html(unit, BAR_WRAP_PX, TICK_PX)[0]
    layout["xaxis"].update(range=[0, max(values + [1]) * 1.15])
    layout["yaxis"].update(autorange="reversed")
    fig.update_layout(layout)
    return fig


def row_figure(labels: list[str], roles: list[str], colors: list[str], theme: str, dashed: set[int] = frozenset()
               ) -> go.Figure:
    """Tokens as boxes in a row, each named underneath by its role."""
    c = theme_colors(theme)
    cols = max(len(labels), 5)
    shapes = [dict(type="rect", x0=j - 0.45, x1=j + 0.45, y0=-0.4, y1=0.4, fillcolor=col, layer="below",
                   line=dict(color=c["outline"], width=2, dash="dot" if j in dashed else "solid"))
              for j, col in enumerate(colors)]
    fig = go.Figure(go.Scatter(x=list(range(len(labels))), y=[0] * len(labels), mode="text",
                               text=[html.escape(truncate(t, BOX_CHARS), quote=False) for t in labels],
                               hovertext=[html.escape(t, quote=False) for t in labels], hoverinfo="text",
                               textfont=dict(family=MONO_FAMILY, size=TICK_PX + 2, color=[text_on(x) for x in colors])))
    layout = _layout(theme, shapes=shapes)
    layout["xaxis"].update(tickvals=list(range(len(roles))), ticktext=roles, range=[-0.6, cols - 0.4],
                           showgrid=False)
    layout["yaxis"].update(visible=False, range=[-0.9, 0.9])
    # A box (0.9 of its column) holds its longest label: a narrower screen (a phone) scrolls the row
    # sideways at this width (ui/figures.js) rather than print labels over one another.
    chars = max((len(truncate(t, BOX_CHARS)) for t in labels), default=1)
    col_px = (chars * (TICK_PX + 2) * MONO_CHAR_EM + BOX_PAD_PX) / 0.9
    sides = layout["margin"]["l"] + layout["margin"]["r"] + 2 * TICK_PX  # and the end roles' overhang
    layout["meta"] = {"fit": {"min_px": round(cols * col_px + sides)}}
    fig.update_layout(layout)
    return fig


def _label(f: Facts, tokens: list[int], j: int) -> str:
    return visible(tok(f.trace, tokens[j], f.ctx[:-CONTEXT_BOXES] + tokens[:j]))


def guess_figure(f: Facts, theme: str) -> go.Figure:
    """The end of the text so far, the model's next token, then the guesses after it, each in
    the explorer's colour for where it came from; past GUESS_BOXES, a note counts the rest."""
    tail = f.ctx[-CONTEXT_BOXES:]
    drawn = f.chain[:GUESS_BOXES]
    tokens = tail + [f.s.root] + [n.token for n in drawn]
    roles = ["text"] * len(tail) + ["next"] + [f"guess {j + 1}" for j in range(len(drawn))]
    colors = ([theme_colors(theme)["grid"]] * len(tail) + [PALETTE["root"]]
              + [PALETTE[node_color_key(n.origin, n.rank)] for n in drawn])
    fig = row_figure([_label(f, tokens, j) for j in range(len(tokens))], roles, colors, theme,
                     dashed=set(range(len(tail) + 1, len(tokens))))
    more = len(f.chain) - len(drawn)
    if more:
        fig.add_annotation(x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="top", showarrow=False,
                           text=f"and {more} more", font=dict(size=TICK_PX + 2), bgcolor=theme_colors(theme)["bg"])
    return fig


def keep_figure(f: Facts, theme: str) -> go.Figure:
    """The same row judged: the model's next token, the guesses it kept (✓) and the first it
    rejected (✗), then the model's own bonus token."""
    s, a = f.s, f.s.drafts_accepted
    kept = list(s.tokens)  # the root and the accepted guesses
    wrong = [f.chain[a].token] if len(f.chain) > a and s.bonus is not None else []
    bonus = [s.bonus] if s.bonus is not None else []
    tokens = (kept + wrong + bonus)[-ROW_BOXES:]
    labels = [visible(tok(f.trace, t, f.ctx + kept[:j])) for j, t in enumerate(kept)]
    labels += [visible(tok(f.trace, t, f.ctx + kept)) for t in wrong + bonus]
    roles = ["next"] + ["✓ kept"] * a + ["✗ dropped"] * len(wrong) + ["bonus"] * len(bonus)
    colors = ([PALETTE["root"]] + [PALETTE["accepted"]] * a + [PALETTE["rejected"]] * len(wrong)
              + [PALETTE["bonus"]] * len(bonus))
    cut = len(roles) - len(tokens)  # a long accepted run shows its end
    return row_figure(labels[cut:], roles[cut:], colors[cut:], theme)


def slow_figure(f: Facts, theme: str) -> go.Figure:
    c = f.c
    return bars_figure(["plain decoding", "LogitSpec"], [max(c.tokens - 1, 0), c.passes],
                       [PALETTE["vanilla"], PALETTE["logitspec"]],
                       f"forward passes for the same {plural(c.tokens, 'token')}", theme)


def sources_figure(f: Facts, theme: str) -> go.Figure:
    got = _origin_counts(f.verified)
    names = ["copied after the next token (g1)", "after a next-next guess (g2)"]
    values = [_copied(got), got.get("g2", 0)]
    colors = [PALETTE["g1"], PALETTE["g2"]]
    other = sum(v for k, v in got.items() if k not in ("g1", "pld", "g2"))
    if other:
        names.append("other guesses")
        values.append(other)
        colors.append(PALETTE["pruned"])
    return bars_figure(names, values, colors, f"guessed tokens checked at step {step_position(f.trace, f.step)}",
                       theme)


def check_figure(f: Facts, theme: str) -> go.Figure:
    """Every guess the one pass checked, as the tree they form: the kept path green and bold."""
    c = theme_colors(theme)
    g = step_graph(f.trace, f.step)
    g.remove_nodes_from([n for n in list(g) if g.nodes[n]["fate"] == "pruned"])
    folded = fold_leaves(g, keep=g.graph["accepted_path"])
    pos = tidy_positions(g)
    fig = go.Figure([edge_trace(g, pos, lambda a, b: not g.edges[a, b]["accepted"], "guess", c["edge"], 1.5),
                     edge_trace(g, pos, lambda a, b: g.edges[a, b]["accepted"], "kept", PALETTE["accepted"], 5),
                     *node_traces(g, pos, theme, labels=False)])
    fig.update_traces(textfont_size=TICK_PX)
    layout = _layout(theme)
    depth = max((p[0] for p in pos.values()), default=0)
    layout["xaxis"]["title"]["text"] = "tokens ahead of the text so far"
    layout["xaxis"].update(showgrid=False, dtick=max(1, round(depth / 8)), range=[-0.5, depth + 0.5])
    layout["yaxis"].update(visible=False, autorange="reversed")
    # Bottom right: the copied chain runs along the top, the next-next fan down the left.
    layout["annotations"] = [dict(x=1, y=0, xref="paper", yref="paper", xanchor="right", yanchor="bottom",
                                  showarrow=False, bgcolor=c["bg"], font=dict(size=TICK_PX + 2),
                                  text=f"1 forward pass: {plural(len(f.verified), 'guess', 'guesses')} checked")]
    fig.update_layout(layout)
    if folded:  # the fan of single next-next guesses: a few drawn, the rest one mark with their count
        lines, note = fold_mark(pos, f"+{len(folded.nodes)} more guesses, none kept", c, TICK_PX)
        fig.add_traces(lines)
        fig.add_annotation(note)
    return fig


def pays_figure(f: Facts, theme: str) -> go.Figure:
    """Stage 6's bars: the step's tokens beside its pass's cost on each machine."""
    names, values, colors, unit, texts = pays_bars(f)
    return bars_figure(names, values, colors, unit, theme, texts=texts)


STAGES = {
    "slow": ("1 · One token per pass is slow", slow_words, slow_figure),
    "guess": ("2 · Guess ahead", guess_words, guess_figure),
    "sources": ("3 · Where the guesses come from", sources_words, sources_figure),
    "check": ("4 · Check every guess in one pass", check_words, check_figure),
    "keep": ("5 · Keep what the model agrees with", keep_words, keep_figure),
    "pays": (PAYS_TITLE, pays_words, pays_figure),
}
STAGE_COUNT = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")[len(STAGES)]


def lesson(trace: RunTrace, theme: str = "light", lanes: dict[str, RunTrace] | None = None,
           curves: list[PassCosts] | tuple = ()) -> list[Stage]:
    """The stages for a run, all drawn from its lesson_step (a step where a next-next guess was kept);
    `lanes`: the race it ran in, `curves`: other machines' pass costs, for the last stage's prices."""
    f = lesson_facts(trace, lanes, curves)
    return [Stage(k, title, words(f), draw(f, theme)) for k, (title, words, draw) in STAGES.items()]


def lesson_intro(trace: RunTrace) -> str:
    """Which step the lesson shows and why, in words."""
    f = lesson_facts(trace)
    kept = g2_kept(f.s)
    if kept:
        why = (f"a step where a guess for the token after next led to {plural(kept, 'token')} the model kept: "
               "the idea LogitSpec adds, explained in stage 3")
    elif f.s.drafts_accepted:
        why = (f"the step where the model kept the most guesses ({f.s.drafts_accepted}). This run never needed a "
               "guess for the token after next: every guess it kept was copied")
    else:
        why = "no step of this run kept a guess, so this one shows the method at its least lucky"
    return _p(f"Speculative decoding in {STAGE_COUNT} steps, shown on step {step_position(trace, f.step)} "
              f"of this run: {why}.")

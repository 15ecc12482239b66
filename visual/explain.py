"""One step of a run explained panel by panel, every number and sentence read off its trace.

`choose_step` picks the step worth explaining (and says by which rule); `walkthrough` gives
six panels for a step: the last logits and the next-next guesses, g1, g2 for the right
guess, the tree before and after pruning, the verification, and the accepted path with the
bonus. Each panel is a small figure and two sentences computed from the same step, so no
sentence can say what this step did not do.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from logitspec.analysis.drafts import drafted_chains
from logitspec.core.trace import G2_RESCUED, QueryRecord, RunTrace, StepRecord

from .counts import drafts_accepted_words, plural, run_counts
from .data import (
    branch_nodes, candidate_by_rank, context_before, g2_query_of_rank, get_step, matched_attempt, ngram_before,
    ngram_text, outcome, query_tail, step_position, true_next_next,
)
from .candidates import TICK_GAP_PX, probability_ticks
from .fit import APP_PLOT_W, SLIDE_H, SLIDE_W, for_app, frame, shown_ticks, wrap_html
from .style import (
    MIN_FONT, MONO_CHAR_EM, MONO_FAMILY, PALETTE, base_layout, node_color_key, pretty, style_axes, sub_x, text_on,
    theme_colors, truncate,
)
from .tree_layout import LABEL_PAD_PX
from .trie import (BONUS, ELBOW, drafted_graph, edge_trace, fold_leaves, fold_mark, node_traces, positions_with_bonus,
                   step_graph, tidy_positions)

MIN_ACCEPTED = 3  # the chooser's bar: tokens one step committed (root included)
PANEL_HEIGHT = 340  # a panel's height in the app (its width is its container's)
LOGITS_HEIGHT = 380  # ... the logits panel's: its rotated token ticks take a third of it
ACCEPT_HEIGHT = 200  # ... the accepted path's: one row of boxes
LOOKUP_ROW_PX = 70  # a lookup row: the n-gram above its line, the verdict below
SUBPLOT_TITLE_PX = 30  # above the pruning panel's two plots, for their titles
ACCEPT_BOX = 0.9  # an accepted token's box, in position ids
PHONE_PLOT_W = 280  # a phone's plot width: a centred message wraps to it
BARS = 12  # next-next guesses drawn in the logits panel (the right one is added if further down)


@dataclass
class StepChoice:
    """The step to explain and the rule that picked it, in words."""

    step: int
    rule: str
    preferred: bool  # False when no step met the preferred rule and a fallback chose


@dataclass
class Panel:
    key: str  # logits | g1 | g2 | tree | verify | accept
    title: str
    sentences: tuple[str, str]
    figure: go.Figure | None = None


# ---------------------------------------------------------------- choosing the step

PREFERRED_RULE = (f"g1 found nothing, a g2 lookup rescued the step, and it committed ≥ {MIN_ACCEPTED} tokens "
                  f"(x_{{i+1}} + ≥ {MIN_ACCEPTED - 1} draft tokens accepted)")


def _most(trace: RunTrace, steps: list[int]) -> int:
    """The step that committed the most tokens; the earliest on a tie."""
    return max(steps, key=lambda i: (len(trace.steps[i].tokens), -i))


def _committed(s: StepRecord) -> str:
    """'7: x_{i+1} + 6 draft tokens accepted', as every tab counts a step."""
    return f"{len(s.tokens)}: x_{{i+1}} + {drafts_accepted_words(s.drafts_accepted)}"


def choose_step(trace: RunTrace) -> StepChoice:
    """A step where g2 rescued a failed g1 and ≥ 3 tokens were committed (the most, if several);
    else the g2-rescued step that accepted the most drafts; else the step that committed the most."""
    forward = [i for i, s in enumerate(trace.steps) if s.forward] or list(range(len(trace.steps)))
    if not forward:
        raise IndexError("the trace holds no steps yet")
    rescued = [i for i in forward if outcome(trace.steps[i]) == G2_RESCUED]
    strong = [i for i in rescued if len(trace.steps[i].tokens) >= MIN_ACCEPTED]
    if strong:
        i = _most(trace, strong)
        return StepChoice(i, f"picked by the rule: {PREFERRED_RULE} ({plural(len(strong), 'step')} qualified; this "
                             f"one committed the most, {_committed(trace.steps[i])})", True)
    accepting = [i for i in rescued if trace.steps[i].drafts_accepted >= 1]
    if accepting:
        i = _most(trace, accepting)
        return StepChoice(i, f"no step met the rule ({PREFERRED_RULE}); shown instead: the step where g2 rescued a "
                             f"failed g1 and the most tokens were committed ({_committed(trace.steps[i])})", False)
    i = _most(trace, forward)
    return StepChoice(i, f"no step met the rule ({PREFERRED_RULE}), and {_rescues(run_counts(trace).g2_rescued)}; "
                         f"shown instead: the step that committed the most tokens ({_committed(trace.steps[i])})",
                      False)


def _rescues(n: int) -> str:
    """What the run's g2 rescues came to, when none of them accepted a draft token."""
    if not n:
        return "g2 never rescued a failed g1 in this run"
    return (f"g2 rescued a failed g1 at {plural(n, 'step')} of this run, but {'it' if n == 1 else 'none of them'} "
            "accepted a draft token")


# ---------------------------------------------------------------- facts and sentences


@dataclass
class StepFacts:
    """What the sentences say, read once from the step."""

    trace: RunTrace
    i: int
    s: StepRecord
    ctx: list[int]
    truth: int | None  # the true x_{i+2}, when known
    truth_rank: int | None
    g1: QueryRecord | None
    g1_index: int | None
    truth_query: QueryRecord | None
    truth_query_index: int | None

    def t(self, tokens: list[int], before: list[int] | None = None) -> str:
        return ngram_text(self.trace, tokens, self.ctx if before is None else before)

    @property
    def after_root(self) -> list[int]:
        return self.ctx + [self.s.root]


def step_facts(trace: RunTrace, step: int) -> StepFacts:
    s = get_step(trace, step)
    truth = true_next_next(trace, step)
    rank = next((c.rank for c in s.candidates if c.token == truth), None) if truth is not None else None
    g1i = next((qi for qi, q in enumerate(s.queries) if q.kind in ("g1", "pld")), None)
    tq = g2_query_of_rank(s).get(rank) if rank is not None else None
    return StepFacts(trace=trace, i=step_position(trace, step), s=s, ctx=context_before(trace, step), truth=truth,
                     truth_rank=rank, g1=s.queries[g1i] if g1i is not None else None, g1_index=g1i,
                     truth_query=tq, truth_query_index=s.queries.index(tq) if tq is not None else None)


def _tried(f: StepFacts, q: QueryRecord) -> str:
    seq = query_tail(f.s, q, f.ctx)
    parts = [f"the {a.n}-gram {ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))}" for a in q.attempts]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _branch_counts(f: StepFacts, qi: int) -> tuple[int, int]:
    """(verified, accepted) tokens of a query's branch in the tree."""
    on_path = set(f.s.accepted_path)
    nodes = [nd for _, nd in branch_nodes(f.s, qi) if nd is not None and not nd.pruned]
    return len(nodes), sum(nd.id in on_path for nd in nodes)


def logits_sentences(f: StepFacts) -> tuple[str, str]:
    s = f.s
    p = f" (probability {s.root_prob:.3g})" if s.root_prob is not None else ""
    temp = f.trace.settings.get("temperature") or 0
    how = f"drew x_{{i+1}} = {f.t([s.root])} (sampling at temperature {temp:g})" if temp else \
        f"chose x_{{i+1}} = {f.t([s.root])} as their argmax"
    first = f"The last forward pass's logits {how}{p}, so step {f.i} commits it whatever happens to the drafts."
    k = len(s.candidates)
    if not k:
        return first, "This step took no next-next guesses from the logits (no forward pass drafted any)."
    head = f"The {k} most likely other tokens in the same logits are guesses for the token after it"
    if f.truth is None:
        return first, head + "; which one was right is not known, as the run ended here."
    if f.truth_rank is None:
        return first, head + f"; the true x_{{i+2}}, {f.t([f.truth], f.after_root)}, was not among them."
    c = candidate_by_rank(s)[f.truth_rank]
    return first, head + (f"; the true x_{{i+2}}, {f.t([f.truth], f.after_root)}, was guess {f.truth_rank} "
                          f"(probability {c.prob:.3g}).")


def lookup_sentences(f: StepFacts, q: QueryRecord | None, qi: int | None, name: str) -> tuple[str, str]:
    """g1's (or prompt lookup's) sentences; `name` says which lookup it was."""
    if q is None or qi is None:
        return f"This step made no {name} lookup.", "So nothing was retrieved for it."
    if not q.attempts:
        return f"{name} had nothing to try: the context was too short.", "So it drafted nothing."
    a = matched_attempt(q)
    if a is None:
        g2 = [x for x in f.s.queries if x.kind == "g2"]
        first = f"{name} looked for {_tried(f, q)}; none had occurred earlier in the {len(f.ctx)}-token context."
        if not g2:
            return first, f"So {name} drafted nothing, and the tree holds the root alone."
        return first, (f"So {name} drafted nothing: every branch of this step's tree starts with a next-next "
                       f"guess, and {sum(x.matched for x in g2)} of the {len(g2)} g2 lookups found a continuation.")
    seq = query_tail(f.s, q, f.ctx)
    first = (f"{name} looked for the n-grams ending in x_{{i+1}}, longest first, and the {a.n}-gram "
             f"{ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))} matched at position {q.match_pos} of the "
             f"{len(f.ctx)}-token context.")
    ver, acc = _branch_counts(f, qi)
    return first, (f"The {plural(len(q.continuation), 'token')} that followed it there, "
                   f"{f.t(q.continuation, f.after_root)}, became {name}'s branch: {ver} verified, {acc} accepted.")


def g2_sentences(f: StepFacts) -> tuple[str, str]:
    if f.truth is None:
        return ("The run ended at this step, so which guess was right is not known.",
                "The g2 lookups are listed in the Step explorer's retrieval panel.")
    truth = f.t([f.truth], f.after_root)
    if f.truth_rank is None:
        g2 = [q for q in f.s.queries if q.kind == "g2"]
        on = {nd.origin for nd in f.s.tree if nd.id in set(f.s.accepted_path[1:])}
        where = ("; the accepted drafts came from g1's branch" if on & {"g1", "pld"}
                 else "; no draft could be accepted")
        return (f"The true x_{{i+2}}, {truth}, was not among the {len(f.s.candidates)} guesses, so no g2 lookup "
                "could draft it.", f"Of the {len(g2)} g2 lookups, {sum(q.matched for q in g2)} found a "
                                   f"continuation{where}.")
    q, qi = f.truth_query, f.truth_query_index
    if q is None:
        return (f"The right guess, {truth}, was rank {f.truth_rank}, but the trace records no g2 lookup for it.",
                "So its branch, if any, is the guess alone.")
    ver, acc = _branch_counts(f, qi)
    a = matched_attempt(q)
    if a is None:
        return (f"The right guess, {truth} (rank {f.truth_rank}), got its own lookup g2, which tried "
                f"{_tried(f, q)}; none had occurred earlier.",
                f"So its branch is the guess alone: {ver} verified, {acc} accepted.")
    seq = query_tail(f.s, q, f.ctx)
    return (f"The right guess, {truth} (rank {f.truth_rank}), got its own lookup, g2, over the n-grams ending "
            f"with it after x_{{i+1}}: the {a.n}-gram {ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))} "
            f"matched at position {q.match_pos}.",
            f"Its branch, the guess and the {plural(len(q.continuation), 'token')} that followed it there, put "
            f"{ver} tokens into the verified tree, {acc} of them accepted.")


def tree_sentences(f: StepFacts) -> tuple[str, str]:
    if not f.s.tree or not f.s.forward:
        return ("This step drafted no tree: it needed no forward pass.", "So nothing was pruned.")
    d = drafted_graph(f.trace, f.i)
    drafted = d.number_of_nodes()
    fetched = sum(len(c) for _, _, c in drafted_chains(f.s))
    verified = sum(not n.pruned for n in f.s.tree)
    saved = fetched - (drafted - 1)
    first = (f"The lookups' branches hold {plural(fetched, 'draft token')} in all; merged under the root into a "
             f"trie they make {drafted} nodes, root included" +
             (f": branches that share a prefix share its nodes, saving {saved}." if saved
              else "; no two branches shared a prefix."))
    mode = f.s.sizing.mode if f.s.sizing is not None else f.trace.settings.get("tree", "static")
    how = ("by expected gain per modelled second (cost-aware sizing)" if mode == "cost"
           else f"by the paper's rule (branch length by rank, capacity {f.trace.settings.get('capacity', '?')})")
    return first, (f"Pruning {how} kept {verified} of the {drafted} for the one forward pass and cut "
                   f"{drafted - verified}.")


def verify_sentences(f: StepFacts) -> tuple[str, str]:
    s = f.s
    if not s.forward:
        return ("This step needed no forward pass: its root was the last token the run wanted.",
                "So nothing was verified.")
    verified = [n for n in s.tree if not n.pruned]
    first = (f"One forward pass scored all {plural(len(verified), 'verified token')} at once: each saw the "
             f"{s.context_len}-token cache and its own ancestors only (a tree attention mask), at position id "
             f"{s.context_len} + its depth.")
    drafts = s.drafts_accepted
    if s.bonus is None:
        return first, (f"Walking from the root, the model agreed with {plural(drafts, 'drafted token')} "
                       f"({drafts_accepted_words(drafts)}); the run ended after them.")
    last = s.accepted_path[-1] if s.accepted_path else 0
    kids = [n for n in s.tree if n.parent == last]
    held = [n for n in kids if n.token == s.bonus]
    after = f"after {f.t([s.tokens[-1]], f.ctx + list(s.tokens[:-1]))} it chose {f.t([s.bonus], f.ctx + list(s.tokens))}"
    ver = [n for n in kids if not n.pruned]
    if held and held[0].pruned:
        why = "which was drafted there but pruned before verification"
    elif not ver:
        why = "where no verified draft token followed"
    elif len(ver) == 1:
        why = "which the one verified token drafted there was not"
    else:
        why = f"which none of the {len(ver)} verified tokens drafted there was"
    if not drafts:
        return first, (f"At the root the model chose {f.t([s.bonus], f.ctx + list(s.tokens))}, {why}, so no draft "
                       f"was accepted ({drafts_accepted_words(0)}).")
    return first, (f"Walking from the root, the model's own choice matched a drafted token {plural(drafts, 'time')} "
                   f"in a row ({drafts_accepted_words(drafts)}); {after}, {why}.")


def accept_sentences(f: StepFacts) -> tuple[str, str]:
    s = f.s
    n = len(s.tokens)
    if n == 1:
        first = (f"Step {f.i} committed 1 token, x_{{i+1}} alone ({drafts_accepted_words(0)}), so this pass did "
                 "what plain decoding does.")
    else:
        first = (f"Step {f.i} committed {n} tokens (x_{{i+1}} + {drafts_accepted_words(s.drafts_accepted)}), "
                 f"{f.t(s.tokens)}, in one forward pass, where plain decoding would need {n} passes.")
    if s.bonus is None:
        return first, "There is no bonus token: the run ended with this step."
    return first, (f"The model's choice after the last accepted token, {f.t([s.bonus], f.ctx + list(s.tokens))}, "
                   f"comes free with the same pass: it is the root of step {f.i + 1}.")


def sentences(trace: RunTrace, step: int) -> dict[str, tuple[str, str]]:
    """The two sentences of every panel, by panel key."""
    f = step_facts(trace, step)
    name = "prompt lookup" if f.g1 is not None and f.g1.kind == "pld" else "g1"
    return {"logits": logits_sentences(f), "g1": lookup_sentences(f, f.g1, f.g1_index, name),
            "g2": g2_sentences(f), "tree": tree_sentences(f), "verify": verify_sentences(f),
            "accept": accept_sentences(f)}


TITLES = {
    "logits": "1 · The last logits and the next-next guesses",
    "g1": "2 · g1: what followed x_{i+1} before?",
    "g2": "3 · g2 for the guess that was right",
    "tree": "4 · The tree before and after pruning",
    "verify": "5 · Verification: one forward pass",
    "accept": "6 · The accepted path and the bonus",
}


def title_of(f: StepFacts, key: str) -> str:
    """A panel's title at this step: g2's says so when no guess was right, or none is known."""
    if key == "g2" and f.truth is None:
        return "3 · g2: which guess was right is not known"
    if key == "g2" and f.truth_rank is None:
        return "3 · g2: no guess was right"
    return TITLES[key]


def walkthrough(trace: RunTrace, step: int, theme: str = "light") -> list[Panel]:
    """The six panels of a step, each two sentences and a figure drawn for the app (with its slide)."""
    f = step_facts(trace, step)
    said = sentences(trace, step)
    return [Panel(k, title_of(f, k), said[k], panel_figure(f, k, said[k], theme)) for k in TITLES]


def panel_figure(f: StepFacts, key: str, said: tuple[str, str], theme: str = "light") -> go.Figure:
    """A panel's figure for the app (visual.fit.for_app): its container's width, its title for the
    page's caption, what the browser re-cuts, and a 16:9 slide with the title and both sentences."""
    words = sub_x(html.escape(" ".join(said), quote=False))
    title = title_of(f, key)
    app, fit = DRAW[key](f, PanelLook("app", theme, title))
    slide, _ = DRAW[key](f, PanelLook("slide", theme, title, words))
    app.update_layout(meta=dict(step=f.i, panel=key))
    return for_app(app, slide, title, fit=fit)


# ---------------------------------------------------------------- figures


@dataclass
class PanelLook:
    """How a panel is drawn: for the app (its words in the page) or as a slide (its words on top)."""

    mode: str  # app | slide
    theme: str
    title: str
    said: str = ""  # the slide's subtitle: the panel's sentences

    @property
    def colors(self) -> dict[str, str]:
        return theme_colors(self.theme)

    @property
    def plot_w(self) -> float:
        """The plot width labels are first cut for (in the app the browser cuts them again)."""
        return APP_PLOT_W if self.mode == "app" else SLIDE_W - 90


Drawn = tuple[go.Figure, dict]  # a figure and what the browser re-cuts on it (visual.fit)


def _small(look: PanelLook, height: int = PANEL_HEIGHT, left: int = 20, bottom: int = 50, **kw) -> dict:
    """A panel's layout: `height` tall in the app with no title (the page's caption holds it), or
    16:9 with its words on top; no legend."""
    layout = base_layout(look.theme, look.title, height=height if look.mode == "app" else SLIDE_H,
                         hovermode="closest", **kw)
    frame(layout, look.mode, look.title, look.said, [], look.colors, (SLIDE_W, SLIDE_H), left=left, bottom=bottom)
    return layout


def _message(look: PanelLook, text: str) -> Drawn:
    fig = go.Figure(layout=_small(look))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    text, _ = wrap_html(html.escape(text, quote=False), PHONE_PLOT_W, MIN_FONT + 2)
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=MIN_FONT + 2, color=look.colors["muted"]))
    return pretty(fig), {}


def _token(f: StepFacts, token: int, before: list[int]) -> str:
    """A token as visible text, without the «» an n-gram wears."""
    return ngram_text(f.trace, [token], before)[1:-1]


def _label(f: StepFacts, token: int, before: list[int]) -> str:
    return html.escape(truncate(_token(f, token, before), 8), quote=False)


def _depth_ticks(depth: int, look: PanelLook, labels: int = 6) -> int:
    """A depth axis's tick step: about `labels` labels across a phone's plot, more on a slide."""
    return max(1, math.ceil(depth / (labels if look.mode == "app" else 16)))


def logits_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """The root's probability and the top guesses for x_{i+2}, the right one in green."""
    s = f.s
    if not s.candidates:
        return _message(look, "no next-next guesses at this step")
    shown = [c for c in s.candidates if c.rank <= BARS or c.rank == f.truth_rank]
    text = [f"{c.rank}: {_label(f, c.token, f.after_root)}" for c in shown]
    ys = [c.prob for c in shown]
    colors = [PALETTE["accepted"] if c.rank == f.truth_rank else PALETTE["g2"] for c in shown]
    if s.root_prob is not None:
        text, ys = [sub_x(f"x_{{i+1}}: {_label(f, s.root, f.ctx)}")] + text, [s.root_prob] + ys
        colors = [PALETTE["root"]] + colors
    xs = list(range(len(ys)))
    truth = next((j for j, c in enumerate(shown) if c.rank == f.truth_rank), None)
    truth = None if truth is None else truth + (s.root_prob is not None)
    fig = go.Figure(go.Bar(x=xs, y=ys, marker=dict(color=colors), customdata=text,
                           hovertemplate="%{customdata}<br>p = %{y:.4f}<extra></extra>"))
    keep = [0] + ([truth] if truth is not None else [])
    vals, ticks = shown_ticks(xs, text, keep, look.plot_w / len(xs), TICK_GAP_PX)
    lo, hi = math.log10(min(ys)), math.log10(max(ys))
    span = max(hi - lo, 0.5)
    layout = _small(look, height=LOGITS_HEIGHT, left=60)
    layout["xaxis"].update(tickvals=vals, ticktext=ticks, tickangle=-90, range=[-0.6, len(xs) - 0.4], showgrid=False,
                           tickfont=dict(family=MONO_FAMILY, size=MIN_FONT))
    # Head-room above the tallest bar for the note on the right guess, but not past a probability of 1.
    bottom, top = lo - 0.1 * span, min(hi + 0.5 * span, 0.1)
    layout["yaxis"].update(type="log", range=[bottom, top], title=dict(text="probability"),
                           **probability_ticks(bottom, top))
    fig.update_layout(layout)
    if truth is not None:
        fig.add_annotation(x=truth, y=math.log10(ys[truth]), text="true x_{i+2}", showarrow=True, ay=-24, ax=0,
                           xanchor="left" if truth < len(xs) / 2 else "right", bgcolor=look.colors["bg"],
                           font=dict(size=MIN_FONT, color=PALETTE["accepted"]))
    return pretty(fig), {"ticks": {"axis": "xaxis", "vals": xs, "text": text, "keep": keep, "min_px": TICK_GAP_PX}}


def _row_note(text: str, row: int, above: bool, color: str, mono: bool = False) -> dict:
    """Words just above (or below) a lookup's row, from the plot's left edge, so none runs off it."""
    return dict(x=0, xref="paper", xanchor="left", y=row, yref="y", yanchor="bottom" if above else "top",
                yshift=9 if above else -9, text=text, showarrow=False,
                font=dict(size=MIN_FONT, color=color, family=MONO_FAMILY if mono else None))


def lookup_figure(f: StepFacts, q: QueryRecord | None, look: PanelLook) -> Drawn:
    """The n-grams a lookup tried, one row each, and where in the context the match (blue) and the
    tokens that followed it (orange) lie, as in the retrieval panel (x = context position)."""
    if q is None:
        return _message(look, "no lookup to show for this step")
    if not q.attempts:
        return _message(look, "nothing to try: the context is too short")
    c = look.colors
    seq = query_tail(f.s, q, f.ctx)
    n, rows = len(f.ctx), len(q.attempts)
    fig = go.Figure(go.Scatter(x=[0, n, None] * rows, y=[y for r in range(rows) for y in (r, r, None)], mode="lines",
                               line=dict(color=c["grid"], width=6), hoverinfo="skip"))
    notes = []
    for row, a in enumerate(q.attempts):
        gram = truncate(f"{a.n}-gram {ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))}", 28)
        notes.append(_row_note(html.escape(gram, quote=False), row, True, c["text"], mono=True))
        if not a.matched:
            notes.append(_row_note("✗ no earlier occurrence", row, False, PALETTE["rejected"]))
            continue
        start, end = q.match_pos, q.match_pos + a.n
        fig.add_trace(go.Scatter(x=[start, end], y=[row, row], mode="lines", line=dict(color=PALETTE["g2"], width=14),
                                 hovertemplate=f"the {a.n}-gram, at context position {start}<extra></extra>"))
        if q.continuation:
            fig.add_trace(go.Scatter(x=[end, end + len(q.continuation)], y=[row, row], mode="lines",
                                     line=dict(color=PALETTE["g1"], width=10),
                                     hovertemplate=f"{len(q.continuation)} tokens followed it<extra></extra>"))
        notes.append(_row_note(f"✓ at {start}, then {plural(len(q.continuation), 'token')}", row, False, c["text"]))
    layout = _small(look, height=max(PANEL_HEIGHT, LOOKUP_ROW_PX * rows + 110))
    layout["xaxis"].update(range=[-1, n + 1], title=dict(text=f"position in the {n}-token context"))
    layout["yaxis"].update(visible=False, range=[rows - 0.35, -0.65])  # the first n-gram tried on top
    layout["annotations"] = notes
    fig.update_layout(layout)
    return pretty(fig), {}


def pruning_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """Left: every drafted token as a trie; right: only those verified, at the same places."""
    c = look.colors
    d = drafted_graph(f.trace, f.i)
    drafted, verified = d.number_of_nodes(), sum(d.nodes[n]["verified"] for n in d)
    folded = fold_leaves(d, counted=lambda n: d.nodes[n]["verified"])
    pos = tidy_positions(d)
    # Short titles: two of them share a phone's width.
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"drafted: {drafted}", f"verified: {verified}"),
                        shared_yaxes=True, horizontal_spacing=0.06)
    for col, keep in ((1, lambda n: True), (2, lambda n: d.nodes[n]["verified"])):
        sub = {n: p for n, p in pos.items() if keep(n)}
        fig.add_trace(edge_trace(d, sub, lambda a, b: True, "edge", c["edge"], 0.8), row=1, col=col)
        ns = list(sub)
        fig.add_trace(go.Scatter(
            x=[sub[n][0] for n in ns], y=[sub[n][1] for n in ns], mode="markers",
            marker=dict(size=6, color=[PALETTE[node_color_key(d.nodes[n]["origin"], d.nodes[n]["rank"])]
                                       if d.nodes[n]["verified"] else c["bg"] for n in ns],
                        line=dict(width=1, color=[PALETTE[node_color_key(d.nodes[n]["origin"], d.nodes[n]["rank"])]
                                                  for n in ns])),
            hoverinfo="skip"), row=1, col=col)
    layout = _small(look)
    layout["margin"]["t"] += SUBPLOT_TITLE_PX
    fig.update_layout(layout)
    marks = ((1, f"+{len(folded.nodes)} more"), (2, f"+{folded.counted} more"))  # two share a phone's width
    for col, text in marks if folded else ():
        if col == 2 and not folded.counted:
            continue
        lines, note = fold_mark(pos, text, c, MIN_FONT)
        fig.add_traces(lines, rows=1, cols=col)
        fig.add_annotation(note, row=1, col=col)
    style_axes(fig, look.theme)
    fig.update_yaxes(visible=False, autorange="reversed")
    depth = max((p[0] for p in pos.values()), default=0)
    fig.update_xaxes(title_text="depth", dtick=_depth_ticks(int(depth), look, labels=4), showgrid=False)
    return pretty(fig), {}


def verify_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """The verified tree: the accepted path bold green, the rejected tokens faded, the bonus a star."""
    c = look.colors
    g = step_graph(f.trace, f.i)
    g.remove_nodes_from([n for n in list(g) if g.nodes[n]["fate"] == "pruned"])
    folded = fold_leaves(g, keep=g.graph["accepted_path"])
    pos = positions_with_bonus(g)
    fig = go.Figure()
    if folded:
        lines, note = fold_mark(pos, f"+{len(folded.nodes)} more, none kept", c, MIN_FONT)
        fig.add_traces(lines)
        fig.add_annotation(note)
    fig.add_trace(edge_trace(g, pos, lambda a, b: not g.edges[a, b]["accepted"], "draft edge", c["edge"], 1))
    fig.add_trace(edge_trace(g, pos, lambda a, b: g.edges[a, b]["accepted"], "accepted", PALETTE["accepted"], 4))
    for tr in node_traces(g, pos, look.theme, labels=False):
        fig.add_trace(tr)
    layout = _small(look)
    depth = max((p[0] for p in pos.values()), default=0)
    layout["xaxis"].update(title=dict(text=f"depth (position id {f.s.context_len} + depth)"), showgrid=False,
                           dtick=_depth_ticks(int(depth), look))
    layout["yaxis"].update(visible=False, autorange="reversed")
    fig.update_layout(layout)
    if BONUS in pos:
        _bonus(fig, g, pos, c)
    return pretty(fig), {}


def _bonus(fig: go.Figure, g, pos: dict, c: dict[str, str]) -> None:
    """The bonus token: a star after the accepted path, its token ending at the star (never past
    the plot's right edge), on the side of the star with more room."""
    (xa, ya), (x, y) = pos[g.graph["accepted_path"][-1]], pos[BONUS]
    fig.add_trace(go.Scatter(x=[xa, xa + ELBOW, xa + ELBOW, x], y=[ya, ya, y, y], mode="lines", hoverinfo="skip",
                             line=dict(color=c["outline"], dash="dot", width=1.5)))
    text = g.graph["bonus_text"]
    fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", hovertext=[html.escape(text, quote=False)],
                             hovertemplate="bonus: %{hovertext}<extra></extra>",
                             marker=dict(symbol="star", size=16, color=PALETTE["bonus"],
                                         line=dict(color=c["outline"], width=1))))
    upper = y <= (min(p[1] for p in pos.values()) + max(p[1] for p in pos.values())) / 2
    fig.add_annotation(x=x, y=y, text=html.escape(truncate(text, 8), quote=False), showarrow=False,
                       xanchor="right", yanchor="top" if upper else "bottom", yshift=-10 if upper else 10,
                       font=dict(family=MONO_FAMILY, size=MIN_FONT, color=c["text"]))


def accepted_figure(f: StepFacts, look: PanelLook) -> Drawn:
    """The committed tokens in a row at their position ids, then the bonus (dotted); the browser
    cuts each token to its box."""
    c = look.colors
    s = f.s
    by_id = {n.id: n for n in s.tree}
    toks = list(s.tokens) + ([s.bonus] if s.bonus is not None else [])
    cols = max(len(toks), 4)
    chars = max(0, math.floor((look.plot_w / cols * ACCEPT_BOX - LABEL_PAD_PX) / (MIN_FONT * MONO_CHAR_EM)))
    shapes, xs, full, inks = [], [], [], []
    for j, t in enumerate(toks):
        bonus = j == len(s.tokens)
        node = by_id.get(s.accepted_path[j]) if j < len(s.accepted_path) else None
        key = "bonus" if bonus else (node_color_key(node.origin, node.rank) if node is not None else "root")
        x = s.context_len + j
        shapes.append(dict(type="rect", x0=x - ACCEPT_BOX / 2, x1=x + ACCEPT_BOX / 2, y0=-0.4, y1=0.4,
                           fillcolor=PALETTE[key], layer="below",
                           line=dict(color=c["outline"], width=1.5, dash="dot" if bonus else "solid")))
        xs.append(x)
        full.append(_token(f, t, f.ctx + toks[:j]))
        inks.append(text_on(PALETTE[key]))
    shown = [html.escape(truncate(t, chars), quote=False) if chars >= 2 else "" for t in full]
    fig = go.Figure(go.Scatter(x=xs, y=[0] * len(xs), mode="text", text=shown, hovertext=[html.escape(t) for t in full],
                               hovertemplate="%{hovertext}<extra></extra>",
                               textfont=dict(family=MONO_FAMILY, size=MIN_FONT, color=inks)))
    layout = _small(look, height=ACCEPT_HEIGHT, shapes=shapes)
    tick_px = len(str(xs[-1])) * MIN_FONT * MONO_CHAR_EM + 12 if xs else 1
    vals, ticks = shown_ticks(xs, [str(x) for x in xs], xs[:1], look.plot_w / cols, tick_px)
    layout["xaxis"].update(range=[s.context_len - 0.6, s.context_len + cols - 0.4], tickvals=vals, ticktext=ticks,
                           title=dict(text="position id"), showgrid=False, tickfont=dict(size=MIN_FONT))
    layout["yaxis"].update(visible=False, range=[-1, 1] if look.mode == "app" else [-2.5, 2.5])
    fig.update_layout(layout)
    fit = {"labels": {"trace": 0, "full": full, "box": ACCEPT_BOX, "pad": LABEL_PAD_PX,
                      "char_px": MIN_FONT * MONO_CHAR_EM, "min_lane_px": MIN_FONT / 0.8},
           "ticks": {"axis": "xaxis", "vals": xs, "text": [str(x) for x in xs], "keep": xs[:1], "min_px": tick_px}}
    return pretty(fig), fit


DRAW = {"logits": logits_figure, "g1": lambda f, look: lookup_figure(f, f.g1, look),
        "g2": lambda f, look: lookup_figure(f, f.truth_query, look), "tree": pruning_figure,
        "verify": verify_figure, "accept": accepted_figure}

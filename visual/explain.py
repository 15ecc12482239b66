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

from logitspec.drafts import drafted_chains
from logitspec.trace import G2_RESCUED, QueryRecord, RunTrace, StepRecord

from .data import (
    branch_nodes, candidate_by_rank, context_before, g2_query_of_rank, get_step, matched_attempt, ngram_before,
    ngram_text, outcome, query_tail, step_position, true_next_next,
)
from .style import MIN_FONT, MONO_FAMILY, PALETTE, base_layout, node_color_key, pretty, style_axes, text_on, theme_colors, truncate
from .trie import BONUS, ELBOW, drafted_graph, edge_trace, node_traces, positions_with_bonus, step_graph, tidy_positions

MIN_ACCEPTED = 3  # the chooser's bar: tokens one step committed (root included)
PANEL_HEIGHT = 340
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

PREFERRED_RULE = (f"g1 found nothing, a g2 lookup rescued the step, and the tree accepted ≥ {MIN_ACCEPTED} tokens")


def _most(trace: RunTrace, steps: list[int]) -> int:
    """The step that committed the most tokens; the earliest on a tie."""
    return max(steps, key=lambda i: (len(trace.steps[i].tokens), -i))


def choose_step(trace: RunTrace) -> StepChoice:
    """A step where g2 rescued a failed g1 and the tree accepted ≥ 3 tokens (the most, if several);
    else the g2-rescued step that accepted the most; else the step that accepted the most."""
    forward = [i for i, s in enumerate(trace.steps) if s.forward] or list(range(len(trace.steps)))
    if not forward:
        raise IndexError("the trace holds no steps yet")
    rescued = [i for i in forward if outcome(trace.steps[i]) == G2_RESCUED]
    strong = [i for i in rescued if len(trace.steps[i].tokens) >= MIN_ACCEPTED]
    if strong:
        i = _most(trace, strong)
        return StepChoice(i, f"picked by the rule: {PREFERRED_RULE} ({len(strong)} step"
                             f"{'s' if len(strong) != 1 else ''} qualified; this one accepted the most, "
                             f"{len(trace.steps[i].tokens)})", True)
    rescued = [i for i in rescued if len(trace.steps[i].tokens) >= 2]
    if rescued:
        i = _most(trace, rescued)
        return StepChoice(i, f"no step met the rule ({PREFERRED_RULE}); shown instead: the step where g2 "
                             f"rescued a failed g1 and the most tokens were accepted ({len(trace.steps[i].tokens)})",
                          False)
    i = _most(trace, forward)
    return StepChoice(i, f"no step met the rule ({PREFERRED_RULE}), and g2 never rescued a failed g1 in this run; "
                         f"shown instead: the step that accepted the most tokens ({len(trace.steps[i].tokens)})", False)


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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


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
    return first, (f"The {_plural(len(q.continuation), 'token')} that followed it there, "
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
            f"Its branch, the guess and the {_plural(len(q.continuation), 'token')} that followed it there, put "
            f"{ver} tokens into the verified tree, {acc} of them accepted.")


def tree_sentences(f: StepFacts) -> tuple[str, str]:
    if not f.s.tree or not f.s.forward:
        return ("This step drafted no tree: it needed no forward pass.", "So nothing was pruned.")
    d = drafted_graph(f.trace, f.i)
    drafted = d.number_of_nodes()
    fetched = sum(len(c) for _, _, c in drafted_chains(f.s))
    verified = sum(not n.pruned for n in f.s.tree)
    saved = fetched - (drafted - 1)
    first = (f"The lookups' branches hold {_plural(fetched, 'draft token')} in all; merged under the root into a "
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
    first = (f"One forward pass scored all {_plural(len(verified), 'verified token')} at once: each saw the "
             f"{s.context_len}-token cache and its own ancestors only (a tree attention mask), at position id "
             f"{s.context_len} + its depth.")
    drafts = len(s.tokens) - 1
    if s.bonus is None:
        return first, (f"Walking from the root, the model agreed with {_plural(drafts, 'drafted token')}; the run "
                       "ended after them.")
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
        return first, f"At the root the model chose {f.t([s.bonus], f.ctx + list(s.tokens))}, {why}, so no draft was accepted."
    return first, (f"Walking from the root, the model's own choice matched a drafted token {_plural(drafts, 'time')} "
                   f"in a row; {after}, {why}.")


def accept_sentences(f: StepFacts) -> tuple[str, str]:
    s = f.s
    n = len(s.tokens)
    if n == 1:
        first = (f"Step {f.i} committed 1 token, x_{{i+1}} alone: no draft was accepted, so this pass did what "
                 "plain decoding does.")
    else:
        first = (f"Step {f.i} committed {n} tokens, {f.t(s.tokens)}, in one forward pass, where plain decoding "
                 f"would need {n} passes.")
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


def walkthrough(trace: RunTrace, step: int, theme: str = "light") -> list[Panel]:
    """The six panels of a step, each a small figure and two sentences."""
    f = step_facts(trace, step)
    said = sentences(trace, step)
    figs = {"logits": logits_figure(f, theme), "g1": lookup_figure(f, f.g1, theme),
            "g2": lookup_figure(f, f.truth_query, theme), "tree": pruning_figure(f, theme),
            "verify": verify_figure(f, theme), "accept": accepted_figure(f, theme)}
    return [Panel(k, TITLES[k], said[k], figs[k]) for k in TITLES]


# ---------------------------------------------------------------- figures


def _small(theme: str, **kw) -> dict:
    """A panel's layout: short, no title (the panel's heading says it), no legend."""
    kw = dict(dict(height=PANEL_HEIGHT, margin=dict(l=60, r=20, t=20, b=50), showlegend=False,
                   hovermode="closest"), **kw)
    return base_layout(theme, "", **kw)


def _message(theme: str, text: str) -> go.Figure:
    c = theme_colors(theme)
    fig = go.Figure(layout=_small(theme))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.add_annotation(text=html.escape(text, quote=False), x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False, font=dict(size=MIN_FONT + 2, color=c["muted"]))
    return fig


def _label(f: StepFacts, token: int, before: list[int]) -> str:
    return html.escape(truncate(ngram_text(f.trace, [token], before)[1:-1], 8), quote=False)


def logits_figure(f: StepFacts, theme: str = "light") -> go.Figure:
    """The root's probability and the top guesses for x_{i+2}, the right one in green."""
    s = f.s
    if not s.candidates:
        return _message(theme, "no next-next guesses at this step")
    shown = [c for c in s.candidates if c.rank <= BARS or c.rank == f.truth_rank]
    xs = [f"{c.rank}: {_label(f, c.token, f.after_root)}" for c in shown]
    ys = [c.prob for c in shown]
    colors = [PALETTE["accepted"] if c.rank == f.truth_rank else PALETTE["g2"] for c in shown]
    if s.root_prob is not None:
        xs, ys = [f"x_{{i+1}}: {_label(f, s.root, f.ctx)}"] + xs, [s.root_prob] + ys
        colors = [PALETTE["root"]] + colors
    fig = go.Figure(go.Bar(x=xs, y=ys, marker=dict(color=colors), hovertemplate="%{x}<br>p = %{y:.4f}<extra></extra>"))
    if f.truth_rank is not None:
        j = [c.rank for c in shown].index(f.truth_rank) + (s.root_prob is not None)
        fig.add_annotation(x=xs[j], y=math.log10(ys[j]), text="true x_{i+2}", showarrow=True, ay=-30, ax=0,
                           font=dict(size=MIN_FONT, color=PALETTE["accepted"]), bgcolor=theme_colors(theme)["bg"])
    layout = _small(theme)
    layout["xaxis"].update(tickangle=-45, tickfont=dict(family=MONO_FAMILY, size=MIN_FONT - 2))
    layout["yaxis"].update(type="log", title=dict(text="probability"))
    fig.update_layout(layout)
    return pretty(fig)


def lookup_figure(f: StepFacts, q: QueryRecord | None, theme: str = "light") -> go.Figure:
    """The n-grams a lookup tried, one row each, and where in the context the match (blue) and the
    tokens that followed it (orange) lie, as in the retrieval panel (x = context position)."""
    if q is None:
        return _message(theme, "no lookup to show for this step")
    if not q.attempts:
        return _message(theme, "nothing to try: the context is too short")
    c = theme_colors(theme)
    seq = query_tail(f.s, q, f.ctx)
    rows = [html.escape(truncate(f"{a.n}-gram {ngram_text(f.trace, a.ngram, ngram_before(seq, a.ngram))}", 28),
                        quote=False) for a in q.attempts]
    n = len(f.ctx)
    fig = go.Figure(go.Scatter(x=[0, n, None] * len(rows), y=[y for r in rows for y in (r, r, None)], mode="lines",
                               line=dict(color=c["grid"], width=6), hoverinfo="skip"))
    for a, row in zip(q.attempts, rows):
        if not a.matched:
            fig.add_annotation(x=n / 2, y=row, text="✗ no earlier occurrence", showarrow=False,
                               font=dict(color=PALETTE["rejected"], size=MIN_FONT), bgcolor=c["bg"])
            continue
        start, end = q.match_pos, q.match_pos + a.n
        fig.add_trace(go.Scatter(x=[start, end], y=[row, row], mode="lines", line=dict(color=PALETTE["g2"], width=14),
                                 hovertemplate=f"the {a.n}-gram, at context position {start}<extra></extra>"))
        if q.continuation:
            fig.add_trace(go.Scatter(x=[end, end + len(q.continuation)], y=[row, row], mode="lines",
                                     line=dict(color=PALETTE["g1"], width=10),
                                     hovertemplate=f"{len(q.continuation)} tokens followed it<extra></extra>"))
        fig.add_annotation(x=start, y=row, text=f"✓ at {start}, then {len(q.continuation)} tokens", showarrow=True,
                           ay=-26, ax=0, font=dict(size=MIN_FONT, color=c["text"]), bgcolor=c["bg"])
    layout = _small(theme)
    layout["xaxis"].update(range=[-1, n + 1], title=dict(text=f"position in the {n}-token context"))
    layout["yaxis"].update(autorange="reversed", tickfont=dict(family=MONO_FAMILY, size=MIN_FONT - 2))
    fig.update_layout(layout)
    return pretty(fig)


def pruning_figure(f: StepFacts, theme: str = "light") -> go.Figure:
    """Left: every drafted token as a trie; right: only those verified, at the same places."""
    c = theme_colors(theme)
    d = drafted_graph(f.trace, f.i)
    pos = tidy_positions(d)
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"before: {d.number_of_nodes()} drafted",
                                                        f"after: {sum(d.nodes[n]['verified'] for n in d)} verified"),
                        shared_yaxes=True, horizontal_spacing=0.04)
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
    fig.update_layout(_small(theme, margin=dict(l=20, r=20, t=50, b=40)))
    style_axes(fig, theme)
    fig.update_yaxes(visible=False, autorange="reversed")
    fig.update_xaxes(title_text="depth", dtick=1, showgrid=False)
    return pretty(fig)


def verify_figure(f: StepFacts, theme: str = "light") -> go.Figure:
    """The verified tree: the accepted path bold green, the rejected tokens faded, the bonus a star."""
    c = theme_colors(theme)
    g = step_graph(f.trace, f.i)
    g.remove_nodes_from([n for n in list(g) if g.nodes[n]["fate"] == "pruned"])
    pos = positions_with_bonus(g)
    fig = go.Figure()
    fig.add_trace(edge_trace(g, pos, lambda a, b: not g.edges[a, b]["accepted"], "draft edge", c["edge"], 1))
    fig.add_trace(edge_trace(g, pos, lambda a, b: g.edges[a, b]["accepted"], "accepted", PALETTE["accepted"], 4))
    for tr in node_traces(g, pos, theme, labels=False):
        fig.add_trace(tr)
    if BONUS in pos:
        (xa, ya), (x, y) = pos[g.graph["accepted_path"][-1]], pos[BONUS]
        fig.add_trace(go.Scatter(x=[xa, xa + ELBOW, xa + ELBOW, x], y=[ya, ya, y, y], mode="lines", hoverinfo="skip",
                                 line=dict(color=c["outline"], dash="dot", width=1.5)))
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers+text", text=[html.escape(
            truncate(g.graph["bonus_text"], 8), quote=False)], textposition="middle right",
            marker=dict(symbol="star", size=16, color=PALETTE["bonus"], line=dict(color=c["outline"], width=1)),
            hoverinfo="skip"))
    layout = _small(theme)
    layout["xaxis"].update(title=dict(text=f"depth (position id {f.s.context_len} + depth)"), dtick=1, showgrid=False)
    layout["yaxis"].update(visible=False, autorange="reversed")
    fig.update_layout(layout)
    return pretty(fig)


def accepted_figure(f: StepFacts, theme: str = "light") -> go.Figure:
    """The committed tokens in a row at their position ids, then the bonus (dotted)."""
    c = theme_colors(theme)
    s = f.s
    by_id = {n.id: n for n in s.tree}
    toks = list(s.tokens) + ([s.bonus] if s.bonus is not None else [])
    shapes, xs, labels, inks = [], [], [], []
    for j, t in enumerate(toks):
        bonus = j == len(s.tokens)
        node = by_id.get(s.accepted_path[j]) if j < len(s.accepted_path) else None
        key = "bonus" if bonus else (node_color_key(node.origin, node.rank) if node is not None else "root")
        x = s.context_len + j
        shapes.append(dict(type="rect", x0=x - 0.45, x1=x + 0.45, y0=-0.4, y1=0.4, fillcolor=PALETTE[key], layer="below",
                           line=dict(color=c["outline"], width=1.5, dash="dot" if bonus else "solid")))
        xs.append(x)
        labels.append(_label(f, t, f.ctx + toks[:j]))
        inks.append(text_on(PALETTE[key]))
    fig = go.Figure(go.Scatter(x=xs, y=[0] * len(xs), mode="text", text=labels, hoverinfo="skip",
                               textfont=dict(family=MONO_FAMILY, size=MIN_FONT, color=inks)))
    layout = _small(theme, shapes=shapes)
    layout["height"] = 200
    layout["xaxis"].update(range=[s.context_len - 0.6, s.context_len + max(len(toks), 4) - 0.4], dtick=1,
                           title=dict(text="position id"), showgrid=False)
    layout["yaxis"].update(visible=False, range=[-1, 1])
    fig.update_layout(layout)
    return pretty(fig)

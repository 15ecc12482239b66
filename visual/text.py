"""The generated text grouped by step (for gr.HighlightedText) and one step's numbers in words."""
from __future__ import annotations

import re

from logitspec.analysis.drafts import best_drafted_match, truth_after
from logitspec.analysis.lanes import label as lane_label
from logitspec.core.trace import NO_RETRIEVAL, RunTrace

from .counts import drafts_accepted_words, passes_words, plural, run_counts
from .data import context_before, get_step, is_finished, ngram_text, outcome, step_position, token_pieces
from .method_words import lookup_line
from .pieces import TokenPiece, split_note
from .style import ACCEPT_COLORS, sub_x


def accept_label(n: int) -> str:
    """Label of a span: tokens its step committed, root included ("1", "2", "3", "4+")."""
    return str(n) if n < 4 else "4+"


END_MARK = " ⏹ end"  # shown for an end-of-sequence token instead of its literal tag


def _output(trace: RunTrace) -> list[TokenPiece]:
    """The generated tokens' pieces, decoded across the whole output after the prompt."""
    # While a run streams, its last character may still be unfinished: wait rather than show bytes.
    return token_pieces(trace, trace.tokens, trace.prompt_tokens, final=is_finished(trace))


def _texts(trace: RunTrace, pieces: list[TokenPiece]) -> list[str]:
    eos = set(trace.eos_token_ids)
    return [END_MARK if t in eos else p.text for t, p in zip(trace.tokens, pieces)]


def output_pieces(trace: RunTrace) -> list[str]:
    """The text each generated token adds to the output, decoded across the whole output after
    the prompt: a character split across tokens (or steps) shows at the token that completes it."""
    return _texts(trace, _output(trace))


def answer_text(trace: RunTrace) -> str:
    """The generated answer as plain text, the end-of-sequence token left out."""
    eos = set(trace.eos_token_ids)
    return "".join(p for t, p in zip(trace.tokens, output_pieces(trace)) if t not in eos and p != END_MARK)


def text_spans(trace: RunTrace) -> list[tuple[str, str | None]]:
    """(text, label) per step, in order; the label is how many tokens that step committed.

    A step whose tokens only begin a character (the rest comes in a later step) shows their
    bytes as ‹hex›, so every step keeps a span that can be seen and clicked.
    """
    split = _output(trace)
    pieces = _texts(trace, split)
    spans, k = [], 0
    for s in trace.steps:
        text = "".join(pieces[k:k + len(s.tokens)]) or "".join(p.label() for p in split[k:k + len(s.tokens)])
        spans.append((text, accept_label(len(s.tokens))))
        k += len(s.tokens)
    return spans


def span_steps(trace: RunTrace) -> list[int]:
    """For each span of text_spans, the index of its step (a click on a span jumps there)."""
    return list(range(len(trace.steps)))


def _code(text: str) -> str:
    """Inline code that survives backticks inside the token text."""
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def drafts_held(trace: RunTrace, i: int) -> str:
    """How much of the true continuation the step's drafts held, set against what it accepted:
    a drafting miss (nothing held) reads differently from a sizing miss (held, not verified)."""
    s = trace.steps[i]
    after = truth_after(trace.steps, i)
    if not s.forward or not s.queries or not after:
        return ""
    m = best_drafted_match(s, after)
    accepted = s.drafts_accepted
    if m.length == 0:
        return ("the true next token was neither a candidate nor on a retrieved continuation, "
                "so nothing could be accepted")
    if m.kind in ("g1", "pld"):
        where = {"g1": "g1's continuation", "pld": "the prompt-lookup chain"}[m.kind]
        text = f"the true next {plural(m.length, 'token')} lay on {where}"
    elif m.length == 1:  # the guess alone: no lookup is needed for it, so "g2: 0 matched" can stand beside it
        text = f"the true next token was candidate {m.rank} itself, a next-next guess read off the logits"
    else:
        text = (f"the true next {m.length} tokens lay on candidate {m.rank}'s branch: the guess, then its "
                "g2 continuation")
    text += f"; {drafts_accepted_words(accepted)}"
    if m.length > accepted:
        text += " (the rest were drafted but not verified: the tree stopped short of them)"
    return text


def sizing_reason(reason: str) -> str:
    """A tree size's recorded reason as the summary says it: the size is said once (the reason's own
    "N tokens:" opening dropped), and the next node's p named as what it is, the chance the run's
    statistics give it, not the probability the candidates chart lists."""
    reason = re.sub(r"^\d+ tokens?: ", "", reason)
    return reason.replace("the next node (p=", "the next node (its estimated chance of acceptance ")


def measuring_note(seconds: float) -> str:
    """A step's one-off measuring, which its compute clock counts beside the step's own time."""
    if seconds <= 0:
        return ""
    return (f"; and {seconds:.2f} s measuring this machine's pass costs (one-off), "
            "which the race's times count too")


def step_summary_md(trace: RunTrace, step: int) -> str:
    """The step's numbers in a few lines of markdown."""
    s = get_step(trace, step)
    i = step_position(trace, step)
    ctx = context_before(trace, step)
    verified = sum(not n.pruned for n in s.tree)
    pruned = len(s.tree) - verified
    lines = [f"**Step {i} of 0–{len(trace.steps) - 1}** · {lane_label(trace.method, trace)} · x<sub>i+1</sub> = "
             f"{_code(ngram_text(trace, [s.root], ctx))}", ""]
    lines.append(f"- **Tokens committed:** {len(s.tokens)} (x<sub>i+1</sub> + "
                 f"{drafts_accepted_words(s.drafts_accepted)}): {_code(ngram_text(trace, s.tokens, ctx))}")
    if s.bonus is not None:
        lines.append(f"- **Bonus token** (the model's next choice, next step's root): {_code(ngram_text(trace, [s.bonus], ctx + s.tokens))}")
    if not s.forward:
        lines.append("- **No forward pass:** the root was the last token wanted.")
    else:
        lines.append(f"- **Draft tree:** {verified} verified in one forward pass, {pruned} pruned token"
                     f"{'s' if pruned != 1 else ''} kept for the picture")
        looked = lookup_line(trace, s, ctx) if outcome(s) != NO_RETRIEVAL or s.lookups else ""
        if looked:  # in the method's own words: g1 and g2, prompt lookup's query, REST's suffix, Lookahead's pool
            lines.append(f"- **Retrieval:** {sub_x(looked)}")
        held = drafts_held(trace, i)
        if held:
            lines.append(f"- **What the drafts held:** {held}")
        total = s.seconds
        on = f" on {s.threads} thread{'s' if s.threads != 1 else ''}" if s.threads else ""
        lines.append(f"- **Time:** {total * 1000:.1f} ms = draft {_ms(s.draft_seconds)} + forward "
                     f"{_ms(s.forward_seconds)}{on} + bookkeeping {_ms(s.bookkeeping_seconds)}"
                     + measuring_note(s.calibration_seconds))
    if s.sizing is not None:
        z = s.sizing
        line = f"- **Tree size:** {plural(z.size, 'token')} ({z.mode}) — {sizing_reason(z.reason)}"
        if z.expected_accepted is not None and z.expected_seconds is not None:
            line += (f"; expected {z.expected_accepted:.2f} tokens per pass for "
                     f"{z.expected_seconds * 1000:.1f} ms")
        if z.next_gain is not None and z.next_seconds is not None:
            line += (f"; one more node would add {z.next_gain:.3f} tokens at "
                     f"{z.next_seconds * 1000:.1f} ms")
        lines.append(line)
    c = run_counts(trace, upto=i)
    lines.append(f"- **So far:** {plural(c.tokens, 'token')} in {passes_words(c.passes)} "
                 f"({c.tokens_per_pass:.2f} per pass), {drafts_accepted_words(c.drafts_accepted)}")
    note = split_note(*lines)
    return "\n".join(lines + [f"- {note}"] * bool(note))


__all__ = ["ACCEPT_COLORS", "END_MARK", "accept_label", "output_pieces", "span_steps", "step_summary_md", "text_spans"]

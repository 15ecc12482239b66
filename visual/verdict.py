"""The race's counters and verdict in words, computed from the lanes' traces only.

A verdict never compares unequal things: a race stopped or cut short is judged over the
tokens every lane reached (serve.race.result_of), and says that it was cut short.
"""
from __future__ import annotations

import html
import re
from statistics import mean

from logitspec.analysis.lanes import GPU_PASS, label, papers_tree
from logitspec.analysis.parting import near_tie_words
from logitspec.analysis.race import MIN_COMPARED_TOKENS, RaceResult, lane_stats, result_of, seconds_to_reach
from logitspec.core.settings import INERT
from logitspec.core.trace import RunTrace

from .counts import plural, run_counts
from .glossary import defined, term
from .style import lane_color

STOP_WORDS = {"stopped": "Stopped", "time limit": "Stopped at the time limit"}
SLOWER = "LogitSpec ran slower than vanilla here"
DEVICE_WORDS = {"cpu": "on this CPU", "cuda": "on this GPU"}
# A machine's parts that name its CPU's instruction sets: words for engineers, not for a first screen.
INSTRUCTION_SETS = re.compile(r"\b(AVX|AMX|FMA|NEON|SSE)", re.I)


def machine_words(machine: str) -> str:
    """A race file's machine in plain words: 'AMD EPYC, 2 cores, AVX2, no AVX-512' -> 'AMD EPYC, 2 cores'."""
    parts = [p.strip() for p in machine.split(",")]
    return ", ".join(p for p in parts if p and not INSTRUCTION_SETS.search(p)) or machine


def compared_rates(res: RaceResult) -> dict[str, float]:
    """Tokens per second of every lane over the tokens every lane reached: the rates whose ratio
    is each speed-up (res.speedups), so a page that shows a speed-up can show them beside it."""
    n = res.compared_tokens
    if not res.comparable:
        return {}
    return {name: n / sec if (sec := seconds_to_reach(t, n)) else 0.0 for name, t in res.traces.items()}


def cut_short(res: RaceResult) -> bool:
    """Whether some lane made more tokens than the speed-ups compare (a stopped or uneven race)."""
    return any(len(t.tokens) != res.compared_tokens for t in res.traces.values())


def per_pass(res: RaceResult) -> dict[str, float]:
    """Tokens per forward pass of every lane over its own run, as the counters' table gives them:
    counts, the same on any hardware, and a ratio that needs no equal token counts."""
    return {name: run_counts(t).tokens_per_pass for name, t in res.traces.items()}


def per_pass_words(res: RaceResult, lane: str = "logitspec", here: str = "here") -> str:
    """'per forward pass, <b>2.91</b> tokens against 2.38 for prompt lookup and 1.01 for vanilla'; the
    paper's tree with its size and its speed on this machine, as it is the one a CPU makes slow."""
    rates = per_pass(res)
    others = []
    for name in sorted((n for n in rates if n != lane), key=lambda n: n == "vanilla"):
        said = f"{rates[name]:.2f} for {label(name, res.traces[name])}"
        if papers_tree(name) and res.speedups.get(name):
            size = res.traces[name].settings.get("capacity", 64)
            said += f" ({size} tokens: {GPU_PASS}; {res.speedups[name]:.2f}× vanilla's tokens/s {here})"
        others.append(said)
    against = ", ".join(others[:-1]) + f" and {others[-1]}" if len(others) > 1 else "".join(others)
    return f"per forward pass, <b>{rates[lane]:.2f}</b> tokens" + (f" against {against}" if against else "")


# Processors that turn the model away from what the context already holds, which a copy proposes.
AGAINST_COPYING = {"repetition_penalty": "the repetition penalty", "no_repeat_ngram_size": "the no-repeat n-grams"}


def _why_rarely_right(trace: RunTrace) -> str:
    """Why copied drafts missed: the run's processors where one works against copying, else the text."""
    applied = (trace.settings or {}).get("processors") or {}
    named = [words for name, words in AGAINST_COPYING.items() if applied.get(name) not in (None, INERT[name])]
    if named:
        return f"{' and '.join(named)} turned the model away from the tokens a copy proposes"
    return "the context held little to copy"


def shortfall(res: RaceResult, lane: str = "logitspec") -> str:
    """One sentence, in a visitor's words, on why `lane` ended below vanilla; "" when it did not."""
    sp = res.speedups.get(lane)
    trace, van = res.traces.get(lane), res.traces.get("vanilla")
    if not sp or sp >= 1.0 or trace is None or van is None:
        return ""
    steps = [s for s in trace.steps if s.forward]
    van_steps = [s for s in van.steps if s.forward]
    if not steps or not van_steps:
        return ""
    tree = sum(len(s.verified_nodes) for s in steps) / len(steps)
    # Tokens per pass as the counters state them (visual.counts), so the two never disagree.
    per_pass = run_counts(trace).tokens_per_pass
    # Means, not medians: the speed-up is total tokens over total time, so means are what add up to it.
    gain = per_pass / run_counts(van).tokens_per_pass
    pass_cost = mean(s.forward_seconds for s in steps) / mean(s.forward_seconds for s in van_steps)
    step_cost = mean(s.clock_seconds for s in steps) / mean(s.clock_seconds for s in van_steps)
    if tree < 1.2 and all(s.sizing is None or s.sizing.mode == "cost" for s in steps):
        return (f"{SLOWER} because the draft trees stayed at about one token: the measured cost of a "
                "tree token on this machine was high (a busy CPU makes it so), so there was little to "
                "accept and the drafting time was not paid back.")
    if per_pass < 1.15:
        return (f"{SLOWER} because its drafts were rarely right on this text: {per_pass:.2f} tokens "
                f"per pass from {tree:.1f}-token trees, as {_why_rarely_right(trace)}.")
    if pass_cost > gain:
        return (f"{SLOWER} because its forward passes took {pass_cost:.2f}× vanilla's on average, more than "
                f"the {gain:.2f}× tokens per pass they gained (a busy machine or a long context makes tree "
                "passes dearer).")
    if step_cost > gain:
        return (f"{SLOWER} because drafting and bookkeeping brought its steps to {step_cost:.2f}× vanilla's "
                f"time on average (the forward passes alone {pass_cost:.2f}×), more than the {gain:.2f}× "
                "tokens per pass they gained.")
    shared = trace.prefill_reused or van.prefill_reused  # one pass, charged to both (runtime/prefills.py)
    if not shared and trace.prefill_seconds > van.prefill_seconds:
        return (f"{SLOWER} because its prompt pass took {trace.prefill_seconds * 1e3:.0f} ms against vanilla's "
                f"{van.prefill_seconds * 1e3:.0f} ms; its steps alone made tokens {gain / step_cost:.2f}× as fast "
                "(other work on the machine can slow one lane's moment and not the other's).")
    return (f"{SLOWER} over the first {res.compared_tokens} tokens, which every lane reached, though over its "
            f"whole run its steps made tokens {gain / step_cost:.2f}× as fast (a pass that crosses that count "
            "is counted whole).")


RECORDED_WORDS = "on the recording's machine"  # its name is in the note under the table (a phone's screen is short)


def device_words(res: RaceResult, lane: str, recorded_on: str | None) -> str:
    """Where the lanes' speeds were measured: this machine for a live race; the machine it was
    recorded on for a race read from a file (`recorded_on`: its machine, "" when the file names none)."""
    if recorded_on is None:
        return DEVICE_WORDS.get(res.traces[lane].device, "")
    return RECORDED_WORDS


def verdict_text(res: RaceResult, stop_reason: str | None = None, lane: str = "logitspec",
                 recorded_on: str | None = None) -> str:
    """The race's verdict: speed and sameness against vanilla, over equal token counts; a race read
    from a file (`recorded_on`, see device_words) is judged on its own machine, not this one."""
    if lane not in res.traces or "vanilla" not in res.traces:
        return ""
    n = res.compared_tokens
    sp = res.speedups.get(lane, 0.0)
    cut = stop_reason is not None or not res.complete
    if cut:
        tokens = {name: run_counts(t).tokens for name, t in res.traces.items()}
        counts = "; ".join(f"{label(name, res.traces[name])}: {n}" for name, n in tokens.items())  # a label may hold a comma
        head = f"{STOP_WORDS.get(stop_reason or '', 'Cut short')} after {tokens[lane]} tokens ({counts})."
        if n == 0:
            return head + " Not every lane produced a token, so there is nothing to compare."
        scope = f" Over the first {n} tokens, the count every lane reached:"
    else:
        head, scope = "", ""
    if not res.comparable:
        same = _sameness(res, lane, cut)
        return f"{head} {too_few_words(res, cut)} {same[:1].upper()}{same[1:]}.".strip()
    device = device_words(res, lane, recorded_on)
    rates = compared_rates(res)
    speed = (f"{label(lane, res.traces[lane])} <b>{sp:.2f}×</b> the tokens/s of {_vanilla_words(res)}{' ' + device if device else ''} "
             f"({rates[lane]:.1f} against {rates['vanilla']:.1f} tokens/s)")
    passes = (per_pass_words(res, lane, "here" if recorded_on is None else "there")
              + (" (each lane over its own run)" if cut else ""))
    text = f"{head}{scope} {speed}; {passes}; {_sameness(res, lane, cut)}.".strip()
    return " ".join(x for x in (text, shortfall(res, lane)) if x)


def measuring_words(res: RaceResult, recorded_on: str | None = None) -> str:
    """The one-off measuring (the cost curve, the thread count) each lane's clock holds, named with
    its seconds; "" when no lane measured anything during the race. A race read from a file measured
    its own machine, not this one."""
    said = [f"{label(name, t)} {t.calibration_seconds:.2f} s" for name, t in res.traces.items()
            if t.calibration_seconds > 0]
    if not said:
        return ""
    whose = "this machine's" if recorded_on is None else "its machine's"
    return (f"The times include the one-off measuring of {whose} pass costs done during the race "
            f"({'; '.join(said)}).")


def too_few_words(res: RaceResult, cut: bool) -> str:
    """Why a race gives no speed-up: its lanes made too few tokens for one to mean anything."""
    why = "The race stopped too early to compare speed" if cut else "Too few tokens to compare speed"
    return (f"{why}: every lane reached {plural(res.compared_tokens, 'token')}, and a speed-up needs at least "
            f"{MIN_COMPARED_TOKENS} (the prompt pass and one step's timing would decide it).")


def _sameness(res: RaceResult, lane: str, cut: bool) -> str:
    """Whether `lane`'s output is vanilla's, and which other lane's is not."""
    part = res.partings.get(lane)
    if part is None:
        same = ("those tokens identical to vanilla's, token for token" if cut
                else "output identical to vanilla, token for token")
    elif part.near_tie:
        same = (f"output equal to vanilla's up to a near-tie: the same first {part.index} tokens, "
                f"then {near_tie_words(part)}")
    else:
        same = f"output DIFFERENT from vanilla from token {part.index} on"
    for name, p in res.partings.items():
        if name != lane:
            how = f"equal up to a near-tie at token {p.index}" if p.near_tie else f"DIFFERENT from token {p.index} on"
            same += f"; the output of {label(name, res.traces[name])} {how}"
    return same


def _vanilla_words(res: RaceResult) -> str:
    """What the baseline lane did: greedy decoding, or sampling with the race's seed."""
    settings = res.traces["vanilla"].settings if "vanilla" in res.traces else {}
    if settings.get("temperature"):
        return f"vanilla sampling with the same seed ({settings.get('seed', 0)})"
    return "vanilla greedy decoding"


def speedup_cell(res: RaceResult, name: str) -> str:
    """A lane's speed-up in the table, or a dash that says why there is none."""
    if not res.comparable:
        return f"<span title='too few tokens to compare: at least {MIN_COMPARED_TOKENS} needed'>—</span>"
    return f"<b>{res.speedups.get(name, 0):.2f}×</b>"


def recorded_note(machine: str) -> str:
    """The counters' note under a race read from a file: where it ran, in plain words (its
    instruction sets in the hover)."""
    if not machine:
        return ""
    return (f"A recorded race on <span title='{html.escape(machine, quote=True)}'>"
            f"{html.escape(machine_words(machine))}</span>; not live.")


def counters_html(traces: dict[str, RunTrace], running: bool, note: str = "",
                  stop_reason: str | None = None, recorded_on: str | None = None) -> str:
    """The race's counters, one row per lane from measured times, and the verdict once it ends.
    Each speed-up is the ratio of the tokens/s beside it: over the whole runs, or, when the lanes
    made unequal counts, over the first tokens every lane reached, in a column saying so.
    `recorded_on`: a race read from a file, and its machine (verdict_text)."""
    res = result_of(traces) if "vanilla" in traces else None
    judged = res is not None and not running and res.compared_tokens > 0
    cut = judged and res.comparable and cut_short(res)
    rates = compared_rates(res) if judged else {}
    rows = []
    for name, t in traces.items():
        st, c = lane_stats(name, t), run_counts(t)
        sp = speedup_cell(res, name) if judged and name != "vanilla" else ""
        first = f"<td>{rates[name]:.1f}</td>" if cut else ""
        # The key rides on the row (data-lane), the label is what a visitor reads.
        rows.append(
            f"<tr data-lane='{html.escape(name)}'><td><span style='color:{lane_color(name, t.method)}'>■</span> "
            f"{defined(label(name, t))}</td><td>{c.tokens}</td><td>{c.passes}</td><td>{c.tokens_per_pass:.2f}</td>"
            f"<td>{st.tokens_per_second:.1f}</td><td>{st.seconds:.2f} s</td>{first}<td>{sp}</td></tr>")
    scope = f", first {res.compared_tokens} tokens" if cut else ""
    head = (f"<tr><th>method</th><th>tokens</th><th>{term('forward pass', 'passes')}</th><th>{term('tokens per pass', 'tokens / pass')}</th>"
            f"<th>tokens / s</th><th>{term('compute clock')}</th>"
            + (f"<th>tokens / s{scope}</th>" if cut else "") + f"<th>speed-up{scope}</th></tr>")
    verdict = ""
    if res and not running and "logitspec" in traces:
        verdict = f"<p class='verdict'>{verdict_text(res, stop_reason, recorded_on=recorded_on)}</p>"
    state = "<p><i>racing…</i></p>" if running else ""
    note = " ".join(x for x in (note, measuring_words(res, recorded_on) if res and not running else "") if x)
    extra = f"<p class='race-note'>{note}</p>" if note else ""
    many = " many" if len(traces) > 3 else ""  # a phone wraps long lane names then (ui/page.py)
    return (f"<div class='counters-wrap'><table class='counters{many}'>{head}{''.join(rows)}</table></div>"
            f"{verdict}{state}{extra}")

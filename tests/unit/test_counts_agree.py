"""Every tab states the same numbers about a run.

For each trace (the shipped ones, the recorded race's lanes, the fixtures, a sampled run, a
race and a run cut short) the text of every tab is rendered as the app renders it, without
the app: the race's counters and verdict, the step explorer, the retrieval debugger and its
what-if, the observations and the Explain tab. Each claim about the run read back out of
those texts must equal the count taken here straight from the records, and what the drafts
held can never exceed the output.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.paths import FIXTURES, ROOT, TRACE_FIXTURES
from logitspec.analysis.race import load_race, result_of
from logitspec.core.trace import G2_RESCUED, RunTrace
from logitspec.analysis.whatif import RetrievalSetting, own_setting, recorded_k, what_if
from visual import accepted_hist_figure, retrieval_success_figure, step_summary_md
from visual.explain_words import choose_step, sentences
from visual.fit import caption_html
from visual.debug_table import debugger_note, failure_rows
from visual.verdict import counters_html, verdict_text
from visual.whatif import whatif_html
from logitspec.analysis.lanes import label

RACE = ROOT / "traces" / "races" / "summarization-242.json"
# Sampled runs on the bundled model, e.g. `python -m logitspec generate --temperature 0.6 --seed 5
# --max-new-tokens 48 --k 16 --tree static --save-trace river-21.json "Summarise in two sentences: ..."`.
SAMPLED = FIXTURES / "sampled"
# "128 tokens in 73 forward passes", and the wordings a tab might slip into ("in 74 steps").
RUN_CLAIM = re.compile(r"(\d+) tokens? in (\d+) (?:forward )?(pass(?:es)?|steps?)")


@dataclasses.dataclass
class Truth:
    """The run's numbers, counted here from the records alone."""

    tokens: int
    passes: int
    drafts: list[int]  # per step: tokens committed after the root
    outcomes: Counter


def truth(t: RunTrace) -> Truth:
    fwd = [s for s in t.steps if s.forward]
    return Truth(sum(len(s.tokens) for s in t.steps), len(fwd), [len(s.tokens) - 1 for s in t.steps],
                 Counter(s.outcome for s in fwd))


def _cut(t: RunTrace, steps: int) -> RunTrace:
    """The run as a stop after its first `steps` steps leaves it."""
    return dataclasses.replace(t, steps=t.steps[:steps])


def _runs() -> dict[str, RunTrace]:
    runs = {p.stem: RunTrace.load(p) for p in sorted((ROOT / "traces").glob("*.json"))}
    runs |= {f"fixture {name}": RunTrace.load(p) for name, p in TRACE_FIXTURES.items()}
    runs |= {f"sampled {p.stem}": RunTrace.load(p) for p in sorted(SAMPLED.glob("*.json"))}
    lanes, _ = load_race(RACE)
    runs |= {f"race {name}": t for name, t in lanes.items()}
    runs["stopped summarization-241"] = _cut(runs["fixture summarization-241"], 17)
    return runs


RUNS = _runs()


def _races() -> dict[str, tuple[dict[str, RunTrace], str | None]]:
    lanes, _ = load_race(RACE)
    stopped = {"vanilla": _cut(lanes["vanilla"], 50), "logitspec": _cut(lanes["logitspec"], 21)}
    return {"recorded": (lanes, None), "stopped": (stopped, "stopped")}


def test_the_runs_cover_what_the_tabs_must_agree_on():
    assert any(t.settings.get("temperature") for t in RUNS.values()), "a sampled run"
    assert any(len(t.steps) > t.forward_steps for t in RUNS.values()), "a final commit without a pass"
    assert any(truth(t).outcomes[G2_RESCUED] and not any(
        s.outcome == G2_RESCUED and len(s.tokens) >= 2 for s in t.steps) for t in RUNS.values()), \
        "a run whose g2 rescues accepted no draft"


def _claims(text: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b, _ in RUN_CLAIM.findall(text)]


def _counters(t: RunTrace) -> tuple[int, int, str]:
    """(tokens, passes, tokens per pass) of the counters' row."""
    html = counters_html({t.method: t}, running=False)
    m = re.search(r"■</span> .*?</td><td>(\d+)</td><td>(\d+)</td><td>([\d.]+)</td>", html)
    assert m, html
    return int(m.group(1)), int(m.group(2)), m.group(3)


@pytest.mark.parametrize("name", list(RUNS))
def test_every_tab_states_the_runs_own_tokens_and_passes(name):
    t = RUNS[name]
    want = truth(t)
    tokens, passes, per_pass = _counters(t)
    assert (tokens, passes) == (want.tokens, want.passes)
    assert per_pass == f"{want.tokens / want.passes:.2f}"
    texts = {
        "explorer": step_summary_md(t, len(t.steps) - 1),
        "what-if": whatif_html(what_if(t, own_setting(t)), t),
    }
    if t.method == "logitspec":
        texts["explain"] = _explain_head(t)
    for tab, text in texts.items():
        claims = _claims(text)
        assert claims and set(claims) == {(want.tokens, want.passes)}, (tab, claims, text)
    observed = caption_html(accepted_hist_figure(t, fit=True))
    said = re.search(r"(\d+) forward pass(?:es)? made (\d+) tokens?", observed)
    assert said and (int(said.group(2)), int(said.group(1))) == (want.tokens, want.passes)
    assert f"of {want.passes} forward pass" in debugger_note(t, None, len(failure_rows(t)))
    retrieval = caption_html(retrieval_success_figure(t, fit=True))
    assert f"{want.passes} forward pass" in retrieval, retrieval


def _explain_head(t: RunTrace) -> str:
    """The Explain tab's heading for a visitor's own run (ui.explain), with the chooser's reason."""
    from ui.explain import ExplainTab

    _, _, words = ExplainTab(lambda: (None, "")).run_of(SimpleNamespace(source="my run", traces={"logitspec": t}))
    return f"{words}: {choose_step(t).rule}"


@pytest.mark.parametrize("name", list(RUNS))
def test_each_step_counts_its_accepted_drafts_alike_everywhere(name):
    t = RUNS[name]
    want = truth(t)
    rows = {r["step"]: r for r in failure_rows(t)}
    assert Counter(r["outcome"] for r in rows.values()) == want.outcomes
    assert sum(r["drafts accepted"] for r in rows.values()) == sum(
        d for d, s in zip(want.drafts, t.steps) if s.forward)
    for i, s in enumerate(t.steps):
        d = want.drafts[i]
        if i in rows:
            assert rows[i]["drafts accepted"] == d
        summary = step_summary_md(t, i)
        assert f"**Tokens committed:** {d + 1} (x<sub>i+1</sub> + {d} draft token{'s' * (d != 1)} accepted)" in summary
        m = re.search(r"; (\d+) draft tokens? accepted", summary)
        assert m is None or int(m.group(1)) == d  # what the drafts held, set against what was accepted
        so_far = _claims(summary.split("**So far:**")[1])
        assert so_far == [(sum(want.drafts[:i + 1]) + i + 1, sum(x.forward for x in t.steps[:i + 1]))]


@pytest.mark.parametrize("name", [n for n, t in RUNS.items() if t.method == "logitspec"])
def test_explain_says_what_the_other_tabs_count(name):
    t = RUNS[name]
    want = truth(t)
    rule = choose_step(t).rule
    rescued = want.outcomes[G2_RESCUED]
    assert ("never rescued" in rule) == (rescued == 0), rule
    named = re.search(r"rescued a failed g1 at (\d+) steps?", rule)
    assert named is None or int(named.group(1)) == rescued
    for i in {choose_step(t).step, 0, len(t.steps) - 1}:
        d = want.drafts[i]
        said = sentences(t, i)
        accepted = f"{d} draft token{'s' * (d != 1)} accepted"
        assert accepted in said["accept"][0], said["accept"]
        assert not t.steps[i].forward or accepted in said["verify"][1], said["verify"]


@pytest.mark.parametrize("name", list(RUNS))
def test_what_the_drafts_held_never_exceeds_the_output(name):
    t = RUNS[name]
    want = truth(t)
    settings = [own_setting(t), RetrievalSetting((1,), 20, recorded_k(t)), RetrievalSetting((1, 2, 3), 1, 0)]
    for setting in settings:
        html = whatif_html(what_if(t, setting), t)
        held = [int(n) for n in re.findall(r"the drafts held <b>(\d+)</b>", html)]
        assert len(held) == 2 and all(n <= want.tokens for n in held), (setting, held, want.tokens)
        # The run's own drafts held at least every draft token it accepted.
        assert held[0] >= sum(want.drafts), (held, sum(want.drafts))


@pytest.mark.parametrize("race", list(_races()))
def test_the_verdict_and_counters_agree_with_each_lane(race):
    lanes, reason = _races()[race]
    res = result_of(lanes)
    text = verdict_text(res, reason)
    counters = counters_html(lanes, running=False, stop_reason=reason)
    for name, t in lanes.items():
        want = truth(t)
        row = re.search(rf"<tr data-lane='{name}'><td>.*?</td><td>(\d+)</td><td>(\d+)</td><td>([\d.]+)</td>", counters)
        assert row and (int(row.group(1)), int(row.group(2))) == (want.tokens, want.passes)
        if reason:
            assert f"{label(name)}: {want.tokens}" in text, text
        per_pass = re.search(r"([\d.]+) tokens per pass from", text)
        if per_pass and name == "logitspec":
            assert per_pass.group(1) == row.group(3)
    if reason:
        assert text.startswith(f"Stopped after {truth(lanes['logitspec']).tokens} tokens")

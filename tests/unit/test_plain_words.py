"""Plain words on the main page: lanes named by the lane table's labels, terms defined where they
stand, and a machine named without its instruction sets."""
from __future__ import annotations

import dataclasses
import html
import re

from helpers.paths import ROOT
from logitspec.analysis.lanes import LANES, label
from logitspec.analysis.race import load_race, result_of
from visual.glossary import GLOSSARY, defined, term
from visual.race import passes_figure, race_figure
from visual.verdict import counters_html, machine_words, verdict_text

RECORDED = ROOT / "traces" / "races" / "summarization-242.json"


def test_a_lane_is_named_by_its_label_and_an_unknown_one_by_its_name():
    for ln in LANES:
        assert label(ln.name) == ln.label
    assert label("not-a-lane") == "not-a-lane"


def test_defined_marks_each_glossary_word_of_a_label_and_escapes_the_rest():
    cost = defined("LogitSpec (cost tree)")
    assert cost == f"LogitSpec ({term('cost tree')})"
    assert defined("prompt lookup") == term("prompt lookup")
    # Case counts: the "Token" of a name is no glossary word; its "cost tree" is.
    assert defined("Token Recycling (cost tree)") == f"Token Recycling ({term('cost tree')})"
    assert defined("a <b> & c") == "a &lt;b&gt; &amp; c"
    assert re.sub(r"<[^>]+>", "", html.unescape(defined("LogitSpec, the paper's static tree"))) == (
        "LogitSpec, the paper's static tree")
    assert f'title="{html.escape(GLOSSARY["static tree"])}"' in defined("LogitSpec, the paper's static tree")


def test_a_machine_is_named_without_its_instruction_sets():
    assert machine_words("AMD EPYC, 2 cores, AVX2, no AVX-512") == "AMD EPYC, 2 cores"
    assert machine_words("Intel Xeon, 2 cores, AVX-512, AMX") == "Intel Xeon, 2 cores"
    assert machine_words("AVX2") == "AVX2"  # nothing else to say: said as it is
    assert machine_words("a laptop") == "a laptop"


def test_the_counters_name_each_lane_by_its_label_and_define_their_terms():
    lanes, _ = load_race(RECORDED)
    out = counters_html(lanes, False)
    plain = html.unescape(re.sub(r"<[^>]+>", "", out))
    for name in lanes:
        assert f"<tr data-lane='{name}'>" in out and f"■ {label(name)}" in plain
    assert not re.search(r"\bpld\b|\blogitspec\b", plain), plain
    assert "<th>lane</th>" not in out and "<th>method</th>" in out
    for word in ("prompt lookup", "cost tree", "tokens per pass", "forward pass", "compute clock"):
        assert f'data-term="{word}"' in out, word


def test_the_verdict_and_the_race_figures_use_the_same_labels():
    lanes, _ = load_race(RECORDED)
    res = result_of(lanes)
    said = verdict_text(res)
    assert said.startswith(f"{label('logitspec')} <b>") and f"for {label('pld')}" in said
    for fig in (race_figure(lanes, fit=True), passes_figure(lanes, fit=True)):
        names = [t.name for t in fig.data if t.mode == "lines"]
        assert [n.split(":")[0] for n in names] == [label(k) for k in lanes], names
    sub = passes_figure(lanes, fit=True).layout.meta["caption"]["subtitle"]
    assert all(f"{label(k)}: " in sub for k in lanes), sub


def test_a_stopped_verdict_counts_each_lane_under_its_label():
    lanes, _ = load_race(RECORDED)
    cut = {k: dataclasses.replace(t, steps=t.steps[: 20 + 5 * i]) for i, (k, t) in enumerate(lanes.items())}
    said = verdict_text(result_of(cut), "stopped")
    m = re.search(r"Stopped after (\d+) tokens \((.*?)\)\. ", said)
    assert m, said
    stated = dict(re.findall(r"([^;]+?): (\d+)", m.group(2)))
    assert {k.strip(): int(v) for k, v in stated.items()} == {label(k): len(t.tokens) for k, t in cut.items()}


def test_a_recorded_race_is_noted_on_its_machine_in_plain_words():
    from visual.verdict import recorded_note

    note = recorded_note("AMD EPYC, 2 cores, AVX2, no AVX-512")
    assert re.sub(r"<[^>]+>", "", note) == "A recorded race on AMD EPYC, 2 cores; not live."
    assert "title='AMD EPYC, 2 cores, AVX2, no AVX-512'" in note  # the whole machine, for an engineer's hover
    assert recorded_note("") == ""


def test_the_intro_defines_its_words_in_their_sentence():
    from ui.race import INTRO_MD

    for word in ("token", "forward pass", "vanilla", "greedy"):
        assert f"<dfn>{word}</dfn>" in INTRO_MD, word
    plain = re.sub(r"<[^>]+>", "", INTRO_MD)
    assert "next-next" not in plain and "lane" not in plain

"""The failure summary (logitspec/analysis/failures.py) against traces counted by hand, and the
set file (logitspec/analysis/sets.py): its round trip and its refusals."""
from __future__ import annotations

import csv
import gzip
import io
import json

import pytest

from helpers.paths import FIXTURES
from logitspec.analysis.failures import FAILED, summarise_run, summarise_set
from logitspec.analysis.sets import SetFileError, SetWriter, read_set
from logitspec.core.trace import (BOTH_FAILED, DRAFT_ACCEPTED, DRAFT_REJECTED, G1_MATCHED, G2_RESCUED, NO_DRAFT, PLD_FAILED,
                                  PLD_MATCHED, QueryRecord, RunTrace, StepRecord)


def q(kind: str, ngram: tuple[int, ...], matched: bool, rank: int | None = None) -> QueryRecord:
    return QueryRecord(kind, rank, ngram, (len(ngram),), len(ngram) if matched else None, 0 if matched else None,
                       [9] if matched else [])


def step(i: int, tokens: list[int], g1: bool, g2: bool, ngram=(1, 2)) -> StepRecord:
    """A LogitSpec step: g1's lookup of `ngram`, one g2 query."""
    return StepRecord(i, "logitspec", 10 + i, tokens[0], tokens, 5, queries=[q("g1", ngram, g1), q("g2", (2, 3), g2, 1)])


def trace(steps: list[StepRecord], method: str = "logitspec") -> RunTrace:
    return RunTrace(method, "m", "p", [1, 2, 3], {}, steps, token_texts={"1": "a", "2": "b", "3": "c", "4": "d", "5": "e", "9": "z"})


# Outcomes by step: g1, fail, fail, g2, fail, fail, fail, g1; tokens 3,1,1,2,1,1,1,2 = 12.
HAND = [(G1_MATCHED, [4, 4, 4]), (BOTH_FAILED, [4]), (BOTH_FAILED, [4]), (G2_RESCUED, [4, 4]),
        (BOTH_FAILED, [4]), (BOTH_FAILED, [4]), (BOTH_FAILED, [4]), (G1_MATCHED, [4, 4])]


def hand_trace() -> RunTrace:
    steps = []
    for i, (o, toks) in enumerate(HAND):
        ngram = (3, 4) if i in (5, 6) else (1, 2)  # two failed lookups of "cd", three of "ab"
        steps.append(step(i, toks, o == G1_MATCHED, o == G2_RESCUED, ngram))
    return trace(steps)


def test_run_summary_counts_a_hand_made_run():
    s = summarise_run(hand_trace())
    assert s.steps == 8 and s.tokens == 12 and s.tokens_per_pass == 1.5
    assert s.outcomes == {G1_MATCHED: 2, BOTH_FAILED: 5, G2_RESCUED: 1}
    assert s.failed_steps == 5 and s.share(BOTH_FAILED) == 5 / 8
    assert (s.longest_failed, s.longest_failed_at, s.worst_step) == (3, 4, 4)
    assert s.failed_ngrams == {"ab": 3, "cd": 2} and s.top_ngrams(1) == [("ab", 3)]
    assert s.failed_positions == [3, 4, 7, 8, 9]  # tokens committed before each failed step
    assert s.positions == [0, 3, 4, 5, 7, 8, 9, 10]


def test_prompt_lookup_and_a_final_commit():
    """Prompt lookup's outcomes; a step with no forward pass is no step of retrieval."""
    steps = [StepRecord(0, "pld", 3, 1, [1], 2, queries=[q("pld", (1,), False)]),
             StepRecord(1, "pld", 4, 2, [2, 3], 3, queries=[q("pld", (2,), True)]),
             StepRecord(2, "pld", 6, 3, [3], None, forward=False)]
    s = summarise_run(trace(steps, "pld"))
    assert s.outcomes == {PLD_FAILED: 1, PLD_MATCHED: 1} and s.steps == 2 and s.tokens == 4
    assert (s.longest_failed, s.worst_step, s.failed_ngrams) == (1, 0, {"a": 1})


def test_set_summary_pools_runs_and_buckets_positions():
    a, b = summarise_run(hand_trace()), summarise_run(trace([step(0, [4], False, False)]))
    s = summarise_set([a, b])
    assert (s.runs, s.steps, s.tokens, s.failed_steps, s.longest_failed) == (2, 9, 13, 6, 3)
    assert s.outcomes[BOTH_FAILED] == 6 and s.failed_ngrams[0] == ("ab", 4)
    assert s.by_position == [(0, 6, 9)]  # every step within the first 16 output tokens


def test_summary_agrees_with_each_steps_outcome_on_a_recorded_trace():
    t = RunTrace.load(FIXTURES / "coding-121.json.gz")
    s = summarise_run(t)
    fwd = [st for st in t.steps if st.forward]
    assert s.steps == len(fwd) and s.tokens == len(t.tokens)
    assert s.failed_steps == sum(st.outcome in FAILED for st in fwd)
    for outcome, n in s.outcomes.items():
        assert n == sum(st.outcome == outcome for st in fwd)


# ---------------------------------------------------------------- the set file


def write_set(path, traces, header=None):
    with SetWriter(path, header or {"model": "m", "machine": "test box", "methods": ["logitspec"]}) as w:
        for i, t in enumerate(traces):
            w.add(i, {"question_id": 100 + i, "category": "coding"}, t)


@pytest.mark.parametrize("name", ["set.jsonl", "set.jsonl.gz"])
def test_set_file_round_trip(tmp_path, name):
    runs = [hand_trace(), trace([step(0, [4], False, False)])]
    write_set(tmp_path / name, runs)
    got = read_set(tmp_path / name)
    assert got.header["machine"] == "test box" and got.prompts == 2 and got.runs == ["logitspec"]
    assert [e.question_id for e in got.entries] == [100, 101]
    assert got.entries[0].summary == summarise_run(runs[0])
    back = got.trace(got.entries[0])
    assert back.tokens == runs[0].tokens and [s.outcome for s in back.steps] == [o for o, _ in HAND]
    assert list(got.lanes(1)) == ["logitspec"]


def test_a_set_cut_short_keeps_its_whole_runs(tmp_path):
    p = tmp_path / "set.jsonl"
    write_set(p, [hand_trace(), hand_trace()])
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) - 40])  # the second trace stops mid-line
    got = read_set(p)
    assert got.cut_short and len(got.entries) == 1


def refusal(tmp_path, content: bytes | None) -> str:
    p = tmp_path / "bad.jsonl"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(SetFileError) as e:
        read_set(p)
    return str(e.value)


def test_set_file_refusals(tmp_path):
    assert refusal(tmp_path, None) == "no such file"
    assert "first line names no logitspec-set" in refusal(tmp_path, b"hello\n")
    assert "trace file, not a set file" in refusal(tmp_path, json.dumps({"format": "logitspec-trace/2"}).encode())
    assert "logitspec-set/9 is unknown" in refusal(tmp_path, b'{"format":"logitspec-set/9"}\n')
    assert "holds no finished run" in refusal(tmp_path, b'{"format":"logitspec-set/1"}\n')
    assert "lacks a field" in refusal(tmp_path, b'{"format":"logitspec-set/1"}\n{"prompt":0}\n{}\n')
    p = tmp_path / "two.jsonl"
    write_set(p, [hand_trace(), hand_trace()])
    lines = p.read_bytes().split(b"\n")
    lines[2] = lines[2][:-5]  # the first trace damaged, the second whole after it
    assert "run 1 of this set file is damaged" in refusal(tmp_path, b"\n".join(lines))
    assert "folder" in str(pytest.raises(SetFileError, read_set, tmp_path).value)


def test_a_gzipped_set_is_read_as_its_text(tmp_path):
    p = tmp_path / "a.jsonl"
    write_set(p, [hand_trace()])
    (tmp_path / "b.gz").write_bytes(gzip.compress(p.read_bytes()))
    assert read_set(tmp_path / "b.gz").entries[0].summary == read_set(p).entries[0].summary


def _recount(s: StepRecord) -> bool:
    """Whether a step found nothing, read from what it recorded: its queries' matches, else its sources' offers."""
    if s.queries:
        return not any(q.matched for q in s.queries)
    if s.method == "recycling" and not s.lookups:
        return not any(n.origin == "recycled" for n in s.tree)
    return not any(lk.offered for lk in s.lookups)


def _draft_recount(forward: list[StepRecord]) -> dict[str, int]:
    """What each step's draft came to, read from its tree and the tokens it committed."""
    counts: dict[str, int] = {}
    for s in forward:
        drafted = any(n.depth > 0 and not n.pruned for n in s.tree)
        o = DRAFT_ACCEPTED if len(s.tokens) > 1 else DRAFT_REJECTED if drafted else NO_DRAFT
        counts[o] = counts.get(o, 0) + 1
    return counts


@pytest.mark.parametrize("tree", ["cost", "static"])
def test_every_lanes_failure_count_is_what_its_steps_record(tree):
    """Each race lane on a tiny model: the workbench's failed steps are recounted from the steps, and a
    lane whose steps drafted nothing cannot say it never failed."""
    from helpers.tiny_models import char_lm, tiny_llama
    from logitspec.analysis.lanes import race_order
    from logitspec.core.settings import DecodeSettings
    from logitspec.runner import run_trace

    lm = char_lm(tiny_llama(seed=0))  # its own: SuffixDecoding's output tree is the model's
    prompt = "abcabcabc the cat sat on the mat, the cat sat on the mat, the cat"
    settings = DecodeSettings(max_new_tokens=24, tree=tree, recycle_across_runs=False)
    vanilla = summarise_run(run_trace(lm, prompt, "vanilla", settings))
    assert vanilla.drafts_nothing and vanilla.drafts == {NO_DRAFT: vanilla.steps}
    assert "no drafting" in vanilla.words() and "%" not in vanilla.words()
    # the static lane is LogitSpec's, REST needs its datastore (one query a step, like pld)
    for method in (m for m in race_order() if m not in ("vanilla", "logitspec-static", "rest")):
        t = run_trace(lm, prompt, method, settings)
        forward = [s for s in t.steps if s.forward]
        summary = summarise_run(t)
        assert summary.failed_steps == sum(_recount(s) for s in forward), method
        assert summary.drafts == _draft_recount(forward), method
        assert summary.looks_up and not summary.drafts_nothing, method
        no_draft = sum(not any(n.depth > 0 and not n.pruned for n in s.tree) for s in forward)
        assert f"no draft on {no_draft / len(forward):.0%}" in summary.words(), (method, summary.words())
        undrafted = [s for s in forward if not any(n.depth > 0 for n in s.tree)
                     and not any(lk.offered for lk in s.lookups) and not any(q.matched for q in s.queries)]
        assert summary.failed_steps >= len(undrafted), (method, summary.failed_steps, len(undrafted))
        assert summary.outcomes.get("no retrieval", 0) == 0, (method, summary.outcomes)


def test_the_tables_say_what_vanilla_cannot_fail_and_what_each_draft_came_to(tmp_path):
    """A set of vanilla and prompt lookup: vanilla's failure cells are empty, never 0; every run's draft
    columns are recounted from its steps, in the app's table and the CLI's CSV alike."""
    from helpers.tiny_models import char_lm, tiny_llama
    from logitspec.analysis.set_tables import overall_rows, position_rows, prompt_rows, summary_csv
    from logitspec.core.settings import DecodeSettings
    from logitspec.runner import run_trace

    lm = char_lm(tiny_llama(seed=0))
    settings = DecodeSettings(max_new_tokens=16)
    traces = {m: run_trace(lm, "the cat sat on the mat, the cat sat on the", m, settings) for m in ("vanilla", "pld")}
    p = tmp_path / "two.jsonl"
    with SetWriter(p, {"model": "m", "machine": "test box", "methods": list(traces)}) as w:
        for label, t in traces.items():
            w.add(0, {"question_id": 1, "category": "coding"}, t, label)
    s = read_set(p)
    names = s.names()  # each run as every view names its lane
    assert names == {"vanilla": "vanilla", "pld": "prompt lookup"}
    rows = {m: r for m in names for r in prompt_rows(s) if r["method"] == names[m]}
    assert rows["vanilla"]["failed %"] is None and rows["vanilla"]["longest failed run"] is None
    assert rows["vanilla"]["lookup matched %"] is None and rows["pld"]["lookup matched %"] is not None
    assert rows["vanilla"]["no draft %"] == 100.0 and rows["vanilla"]["draft accepted %"] == 0.0
    for m, t in traces.items():
        fwd = [x for x in t.steps if x.forward]
        for o, n in _draft_recount(fwd).items():
            assert rows[m][o + " %"] == round(100 * n / len(fwd), 1), (m, o)
    pld = [x for x in traces["pld"].steps if x.forward]
    assert rows["pld"]["failed %"] == round(100 * sum(map(_recount, pld)) / len(pld), 1)
    assert [r["method"] for r in position_rows(s)] and {r["method"] for r in position_rows(s)} == {"prompt lookup"}
    assert {r["method"]: r["no draft %"] for r in overall_rows(s)} == {names[m]: r["no draft %"] for m, r in rows.items()}
    csv_rows = list(csv.DictReader(io.StringIO(summary_csv(s))))
    assert [(r["method"], r["failed %"]) for r in csv_rows if r["method"] == "vanilla"] == [("vanilla", "")] * 2

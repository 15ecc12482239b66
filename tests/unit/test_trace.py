"""The trace: exact JSON round-trips, and the step semantics the pictures rely on, checked on
real traces recorded on the bundled model."""
from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.paths import fixture_text
from logitspec.core.trace import (TRACE_FORMAT, Candidate, NgramAttempt, QueryRecord, RunTrace, StepRecord, TreeNode,
                                  TreeSizing)
from logitspec.core.tree import PruningRule


# ----- round-trips ---------------------------------------------------------------------------

def only_keys_of(out, raw):
    """`out` cut to the keys that `raw` holds, at every level (lists keep their length)."""
    if isinstance(out, dict) and isinstance(raw, dict):
        return {k: only_keys_of(v, raw[k]) for k, v in out.items() if k in raw}
    if isinstance(out, list) and isinstance(raw, list) and len(out) == len(raw):
        return [only_keys_of(a, b) for a, b in zip(out, raw)]
    return out


def test_fixture_round_trips_exactly(fixture_traces):
    for path in fixture_traces:
        raw = fixture_text(path)
        trace = RunTrace.load(path)
        text = trace.to_json()
        again = RunTrace.from_json(text)
        assert again == trace  # dataclass equality, all the way down
        assert again.to_json() == text  # to_json -> from_json -> to_json is identical
        # Nothing in the file was lost or changed. (Fields added to the format after the file
        # was written load as their defaults; the exact round-trip above covers them.)
        assert json.loads(raw)["format"] == "logitspec-trace/1"  # the fixtures keep the old form
        entries = {**again.as_objects(), "format": "logitspec-trace/1"}
        assert only_keys_of(entries, json.loads(raw)) == json.loads(raw)
        assert isinstance(again.steps[0].tree[0], TreeNode)
        assert isinstance(again.steps[0].queries[0].attempts[0], NgramAttempt)
        assert isinstance(again.steps[0].sizing, TreeSizing)


def test_files_are_written_in_columns_and_much_smaller(fixture_traces):
    for path in fixture_traces:
        trace = RunTrace.load(path)
        d = json.loads(trace.to_json())
        assert d["format"] == TRACE_FORMAT == "logitspec-trace/2"
        spec = next(s for s in d["steps"] if s["queries"])
        assert set(spec["candidates"]) == {"rank", "token", "logit", "prob"}
        assert len(spec["candidates"]["token"]) == len(trace.steps[spec["index"]].candidates)
        assert isinstance(spec["queries"]["attempts"][0], dict)
        as_objects = json.dumps(trace.as_objects(), ensure_ascii=False)
        assert len(trace.to_json()) < 0.5 * len(as_objects), path.name


@pytest.mark.parametrize("bad", [
    {"rank": [1, 2], "token": [5], "logit": [0.0, 1.0], "prob": [0.5, 0.5]},  # ragged
    {"rank": 1, "token": 5, "logit": 0.0, "prob": 0.5},  # not lists
])
def test_malformed_columns_are_refused(bad):
    d = hand_made_trace().to_dict()
    d["steps"][0]["candidates"] = bad
    with pytest.raises(ValueError):
        RunTrace.from_dict(d)


def test_save_and_load(tmp_path, fixture_traces):
    trace = RunTrace.load(fixture_traces[0])
    out = tmp_path / "copy.json"
    trace.save(out)
    assert RunTrace.load(out) == trace


def hand_made_trace() -> RunTrace:
    q0 = QueryRecord.of_attempts("g1", None, [NgramAttempt(3, [1, 2, 3], False), NgramAttempt(2, [2, 3], True)],
                                 2, 5, [7, 8])
    q1 = QueryRecord.of_attempts("g2", 1, [NgramAttempt(1, [9], False)], None, None, [])
    tree = [
        TreeNode(0, 3, -1, 0, "root"),
        TreeNode(1, 7, 0, 1, "g1", query=0),
        TreeNode(2, 9, 0, 1, "g2", rank=1, query=1, accept_prob=0.25),
        TreeNode(3, 8, 1, 2, "g1", query=0, pruned=True, prune_reason="capacity"),
    ]
    step = StepRecord(
        index=0, method="logitspec", context_len=6, root=3, tokens=[3, 7], bonus=11,
        candidates=[Candidate(1, 9, -0.5, 0.1), Candidate(2, 10, -1.25, 1e-9)], queries=[q0, q1],
        tree=tree, accepted_path=[0, 1], draft_seconds=0.001, forward_seconds=0.0625,
        bookkeeping_seconds=1 / 3, sizing=TreeSizing("cost", 3, 1.5, 0.07, 0.01, 0.08, "next node costs more"),
    )
    last = StepRecord(index=1, method="logitspec", context_len=8, root=11, tokens=[11], bonus=None,
                      tree=[TreeNode(0, 11, -1, 0, "root")], accepted_path=[0], forward=False)
    return RunTrace(
        method="logitspec", model="tiny", prompt_text="naïve “quotes” ✓\n", prompt_tokens=[1, 2, 3, 4, 2, 3],
        settings={"k": 2, "ngram_sizes": [1, 2, 3], "rule": {"top_keep": 4}}, steps=[step, last],
        prefill_seconds=0.125, eos_token_ids=[2], token_texts={"3": " the", "7": "\u00e9", "11": "\n"},
    )


def test_hand_made_trace_round_trips_exactly():
    trace = hand_made_trace()
    text = trace.to_json(indent=2)
    again = RunTrace.from_json(text)
    assert again == trace
    assert again.to_json(indent=2) == text
    assert again.steps[0].queries[0].matched and not again.steps[0].queries[1].matched


def test_trace_properties():
    trace = hand_made_trace()
    assert trace.tokens == [3, 7, 11]
    assert trace.forward_steps == 1  # the final commit needed no forward pass
    assert trace.mean_accepted_tokens == 3.0
    assert trace.text_of(7) == "é" and trace.text_of(12345) == "<12345>"
    step = trace.steps[0]
    assert [n.id for n in step.verified_nodes] == [0, 1, 2]
    assert step.accepted == 2
    assert step.seconds == pytest.approx(0.001 + 0.0625 + 1 / 3)
    assert trace.seconds == pytest.approx(0.125 + step.seconds)
    assert RunTrace("vanilla", "m", "p", [1], {}).mean_accepted_tokens == 0.0


def test_unknown_top_level_keys_are_ignored():
    d = hand_made_trace().to_dict()
    d["added_later"] = {"x": 1}
    assert RunTrace.from_dict(d) == hand_made_trace()


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
small = st.integers(-1, 10**6)


@st.composite
def lookups(draw) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A query's n-gram and the lengths tried, longest (the n-gram's own) first."""
    size = draw(st.integers(0, 3))
    ngram = tuple(draw(st.lists(small, min_size=size, max_size=size)))
    shorter = sorted(draw(st.sets(st.integers(1, max(size - 1, 1)))), reverse=True) if size > 1 else []
    return ngram, (size, *shorter) if size else ()


@st.composite
def steps(draw, index: int):
    n_nodes = draw(st.integers(1, 5))
    tree = [TreeNode(i, draw(small), i - 1, i, "root" if i == 0 else "g2",
                     rank=draw(st.none() | small), query=draw(st.none() | small),
                     pruned=draw(st.booleans()), prune_reason=draw(st.none() | st.sampled_from(["rank", "cost"])),
                     accept_prob=draw(st.none() | finite)) for i in range(n_nodes)]
    queries = [QueryRecord(draw(st.sampled_from(["g1", "g2", "pld"])), draw(st.none() | small), *draw(lookups()),
                           draw(st.none() | small), draw(st.none() | small), draw(st.lists(small, max_size=4)))
               for _ in range(draw(st.integers(0, 3)))]
    sizing = draw(st.none() | st.builds(TreeSizing, st.sampled_from(["static", "cost"]), small,
                                        st.none() | finite, st.none() | finite, st.none() | finite,
                                        st.none() | finite, st.text(max_size=20)))
    return StepRecord(
        index=index, method="logitspec", context_len=draw(small), root=draw(small),
        tokens=draw(st.lists(small, max_size=4)), bonus=draw(st.none() | small),
        candidates=[Candidate(draw(small), draw(small), draw(finite), draw(finite))], queries=queries,
        tree=tree, accepted_path=draw(st.lists(small, max_size=4)), draft_seconds=draw(finite),
        forward_seconds=draw(finite), bookkeeping_seconds=draw(finite), forward=draw(st.booleans()),
        sizing=sizing, root_prob=draw(st.none() | finite),
    )


@st.composite
def traces(draw):
    n = draw(st.integers(0, 3))
    return RunTrace(draw(st.sampled_from(["vanilla", "pld", "logitspec"])), draw(st.text(max_size=10)),
                    draw(st.text(max_size=30)), draw(st.lists(small, max_size=8)),
                    {"k": draw(small), "f": draw(finite)}, [draw(steps(i)) for i in range(n)], draw(finite),
                    draw(st.lists(small, max_size=2)),
                    draw(st.dictionaries(st.integers(0, 999).map(str), st.text(max_size=5), max_size=4)))


@settings(max_examples=100, deadline=None)
@given(trace=traces())
def test_random_traces_round_trip(trace):
    text = trace.to_json()
    again = RunTrace.from_json(text)
    assert again == trace
    assert again.to_json() == text


# ----- step semantics on the real fixtures ------------------------------------------------------

@pytest.fixture(scope="module")
def real_traces(fixture_traces) -> list[RunTrace]:
    return [RunTrace.load(p) for p in fixture_traces]


def test_steps_commit_root_path_and_bonus(real_traces):
    for trace in real_traces:
        produced: list[int] = []
        for i, step in enumerate(trace.steps):
            assert step.index == i
            assert step.context_len == len(trace.prompt_tokens) + len(produced)
            assert step.tokens[0] == step.root
            assert step.accepted_path[0] == 0 and step.tree[0].token == step.root
            assert [step.tree[j].token for j in step.accepted_path] == step.tokens
            assert all(not step.tree[j].pruned for j in step.accepted_path)
            # The accepted path is a chain of parents and children.
            for a, b in zip(step.accepted_path, step.accepted_path[1:]):
                assert step.tree[b].parent == a
            if i + 1 < len(trace.steps):
                assert step.bonus == trace.steps[i + 1].root
            else:
                assert step.bonus is None
            produced += step.tokens
        assert produced == trace.tokens
        assert len(produced) <= trace.settings["max_new_tokens"]
        assert all(s.forward for s in trace.steps[:-1])


def test_trees_are_tries_within_capacity(real_traces):
    for trace in real_traces:
        for step in trace.steps:
            verified = step.verified_nodes
            assert len(verified) <= trace.settings["capacity"]
            assert [n.id for n in step.tree] == list(range(len(step.tree)))
            assert [n.id for n in verified] == list(range(len(verified)))  # verified first
            seen = set()
            for n in step.tree[1:]:
                assert n.parent < n.id and n.depth == step.tree[n.parent].depth + 1
                assert (n.parent, n.token) not in seen
                seen.add((n.parent, n.token))
                if n.pruned:
                    assert n.prune_reason in ("rank", "capacity", "cost")
                else:
                    assert not step.tree[n.parent].pruned
            if step.sizing is not None:
                assert step.sizing.size == len(verified)


def test_candidates_and_queries_line_up(real_traces):
    for trace in real_traces:
        k = trace.settings["k"]
        rule = PruningRule(**trace.settings["rule"])
        for step in [s for s in trace.steps if s.forward]:
            cands = step.candidates
            assert [c.rank for c in cands] == list(range(1, k + 1))
            assert step.root not in {c.token for c in cands}
            assert all(a.logit >= b.logit for a, b in zip(cands, cands[1:]))
            assert all(0.0 <= c.prob <= 1.0 for c in cands)
            assert step.queries[0].kind == "g1" and step.queries[0].attempts[0].ngram[-1] == step.root
            for c, q in zip(cands, step.queries[1:], strict=True):
                assert q.kind == "g2" and q.candidate_rank == c.rank
                assert q.attempts[0].ngram[-2:] == [step.root, c.token]
            for n in step.tree[1:]:
                q = step.queries[n.query]
                if n.origin == "g2":
                    assert n.rank == q.candidate_rank
                    if not n.pruned:
                        assert n.depth <= max(rule.keep(n.rank), trace.settings["continuation"])
                else:
                    assert n.origin == "g1" and n.query == 0


def test_query_records_point_into_the_context(real_traces):
    matched = 0
    for trace in real_traces:
        context = list(trace.prompt_tokens)
        sizes = sorted(trace.settings["ngram_sizes"], reverse=True)
        for step in trace.steps:
            assert len(context) == step.context_len
            for q in step.queries:
                tried = [a.n for a in q.attempts]
                assert tried == sorted(tried, reverse=True) and set(tried) <= set(sizes)
                assert [a.matched for a in q.attempts] == [False] * (len(tried) - 1) + [q.matched] * bool(tried)
                if not q.matched:
                    assert q.match_pos is None and q.continuation == []
                    continue
                matched += 1
                n, ngram = q.matched_n, q.attempts[-1].ngram
                assert context[q.match_pos : q.match_pos + n] == ngram
                assert q.continuation and q.continuation == context[q.match_pos + n :][: len(q.continuation)]
                # Most recent occurrence wins: no later one with a follower in the context.
                later = [p for p in range(q.match_pos + 1, len(context) - n) if context[p : p + n] == ngram]
                assert later == []
            context += step.tokens
    assert matched > 100  # the fixtures hold plenty of hits

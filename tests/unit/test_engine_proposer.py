"""LogitSpec's vLLM proposer without vLLM: the row arithmetic, the proposed path, the import
boundary and the one-line refusal (tests/engines runs it inside vLLM)."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from logitspec.core.retrieval import NgramPool
from logitspec.core.settings import DecodeSettings
from logitspec.core.trace import Candidate
from logitspec.engines.vllm_proposer import (NO_VLLM, RULE_ENV, ChainRule, LogitSpecProposer, best_chain, last_rows,
                                             rule_of, spec_budget)


def test_last_rows_count_each_earlier_requests_drafts_plus_one():
    # request 0: 3 drafts, 2 accepted + bonus; 1: no drafts; 2: a prefill chunk; 3: 2 drafts, none accepted
    assert last_rows([3, 0, 0, 2], [3, 1, 0, 1]) == [2, 4, None, 6]
    assert last_rows([5] * 4, [6, 1, 3, 6]) == [5, 6, 14, 23]


def test_last_rows_refuses_more_tokens_than_rows():
    with pytest.raises(ValueError, match="at most drafts"):
        last_rows([1], [3])


def path(tokens, root, cands, limit=5, rule=ChainRule()):
    """The proposer's chain over the context `tokens` then `root`."""
    s = DecodeSettings()
    return best_chain(root, cands, NgramPool(s.ngram_sizes, tokens), s, limit, rule)


def test_g1_continuation_comes_first_up_to_k():
    context = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2]  # "2" followed by 3, 4, ... earlier
    cands = [Candidate(1, 9, 0.0, 0.1)]
    assert path(context, 3, cands) == ([4, 5, 6, 7, 8], "g1")
    assert path(context, 3, cands, limit=3) == ([4, 5, 6], "g1")


def test_backed_candidate_when_g1_finds_nothing():
    # the root 30 was never seen, so g1 finds nothing; candidate 9 was, after 8, not after 30
    context = [5, 8, 9, 10, 11, 12, 6, 8]
    cands = [Candidate(1, 40, 0.0, 0.2), Candidate(2, 9, 0.0, 0.1)]
    # the rank-2 candidate 9 was seen (followed by 10, 11, ...), after 8; 40 never was
    assert path(context, 30, cands, rule=ChainRule(g2=0)) == ([9, 10, 11, 12, 6], "g2")
    # its match agrees on nothing up to the root 30: not enough at 1, and a bare candidate is never proposed
    assert path(context, 30, cands) == ([], None)


def test_a_branch_needs_its_agreement_and_its_rank():
    # the root 4 came after 2, 3 and then 5, 6, 7: g1 reaches 3 tokens back (2, 3, 4)
    context = [1, 2, 3, 4, 5, 6, 7, 8, 2, 3]
    cands = [Candidate(1, 5, 0.0, 0.3), Candidate(2, 9, 0.0, 0.1)]
    assert path(context, 4, cands) == ([5, 6, 7, 8, 2], "g1")
    assert path(context, 4, cands, rule=ChainRule(g1=4)) == ([5, 6, 7, 8, 2], "g2")  # candidate 5's branch, reach 3
    assert path(context, 4, cands, rule=ChainRule(g1=4, g2=4)) == ([], None)
    # the same text, the guess at rank 2: a rule that takes rank 1 alone proposes nothing
    swapped = [Candidate(1, 9, 0.0, 0.3), Candidate(2, 5, 0.0, 0.1)]
    assert path(context, 4, swapped, rule=ChainRule(g1=4, rank=1)) == ([], None)
    assert path(context, 4, swapped, rule=ChainRule(g1=4, rank=2)) == ([5, 6, 7, 8, 2], "g2")


def test_importing_logitspec_never_imports_vllm():
    code = "import sys, logitspec, logitspec.engines, logitspec.engines.vllm_proposer; print('vllm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_proposer_without_vllm_says_so_in_one_line():
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
        pytest.skip("vLLM is installed here")
    except ImportError:
        pass
    with pytest.raises(RuntimeError) as e:
        LogitSpecProposer(None)
    assert str(e.value) == NO_VLLM and "\n" not in str(e.value)


def test_export_model_refuses_a_folder_with_files(tmp_path):
    (tmp_path / "x").write_text("taken")
    out = subprocess.run([sys.executable, "-m", "logitspec", "export-model", str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: cannot export to {str(tmp_path)!r}: the folder is not empty"


def test_a_candidate_whose_match_reaches_further_back_beats_g1():
    # g1's trigram (2, 3, root 4) last occurred after 9, which the text does not share (reach 3);
    # candidate 5's (3, 4, 5) occurred after 1, 2 as the text now is: it agrees 4 tokens up to the root
    context = [1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 10, 11, 12, 1, 2, 3]
    assert path(context, 4, [Candidate(1, 5, 0.0, 0.3)]) == ([5, 6, 7, 8, 9], "g2")
    # the same candidate with only g1's reach: the tree's order keeps g1 first
    assert path([9] + context[1:], 4, [Candidate(1, 5, 0.0, 0.3)]) == ([10, 11, 12, 1, 2], "g1")


def test_the_rule_is_read_from_its_variable():
    assert rule_of(None) == rule_of(" ") == rule_of("default") == ChainRule()
    assert rule_of("precise") == ChainRule(g1=8, g2=4, rank=1)
    assert rule_of("g1=3") == ChainRule(g1=3) and rule_of("g1=8, g2=4, rank=2") == ChainRule(8, 4, 2)
    assert rule_of(ChainRule(8, 4, 2).text()) == ChainRule(8, 4, 2)
    for bad in ("0", "g1=0", "g1=two", "g3=2", "g1=2,g1=3", "sure", "g1=2.5"):
        with pytest.raises(ValueError, match=RULE_ENV) as e:
            rule_of(bad)
        assert "\n" not in str(e.value)


def test_a_bench_method_names_the_proposers_rule():
    from logitspec.bench.engines import PROPOSER, check_methods, rule_text, spec_config

    assert spec_config("logitspec@precise", 5) == spec_config("logitspec", 5) == {
        "method": "custom_class", "model": PROPOSER, "num_speculative_tokens": 5}
    assert rule_of(rule_text("logitspec@g1=8/g2=4")) == ChainRule(g1=8, g2=4)
    check_methods(["none", "ngram", "logitspec@precise", "logitspec@g1=3/rank=2"])
    for bad, said in (("eagle", "unknown method 'eagle'"), ("ngram@precise", "unknown method"),
                      ("ngram@3-1", "unknown method"), ("ngram@0-2", "unknown method"), ("logitspec@g1=0", RULE_ENV)):
        with pytest.raises(SystemExit, match=said):
            check_methods([bad])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_top_k_probabilities_are_the_softmaxs_without_a_softmax_over_the_vocabulary(dtype):
    """top_of's exp(logit - logsumexp), a few rows at a time, against the full softmax it replaced."""
    from logitspec.engines.vllm_proposer import LSE_ROWS, top_of

    g = torch.Generator().manual_seed(0)
    logits = (torch.randn(LSE_ROWS * 2 + 5, 3000, generator=g) * 4).to(dtype)
    ids, vals, probs = top_of(logits, 9)
    want = torch.softmax(logits.float(), dim=-1)
    top = torch.topk(logits.float(), 9, dim=-1)
    assert ids == top.indices.tolist() and vals == top.values.tolist()
    assert torch.allclose(torch.tensor(probs), want.gather(-1, top.indices), rtol=1e-5, atol=1e-7)


def test_the_draft_budget_is_the_schedulers_at_most_k():
    """vLLM's scheduler output says how many drafts the next step schedules; a runner without it keeps K."""
    from types import SimpleNamespace

    assert spec_budget(SimpleNamespace(num_spec_tokens_to_schedule=3), 5) == 3
    assert spec_budget(SimpleNamespace(num_spec_tokens_to_schedule=9), 5) == 5
    assert spec_budget(SimpleNamespace(num_spec_tokens_to_schedule=0), 5) == 0
    assert spec_budget(None, 5) == spec_budget([1, 2], 5) == 5


def test_the_ngram_rivals_are_vllms_ngram_at_other_lookup_sizes():
    from logitspec.bench.engines import ENGINE_METHODS, check_methods, spec_config

    check_methods(list(ENGINE_METHODS))
    assert {"ngram@1-3", "ngram@2-5"} <= set(ENGINE_METHODS)
    assert spec_config("ngram@1-3", 5) == {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 1,
                                           "prompt_lookup_max": 3}
    assert spec_config("ngram", 5) == {"method": "ngram", "num_speculative_tokens": 5}  # vLLM's default, 5-5


def test_the_report_leads_with_tokens_per_step_over_all_steps():
    """The headline column counts every target pass; vLLM's accepted length (drafted steps) stands beside it."""
    from logitspec.bench.engines import markdown, summarise

    def result(method, tokens, drafts, accepted):
        spec = {"vllm:spec_decode_num_drafts": drafts, "vllm:spec_decode_num_draft_tokens": 5 * drafts,
                "vllm:spec_decode_num_accepted_tokens": accepted}
        return {"method": method, "phases": [{"batch": 1, "seconds": 2.0, "tokens": tokens, "spec": spec,
                                              "logitspec": None}]}

    toks = [list(range(100))]
    rows = summarise([result("none", toks, 0, 0), result("ngram@1-3", toks, 10, 20)])
    assert list(rows[1])[:3] == ["method", "batch", "tokens_per_step"]
    assert rows[1]["tokens_per_step"] == 1.25 and rows[1]["mean_accepted_length"] == 3.0  # 100 / 80; 1 + 20 / 10
    report = {"vllm": "0.32.0", "cpu": "x", "cores": 2, "load_before": [0], "load_after": [0], "model_name": "m",
              "max_new_tokens": 100, "k": 5, "questions": 1, "rows": rows, "resumed": [],
              "methods": [{"method": "none"}, {"method": "ngram@1-3"}]}
    table = [line for line in markdown(report).splitlines() if line.startswith("|")]
    assert table[0].startswith("| method | batch | tokens/step (all steps) | tok/s | mean accepted length (drafted steps only)")
    assert table[3].startswith("| ngram@1-3 | 1 | 1.25 | 50.0 | 3.0 |")

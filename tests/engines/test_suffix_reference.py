"""The SuffixDecoding lane drafts what arctic-inference's SuffixDecodingCache (the authors' C++
suffix trees, in the engine venv) drafts, node for node, called as each side's loop calls it.

Requests from Spec-Bench texts in the bundled tokenizer (the subset's three questions of each of six
categories), one after another, so each request's drafts may come from every earlier response: a
request's prompt is its question; its response (what the "model" answers) is another question's
text with a window of its own prompt and a piece of the previous response copied in, as answers
quote. The lane runs as the decoding loop runs it (logitspec/core/loop.py): `draft(root, logits,
pool, len(pool))`, the draft walked against the response (the tokens a greedy model would accept),
the root and the accepted tokens committed to the pool, `observe` told them and the bonus, the
bonus the next root; one drafter a request, on one model's shared output tree. arctic-inference
runs as vLLM's `suffix` proposer runs it (vllm/v1/spec_decode/suffix_decoding.py): the request
started with its prompt, the sampled tokens (accepted drafts and bonus) added before speculating on
the text's last `max_tree_depth` tokens, the request stopped when it ends."""
from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ("summarization", "rag", "coding", "math_reasoning", "translation", "writing")
MIN_CONTEXTS = 200


def _requests(tokenizer) -> list[tuple[str, list[int], list[int]]]:
    """(category, prompt, response) per question, each response quoting its prompt and the last response."""
    from logitspec.bench.questions import load_questions

    qs = load_questions(ROOT / "data" / "spec_bench_subset.jsonl", list(CATEGORIES))
    texts = [tokenizer.encode(q["turns"][0], add_special_tokens=False) for q in qs]
    rng, out, last = random.Random(0), [], []
    for i, q in enumerate(qs):
        prompt, other = texts[i], texts[(i + 1) % len(texts)]
        at = rng.randrange(max(1, len(prompt) - 40))
        out.append((q["category"], prompt, other[:30] + prompt[at:at + 40] + last[10:40] + other[30:60]))
        last = out[-1][2]
    return out


def _accepted(nodes, truth: list[int]) -> int:
    """How many drafted tokens a greedy walk accepts when the model's tokens are `truth`."""
    depth, at = 0, 0
    while depth < len(truth):
        at = next((n.id for n in nodes if n.parent == at and n.token == truth[depth]), None)
        if at is None:
            break
        depth += 1
    return depth


def _race(requests, s, stand_in) -> tuple[int, list, dict]:
    """Every request through both; the contexts compared, the drafts that differ, drafts per tree."""
    from arctic_inference.suffix_decoding import SuffixDecodingCache

    from logitspec.core.retrieval import NgramPool
    from logitspec.drafters.suffix import SuffixDrafter

    cache = SuffixDecodingCache(max_tree_depth=s.suffix_depth, max_cached_requests=s.suffix_cache_requests)
    contexts, differ, origins = 0, [], {}
    for r, (cat, prompt, response) in enumerate(requests):
        cache.start_request(r, np.asarray(prompt, dtype=np.int32))
        lane, pool = SuffixDrafter.build(s, stand_in), NgramPool(tokens=prompt)
        sampled, done = [response[0]], 0  # the prefill's token: the first root
        while done < len(response) - 1:
            cache.add_active_response(r, sampled)
            text = np.asarray(pool.tokens + [response[done]], dtype=np.int32)
            theirs = cache.speculate(r, text[-s.suffix_depth:], max_spec_tokens=s.suffix_depth,
                                     max_spec_factor=s.suffix_spec_factor, min_token_prob=s.suffix_min_prob,
                                     use_tree_spec=s.suffix_tree)
            nodes = lane.draft(response[done], None, pool, len(pool)).nodes
            ours = [(n.token, n.parent - 1, n.accept_prob) for n in nodes[1:]]
            if ours != list(zip(theirs.token_ids, theirs.parents, theirs.probs)):
                differ.append((cat, r, len(text), ours, list(zip(theirs.token_ids, theirs.parents, theirs.probs))))
            for n in nodes[1:2]:
                origins[n.origin] = origins.get(n.origin, 0) + 1
            n = _accepted(nodes, response[done + 1:])
            tokens, bonus = response[done:done + 1 + n], response[done + 1 + n:done + 2 + n]
            pool.extend(tokens)
            lane.observe(tokens + bonus, len(nodes))
            sampled, done, contexts = tokens[1:] + bonus, done + 1 + n, contexts + 1
        cache.stop_request(r)
        del lane  # the run is over: its output is a finished one now
    return contexts, differ, origins


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["tree", "chain", "tree, 3 requests kept"])
def test_the_suffix_lane_drafts_what_arctic_inference_drafts(model_dir, mode):
    from transformers import AutoTokenizer

    from logitspec.core.settings import DecodeSettings

    s = DecodeSettings()
    s = {"tree": replace(s, suffix_tree=True), "chain": replace(s, suffix_tree=False),
         "tree, 3 requests kept": replace(s, suffix_tree=True, suffix_cache_requests=3)}[mode]
    requests = _requests(AutoTokenizer.from_pretrained(model_dir))
    t0 = time.perf_counter()
    contexts, differ, origins = _race(requests, s, SimpleNamespace())  # a model of its own: a fresh output tree
    assert contexts >= MIN_CONTEXTS and {c for c, _, _ in requests} == set(CATEGORIES), contexts
    assert not differ, f"{len(differ)} of {contexts} drafts differ:\n" + "\n".join(map(str, differ[:5]))
    assert min(origins.get("prompt-tree", 0), origins.get("output-tree", 0)) >= 20, origins  # both trees drafted
    print(f"{mode}: {contexts} contexts, {origins}, {time.perf_counter() - t0:.1f} s")


def test_the_lane_keeps_vllms_suffix_defaults_and_bounds_past_outputs_as_vllm_does():
    from vllm.config.speculative import SpeculativeConfig

    from logitspec.core.settings import DecodeSettings

    d = DecodeSettings()
    vllm = {f: SpeculativeConfig.__dataclass_fields__[f].default for f in (
        "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob")}
    assert (d.suffix_depth, d.suffix_cache_requests, d.suffix_spec_factor, d.suffix_min_prob) == tuple(vllm.values())
    assert d.suffix_cache_tokens is None  # vLLM bounds the requests kept, never their tokens

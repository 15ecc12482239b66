"""The SuffixDecoding lane drafts what arctic-inference's SuffixDecodingCache (the authors' C++
suffix trees, in the engine venv) drafts, node for node, through the lane's real call path.

Histories from Spec-Bench texts in the bundled tokenizer (the subset's three questions of each of six
categories): each question's turn is a request's prompt; the three questions before it are past
responses in the cache; its response
is another question's text with a window of its own prompt copied in (as summaries and answers
quote), fed 1 to 4 tokens a step (the root and the drafts accepted before it), each step's last
token the root just sampled. At every step
the lane's `SuffixDrafter.draft` and arctic-inference's `speculate` (tree mode, DecodeSettings'
suffix_* values) see the same tokens, as vLLM's `suffix` method feeds them (the sampled token
added to the request before speculating)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ("summarization", "rag", "coding", "math_reasoning", "translation", "writing")
MIN_CONTEXTS = 200


def _paths(tokens, parents) -> set[tuple[int, ...]]:
    """Each node as its tokens from under the root (parents index the same list; -1: the root)."""
    out = set()
    for i in range(len(tokens)):
        path, j = [], i
        while j >= 0:
            path.append(int(tokens[j]))
            j = parents[j]
        out.add(tuple(reversed(path)))
    return out


def _rounded(probs) -> list[float]:
    return sorted(round(float(p), 5) for p in probs)


def _ours(draft) -> tuple[set[tuple[int, ...]], list[float]]:
    nodes = {n.id: n for n in draft.nodes}
    drafted = [n for n in draft.nodes if n.depth > 0]
    paths = set()
    for n in drafted:
        path, u = [], n
        while u.depth > 0:
            path.append(u.token)
            u = nodes[u.parent]
        paths.add(tuple(reversed(path)))
    return paths, [n.accept_prob or 0.0 for n in drafted]


def _histories(tokenizer):
    from logitspec.bench.questions import load_questions

    qs = load_questions(ROOT / "data" / "spec_bench_subset.jsonl", list(CATEGORIES))
    texts = [tokenizer.encode(q["turns"][0], add_special_tokens=False) for q in qs]
    rng = random.Random(0)
    for i, q in enumerate(qs):
        prompt, other = texts[i], texts[(i + 1) % len(texts)]
        at = rng.randrange(max(1, len(prompt) - 40))
        yield q["category"], [texts[i - j] for j in (3, 2, 1)], prompt, other[:30] + prompt[at:at + 40] + other[30:60]


@pytest.mark.slow
def test_the_suffix_lane_drafts_what_arctic_inference_drafts(model_dir):
    from arctic_inference.suffix_decoding import SuffixDecodingCache
    from transformers import AutoTokenizer

    from logitspec.core.retrieval import NgramPool
    from logitspec.core.settings import DecodeSettings
    from logitspec.drafters.suffix import SuffixDrafter

    s = DecodeSettings()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rng = random.Random(1)
    contexts, differ, cats, ties = 0, [], set(), 0
    for cat, earlier, prompt, response in _histories(tokenizer):
        cache = SuffixDecodingCache(max_tree_depth=s.suffix_depth)
        lane = SuffixDrafter(s)
        for i, e in enumerate(earlier):
            cache.start_request(f"e{i}", [0])
            cache.add_active_response(f"e{i}", e)
            cache.stop_request(f"e{i}")
            lane.outputs.start().append(e)
        cache.start_request("r", prompt)
        done = 0
        while done < len(response):
            # the last token is the root just sampled; the first step's root follows the prompt (the prefill's)
            step = response[done:done + (rng.randint(1, 4) if done else 1)]
            cache.add_active_response("r", step)
            context = prompt + response[:done + len(step)]
            theirs = cache.speculate("r", context[-s.suffix_depth:], max_spec_tokens=lane.most,
                                     max_spec_factor=s.suffix_spec_factor, min_token_prob=s.suffix_min_prob,
                                     use_tree_spec=True)
            ours, probs = _ours(lane.draft(context[-1], None, NgramPool(tokens=context[:-1]), len(context) - 1))
            # the same likelihoods node for node: the same score, size and each node's probability
            if _rounded(probs) != _rounded(theirs.probs) or abs(sum(probs) - theirs.score) > 1e-5:
                differ.append((cat, len(context), sorted(_paths(theirs.token_ids, list(theirs.parents))), sorted(ours),
                               _rounded(theirs.probs), _rounded(probs)))
            elif ours != _paths(theirs.token_ids, list(theirs.parents)):
                ties += 1  # equally likely nodes taken in another order (arctic's heap and sibling lists)
            contexts, done = contexts + 1, done + len(step)
            cats.add(cat)
        cache.stop_request("r")
    assert contexts >= MIN_CONTEXTS and len(cats) == len(CATEGORIES), (contexts, cats)
    assert not differ, f"{len(differ)} of {contexts} drafts differ:\n" + "\n".join(map(str, differ))
    # where equally likely nodes tie, arctic's choice follows its C++ heap's and sibling lists' order
    assert ties <= contexts // 50, f"{ties} of {contexts} drafts break ties apart"

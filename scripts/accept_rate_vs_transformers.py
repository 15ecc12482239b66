"""Tokens per forward pass of prompt lookup and LogitSpec against transformers' own prompt
lookup (generate with prompt_lookup_num_tokens), greedy or sampled at the same temperature.

transformers' prompt lookup at do_sample=True samples the target at each drafted position
and accepts while the draft equals the draw, the same acceptance rule as ours; its random
stream differs, so its tokens differ, but its accept rate is an outside reference for ours.
Tokens per pass do not depend on the machine's load (the cost tree's size does a little, as
it follows measured costs). Example:

    .venv/bin/python scripts/accept_rate_vs_transformers.py --temperatures 0,0.7,1.0 \
        --categories summarization,coding,math_reasoning --max-new-tokens 64
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))



def our_lanes() -> list[str]:
    """The lanes measured: every race lane of logitspec/analysis/lanes.py that drafts, prompt lookup's included."""
    from logitspec.analysis import lanes

    return [n for n in lanes.race_order() if lanes.run_spec(n) != ("vanilla", None)]


@dataclass
class Passes:
    """New tokens and the forward passes after prefill that produced them."""

    tokens: int = 0
    passes: int = 0

    def add(self, tokens: int, passes: int) -> None:
        self.tokens += tokens
        self.passes += passes

    @property
    def per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else 0.0


def transformers_pld(lm, ids: list[int], settings, lookup: int) -> tuple[int, int]:
    """(new tokens, forward passes after prefill) of generate with prompt lookup."""
    import torch

    calls = [0]
    hook = lm.model.register_forward_pre_hook(lambda *a: calls.__setitem__(0, calls[0] + 1))
    x = torch.tensor([ids], device=lm.model.device)
    sampled = settings.temperature > 0
    kw = dict(do_sample=True, temperature=settings.temperature, top_p=settings.top_p) if sampled else dict(do_sample=False)
    try:
        with torch.inference_mode():
            torch.manual_seed(settings.seed)
            out = lm.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=settings.max_new_tokens,
                                    prompt_lookup_num_tokens=lookup, eos_token_id=lm.eos_ids,
                                    pad_token_id=lm.eos_ids[0], **kw)
    finally:
        hook.remove()
    return out.shape[1] - x.shape[1], calls[0] - 1  # the first call is the prefill


def main(argv: list[str] | None = None) -> int:
    from logitspec.bench.questions import load_questions
    from logitspec.analysis.lanes import lane_run
    from logitspec.models import load_model
    from logitspec.runner import run_trace
    from logitspec.core.settings import DecodeSettings
    from logitspec.runtime.threads import configure_threads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=Path, default=ROOT / "data" / "spec_bench_subset.jsonl")
    p.add_argument("--categories", type=lambda s: s.split(","), default=None)
    p.add_argument("--limit-per-category", type=int, default=1)
    p.add_argument("--temperatures", type=lambda s: [float(t) for t in s.split(",")], default=[0.0, 0.7, 1.0])
    p.add_argument("--top-p", type=float, default=DecodeSettings().top_p)
    p.add_argument("--seed", type=int, default=DecodeSettings().seed)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)

    configure_threads()
    lm = load_model()
    questions = load_questions(a.questions, a.categories, a.limit_per_category)
    base = DecodeSettings(max_new_tokens=a.max_new_tokens, top_p=a.top_p, seed=a.seed)
    table: dict[str, dict[str, float]] = {}
    for t in a.temperatures:
        s = replace(base, temperature=t)
        ours = our_lanes()
        tally = {name: Passes() for name in [*ours, "transformers-pld"]}
        for q in questions:
            ids = lm.encode_chat(q["turns"][0])
            for name in ours:
                tr = run_trace(lm, q["turns"][0], *lane_run(name, s), prompt_ids=ids)
                tally[name].add(len(tr.tokens), tr.forward_steps)
            tally["transformers-pld"].add(*transformers_pld(lm, ids, s, s.pld_tokens))
        table[f"{t:g}"] = {name: round(v.per_pass, 3) for name, v in tally.items()}
        print(f"T={t:g}: " + ", ".join(f"{k} {v:.2f}" for k, v in table[f"{t:g}"].items()), flush=True)
    report = {"questions": [q["question_id"] for q in questions], "max_new_tokens": a.max_new_tokens,
              "top_p": a.top_p, "seed": a.seed, "tokens_per_pass": table}
    if a.out:
        a.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

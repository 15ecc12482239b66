"""vLLM side by side: no speculation, its `ngram` and `suffix` drafters, and LogitSpec's
proposer (logitspec/engines/vllm_proposer.py), greedy, at batch 1 and batch 8, in one run.

    python -m logitspec.bench.engines --out artifacts/bench-vllm

Each method runs in its own process (one vLLM engine each) on the same exported model; the
report leads with tokens per step over all steps (tokens produced per target pass, the steps
that drafted nothing counted), then tokens per second, vLLM's mean accepted length (drafted
steps only, beside the first), LogitSpec's g1/g2 share, whether every output equals vLLM's
without speculation, the CPU and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .questions import load_questions

PROPOSER = "logitspec.engines.vllm_proposer.LogitSpecProposer"
# suffix-nocache: SuffixDecoding without its tree of past responses. The bench decodes the same
# questions at each batch size, and `suffix` drafts the later ones from its earlier answers.
# ngram@MIN-MAX: vLLM's ngram with prompt_lookup_min/max (plain `ngram` is its default, 5-5).
# The engine bench's speculative configs of vLLM (not the lane table's decoders: logitspec/core/settings.py).
ENGINE_METHODS = ("none", "ngram", "ngram@1-3", "ngram@2-5", "suffix", "suffix-nocache", "logitspec",
                  "logitspec@precise")
BASES = ("none", "ngram", "suffix", "suffix-nocache", "logitspec")
COUNTERS = ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
            "vllm:spec_decode_num_accepted_tokens")


def rule_text(method: str) -> str:
    """The proposer's rule a method names after "@" ("logitspec@precise", "logitspec@g1=8/g2=4":
    "/" for the rule's commas, which part --methods)."""
    return method.partition("@")[2].replace("/", ",")


def ngram_range(method: str) -> tuple[int, int] | None:
    """(prompt_lookup_min, max) of "ngram@MIN-MAX", None for any other method or a bad range."""
    base, _, spec = method.partition("@")
    lo, _, hi = spec.partition("-")
    if base != "ngram" or not (lo.isdigit() and hi.isdigit()) or not 1 <= int(lo) <= int(hi):
        return None
    return int(lo), int(hi)


def check_methods(methods: list[str]) -> None:
    """Refuse an unknown method or proposer rule in one line, before any engine starts."""
    from ..engines.vllm_proposer import rule_of

    for m in methods:
        known = m in BASES or m.startswith("logitspec@") or ngram_range(m)
        if not known:
            raise SystemExit(f"error: unknown method {m!r}: choose from {', '.join(ENGINE_METHODS)} "
                             "(logitspec@RULE for another proposer rule, ngram@MIN-MAX for other n-gram sizes)")
        if m.startswith("logitspec@"):
            try:
                rule_of(rule_text(m))
            except ValueError as e:
                raise SystemExit(f"error: {m}: {e}") from None


def spec_config(method: str, k: int) -> dict | None:
    """vLLM's speculative_config for a method, each drafter with its own defaults and K
    ("logitspec@precise": LogitSpec's proposer under another ChainRule, set by run_method)."""
    if lookup := ngram_range(method):
        return {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_min": lookup[0],
                "prompt_lookup_max": lookup[1]}
    method = method.split("@")[0]
    if method == "none":
        return None
    if method == "logitspec":
        return {"method": "custom_class", "model": PROPOSER, "num_speculative_tokens": k}
    if method == "suffix-nocache":
        return {"method": "suffix", "num_speculative_tokens": k, "suffix_decoding_max_cached_requests": 0}
    return {"method": method, "num_speculative_tokens": k}


def counters(llm) -> dict[str, float]:
    return {m.name: m.value for m in llm.get_metrics() if m.name in COUNTERS}


def proposer_counts() -> dict | None:
    from dataclasses import asdict

    from ..engines.vllm_proposer import PROPOSERS

    return asdict(PROPOSERS[-1].counts) if PROPOSERS else None


def proposer_rule() -> str | None:
    from ..engines.vllm_proposer import PROPOSERS

    return PROPOSERS[-1].rule.text() if PROPOSERS else None


def phase(llm, messages: list, batch: int, max_tokens: int) -> dict:
    """Decode every message, `batch` at a time, and measure it: seconds, tokens and the
    spec-decode counters."""
    from vllm import SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=False)
    before, counts_before = counters(llm), proposer_counts()
    t0 = time.perf_counter()
    outs = []
    for j in range(0, len(messages), batch):  # `batch` requests at a time, each group to its end
        outs += llm.chat(messages[j:j + batch], params, use_tqdm=False)
    seconds = time.perf_counter() - t0
    after, counts_after = counters(llm), proposer_counts()
    return {"batch": batch, "seconds": seconds, "tokens": [list(o.outputs[0].token_ids) for o in outs],
            "spec": {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS},
            "logitspec": diff_counts(counts_before, counts_after)}


def diff_counts(before: dict | None, after: dict | None) -> dict | None:
    if after is None:
        return None
    return {k: ({kk: v - before[k][kk] for kk, v in after[k].items()} if isinstance(v0 := after[k], dict)
                else v0 - before[k]) for k in after}


def run_method(args: argparse.Namespace) -> None:
    """The child process: one engine, a warm-up, then each batch size in turn."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the proposer's counts in-process
    if args.one_method.startswith("logitspec@"):
        from ..engines.vllm_proposer import RULE_ENV

        os.environ[RULE_ENV] = rule_text(args.one_method)
    from vllm import LLM

    qs = load_questions(Path(args.questions), limit=args.limit_per_category)
    messages = [[{"role": "user", "content": q["turns"][0]}] for q in qs]
    started, t0 = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), time.perf_counter()
    llm = LLM(args.model, dtype="float32", enforce_eager=True, gpu_memory_utilization=0.15,
              max_model_len=2048, max_num_seqs=max(args.batches), seed=0, disable_log_stats=False,
              speculative_config=spec_config(args.one_method, args.k))
    startup = time.perf_counter() - t0
    llm.chat(messages[:1], use_tqdm=False)  # warm-up
    phases = [phase(llm, messages, b, args.max_new_tokens) for b in args.batches]
    out = {"method": args.one_method, "started": started, "startup_seconds": startup,
           "question_ids": [q["question_id"] for q in qs], "categories": [q["category"] for q in qs],
           "load_after": [round(x, 2) for x in os.getloadavg()], "phases": phases, "rule": proposer_rule()}
    Path(args.json_out).write_text(json.dumps(out))


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def summarise(results: list[dict]) -> list[dict]:
    """One row per method and batch size, each output compared with no speculation's."""
    base = {p["batch"]: p["tokens"] for r in results if r["method"] == "none" for p in r["phases"]}
    rows = []
    for r in results:
        for p in r["phases"]:
            n = sum(len(t) for t in p["tokens"])
            s = p["spec"]
            drafts, accepted = s[COUNTERS[0]], s[COUNTERS[2]]
            # the headline: tokens per target pass over all steps, those that drafted nothing included
            row = {"method": r["method"], "batch": p["batch"], "tokens_per_step": round(n / (n - accepted), 3),
                   "tokens": n, "seconds": round(p["seconds"], 2), "tokens_per_second": round(n / p["seconds"], 2),
                   "mean_accepted_length": round(1 + accepted / drafts, 3) if drafts else None,
                   "drafted_steps": int(drafts), "draft_tokens": int(s[COUNTERS[1]]), "accepted": int(accepted),
                   "equal_to_no_spec": sum(a == b for a, b in zip(p["tokens"], base.get(p["batch"], []))),
                   "outputs": len(p["tokens"])}
            if p["logitspec"]:
                row["logitspec"], row["rule"] = p["logitspec"], r.get("rule")
            rows.append(row)
    return rows


def markdown(report: dict) -> str:
    lines = [f"# vLLM {report['vllm']}: no speculation, ngram, suffix and LogitSpec", "",
             f"CPU: {report['cpu']} ({report['cores']} cores). Load average before/after this invocation: "
             f"{report['load_before']} / {report['load_after']}"
             f"{' (some methods kept from an earlier invocation: --resume)' if report.get('resumed') else ''}. "
             f"Model: {report['model_name']}, float32, "
             f"greedy, {report['max_new_tokens']} new tokens, K = {report['k']}, {report['questions']} Spec-Bench "
             "questions (one per category), `batch` requests at a time. One run.", "",
             "Tokens/step counts every target pass, those that drafted nothing too; vLLM's mean accepted "
             "length counts only the steps that drafted.", "",
             "| method | batch | tokens/step (all steps) | tok/s | mean accepted length (drafted steps only) "
             "| drafted steps | equal to no spec |", "|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['method']} | {r['batch']} | {r['tokens_per_step']} | {r['tokens_per_second']} "
                     f"| {r['mean_accepted_length'] or '-'} | {r['drafted_steps']} | {r['equal_to_no_spec']}/{r['outputs']} |")
    lines.append("\nEach method in its own process, one after the other; its start and the load average as it "
                 "ended: " + "; ".join(f"{m['method']} {m['started']}, load {m['load_after']}" if m.get("started")
                                       else f"{m['method']} not recorded" for m in report["methods"]) + ".")
    lines.append("`suffix` keeps a tree of its past responses: it decodes batch 4 and 8 after it answered the same "
                 "questions at batch 1 (and the warm-up's first question). `suffix-nocache` turns that tree off.")
    for r in report["rows"]:
        if "logitspec" in r:
            c = r["logitspec"]
            lines.append(f"\n{r['method']} ({r.get('rule') or 'rule not recorded'}) at batch {r['batch']}: proposals g1 {c['proposals']['g1']}, g2 "
                         f"{c['proposals']['g2']}, none {c['proposals']['none']}; accepted tokens g1 "
                         f"{c['accepted']['g1']} of {c['drafted']['g1']}, g2 {c['accepted']['g2']} of "
                         f"{c['drafted']['g2']}; rows read {c['rows_read']}, mismatched {c['row_mismatch']}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m logitspec.bench.engines")
    p.add_argument("--model", default=None, help="a transformers folder (default: the bundled model, exported)")
    p.add_argument("--questions", default="data/spec_bench_subset.jsonl")
    p.add_argument("--limit-per-category", type=int, default=1)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--k", type=int, default=5, help="num_speculative_tokens, alike for every drafter")
    p.add_argument("--batches", type=lambda t: [int(x) for x in t.split(",")], default=[1, 8])
    p.add_argument("--methods", default=",".join(ENGINE_METHODS))
    p.add_argument("--out", default="artifacts/bench-vllm")
    p.add_argument("--resume", action="store_true", help="keep the methods already measured in --out")
    p.add_argument("--one-method", help=argparse.SUPPRESS)
    p.add_argument("--json-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one_method:
        run_method(args)
        return 0
    return orchestrate(args)


def orchestrate(args: argparse.Namespace) -> int:
    check_methods(args.methods.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.model is None:
        args.model = str(out / "model")
        if not (out / "model" / "config.json").exists():
            from ..export import export_model

            export_model(args.model)
    load_before, results, resumed = os.getloadavg(), [], []
    for method in args.methods.split(","):
        path = out / f"{method}.json"
        if args.resume and path.exists():
            results.append(json.loads(path.read_text()))
            resumed.append(method)
            continue
        cmd = [sys.executable, "-m", "logitspec.bench.engines", "--one-method", method, "--json-out", str(path),
               "--model", args.model, "--questions", args.questions, "--limit-per-category",
               str(args.limit_per_category), "--max-new-tokens", str(args.max_new_tokens), "--k", str(args.k),
               "--batches", ",".join(map(str, args.batches))]
        # vLLM's CPU threads wait asleep: spinning ones slow a busy machine tenfold (docs/engines.md)
        subprocess.run(cmd, check=True, env={"OMP_WAIT_POLICY": "PASSIVE", **os.environ})
        results.append(json.loads(path.read_text()))
        print(f"{method}: done", file=sys.stderr)
    import vllm

    report = {"vllm": vllm.__version__, "cpu": cpu_name(), "cores": os.cpu_count(),
              "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
              "model_name": Path(args.model).name, "max_new_tokens": args.max_new_tokens, "k": args.k,
              "questions": len(results[0]["question_ids"]), "rows": summarise(results), "resumed": resumed,
              "methods": [{k: r.get(k) for k in ("method", "started", "startup_seconds", "load_after")}
                          for r in results]}
    (out / "report.json").write_text(json.dumps(report, indent=1))
    (out / "report.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

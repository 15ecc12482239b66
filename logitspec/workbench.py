"""`python -m logitspec workbench`: decode a set of prompts with one or more methods into one set file.

    python -m logitspec workbench --questions coding --methods logitspec,pld --max-new 128 -o set.jsonl

--questions takes a Spec-Bench category of the shipped subset (data/spec_bench_subset.jsonl), `all`,
or a JSONL file of questions (question_id, category, turns). Each run is written as it finishes
(analysis/sets.py), so Ctrl-C keeps every finished run; the app's Workbench tab opens the file.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .core.settings import METHODS, POOLS, DecodeSettings

SUBSET = Path(__file__).resolve().parents[1] / "data" / "spec_bench_subset.jsonl"


def add_parser(sub) -> None:
    """The workbench subcommand's options on the CLI's subparsers."""
    from .cli import parse_ngrams

    d = DecodeSettings()
    w = sub.add_parser("workbench", help="decode a set of prompts with one or more methods into one set file")
    w.add_argument("--questions", default="all",
                   help="a Spec-Bench category of the shipped subset, 'all', or a questions file (.jsonl)")
    w.add_argument("--limit", type=int, help="at most this many questions per category")
    w.add_argument("--methods", default="logitspec,pld", help=f"comma-separated, of: {', '.join(METHODS)}")
    w.add_argument("--max-new", type=int, default=d.max_new_tokens, help="new tokens per run")
    w.add_argument("--ngram", type=parse_ngrams, default=d.ngram_sizes, help="n-gram sizes, e.g. 1-3")
    w.add_argument("--k", type=int, default=d.k, help="next-next candidates (top-k)")
    w.add_argument("--pool", choices=POOLS, default=d.pool)
    w.add_argument("--tree", choices=["static", "cost"], default=d.tree)
    w.add_argument("--model", default="bundled", help="'bundled', a local folder or .gguf, or a hub id")
    w.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    w.add_argument("-o", "--out", required=True, help="the set file to write (.jsonl, or .jsonl.gz)")


def pick_questions(spec: str, limit: int | None) -> list[dict]:
    """The questions `spec` names: a category of the shipped subset, 'all', or a file (InputError otherwise)."""
    from .bench.questions import QuestionFileError, load_questions
    from .core.limits import InputError

    path = Path(spec)
    try:
        if spec.endswith((".jsonl", ".json")) or path.is_file():
            return load_questions(path, None, limit)
        cats = sorted({q["category"] for q in load_questions(SUBSET)})
        if spec != "all" and spec not in cats:
            raise InputError(f"no questions file or category {spec!r}; categories: all, {', '.join(cats)}")
        return load_questions(SUBSET, None if spec == "all" else [spec], limit)
    except QuestionFileError as e:
        raise InputError(str(e)) from None


def method_settings(args: argparse.Namespace) -> dict[str, DecodeSettings]:
    """Each method's checked settings (InputError for an unknown method or a refused value)."""
    from .core.limits import InputError, checked_settings

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if not methods or unknown:
        raise InputError(f"unknown method {unknown[0] if unknown else args.methods!r}; choose from {', '.join(METHODS)}")
    values = dict(max_new_tokens=args.max_new, ngram_sizes=args.ngram, k=args.k, pool=args.pool, tree=args.tree)
    return {m: checked_settings(values, m) for m in dict.fromkeys(methods)}


def run(args: argparse.Namespace) -> int:
    """Decode every question with every method and write the set file run by run."""
    from .core.limits import InputError, check_prompt

    settings = method_settings(args)
    questions = pick_questions(args.questions, args.limit)
    prompts = [check_prompt(q["turns"][0]) for q in questions]
    out = Path(args.out)
    if out.is_dir() or not out.parent.is_dir():
        raise InputError(f"cannot write the set file {out}: {'it is a folder' if out.is_dir() else 'no such folder'}")
    # torch and transformers load only once the input has passed its checks.
    from .analysis.sets import SetWriter
    from .bench.run import hardware
    from .models import load_model
    from .runner import Run
    from .runtime.threads import configure_threads

    configure_threads()
    lm = load_model(args.model, None, args.dtype)
    header = {"model": lm.name, "dtype": lm.dtype, "machine": hardware(lm.device), "questions": args.questions,
              "methods": list(settings), "settings": {m: s.to_dict() for m, s in settings.items()}}
    done = 0
    with SetWriter(out, header) as w:
        try:
            for i, (q, prompt) in enumerate(zip(questions, prompts)):
                for m, s in settings.items():
                    r = Run(lm, prompt, m, s)
                    for _ in r:
                        pass
                    summary = w.add(i, q, r.trace)
                    print(f"[{i + 1}/{len(questions)}] {q.get('category', '')} {q.get('question_id', '')} {m}: "
                          f"{summary.tokens} tokens, {summary.tokens_per_pass:.2f} per pass, "
                          f"{summary.failed_share:.0%} of steps failed", file=sys.stderr, flush=True)
                done = i + 1
        except KeyboardInterrupt:
            print(f"stopped: {done} of {len(questions)} prompts written whole to {out}", file=sys.stderr)
            return 130
    print(f"wrote {out}: {len(questions)} prompts x {len(settings)} methods", file=sys.stderr)
    return 0

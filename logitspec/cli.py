"""`python -m logitspec generate ...`: run one decoder on one prompt from the shell."""
from __future__ import annotations

import argparse
import json
import sys

from . import workbench
from .arguments import add_processor_options, number, parse_ngrams, processor_options
from .analysis.lanes import methods
from .core.settings import POOLS, DecodeSettings


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m logitspec", description="LogitSpec speculative decoding")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="generate text for one prompt")
    g.add_argument("prompt")
    d = DecodeSettings()  # every decoder default comes from here, never restated
    g.add_argument("--method", choices=methods(), default="logitspec")
    g.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens)
    g.add_argument("--model", default="bundled", help="'bundled', a local folder or .gguf, or a hub id")
    g.add_argument("--device", default="auto")
    g.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16", "auto"],
                   help="auto: the faster exact dtype on this machine, timed at load (the pick is printed)")
    g.add_argument("--k", type=int, default=d.k, help="next-next candidates (top-k)")
    g.add_argument("--capacity", type=int, default=d.capacity, help="draft tree capacity, root included")
    g.add_argument("--cpu-capacity", type=int, default=d.cpu_capacity,
                   help="the cost-aware tree's capacity on a CPU, root included")
    g.add_argument("--ngram", type=parse_ngrams, default=d.ngram_sizes, help="n-gram sizes, e.g. 1-3")
    g.add_argument("--continuation", type=int, default=d.continuation, help="g1 continuation length")
    g.add_argument("--pool", choices=POOLS, default=d.pool,
                   help="which occurrence of an n-gram retrieval continues: the latest, or the longest (the paper's code)")
    g.add_argument("--tree", choices=["static", "cost"], default=d.tree,
                   help="cost: sized by the measured cost of a tree token (default); static: the paper's rule")
    g.add_argument("--temperature", type=number, default=d.temperature, help="0 = greedy; up to 2")
    g.add_argument("--top-p", type=number, default=d.top_p, help="nucleus sampling mass, in (0, 1]")
    g.add_argument("--top-k", type=number, default=d.top_k, help="sample among the k likeliest; 0 = off")
    g.add_argument("--seed", type=number, default=d.seed, help="the same seed gives the same tokens in every method")
    add_processor_options(g)
    g.add_argument("--no-chat", action="store_true", help="feed the prompt raw, without the chat template")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    g.add_argument("--save-trace", metavar="FILE", help="write the run's trace as JSON")
    e = sub.add_parser("export-model", help="write a model as a transformers folder (for vLLM)")
    e.add_argument("folder", help="where to write it (new or empty)")
    e.add_argument("--model", default="bundled", help="'bundled', a local folder or .gguf, or a hub id")
    e.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    workbench.add_parser(sub)
    return p


def generate(args: argparse.Namespace) -> int:
    from .core.limits import check_context, check_prompt, checked_settings

    settings = checked_settings(dict(max_new_tokens=args.max_new_tokens, k=args.k, capacity=args.capacity,
                                     cpu_capacity=args.cpu_capacity,
                                     ngram_sizes=args.ngram, continuation=args.continuation, pool=args.pool, tree=args.tree,
                                     temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                                     seed=args.seed, processors=processor_options(args)))
    prompt = check_prompt(args.prompt)

    # torch and transformers load only once the input has passed its checks.
    from .models import load_model
    from .runner import Run
    from .runtime.threads import configure_threads

    configure_threads()
    pick = None
    if args.dtype == "auto":
        from .dtype_pick import pick_dtype

        lm, pick = pick_dtype(args.model, args.device, settings.max_new_tokens)
        print(pick.words(), file=sys.stderr)
    else:
        lm = load_model(args.model, args.device, args.dtype)
        if getattr(lm, "half_mode", None) is not None:  # which exact half-precision mode runs, and both times
            print(lm.half_mode.note, file=sys.stderr)
    run = Run(lm, prompt, args.method, settings, chat=not args.no_chat)
    check_context(len(run.trace.prompt_tokens), settings.max_new_tokens, lm.max_context)
    for _ in run:
        pass
    trace = run.trace
    text = lm.decode(trace.tokens)
    if args.save_trace:
        trace.save(args.save_trace)
    if args.json:
        print(json.dumps({
            "method": args.method, "model": lm.name, "tokens": trace.tokens, "text": text,
            "steps": trace.forward_steps, "mean_accepted_tokens": trace.mean_accepted_tokens,
            "seconds": trace.seconds, "prefill_seconds": trace.prefill_seconds,
            "tokens_per_second": len(trace.tokens) / trace.decode_seconds if trace.decode_seconds else None,
            "prompt_tokens": len(trace.prompt_tokens), "dtype": lm.dtype,
            **({"processors": settings.processors} if settings.processors else {}),
            **({"dtype_pick": pick.to_dict()} if pick else {}),
            **({"half_mode": lm.half_mode.to_dict()} if getattr(lm, "half_mode", None) else {}),
        }, ensure_ascii=False))
    else:
        print(text)
    return 0


def export_model(args: argparse.Namespace) -> int:
    from .export import export_model as export

    print(export(args.folder, args.model, args.dtype))
    return 0


def one_line(e: BaseException) -> str:
    """An error as one line: its first line of text, or its type where it has none."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def main(argv: list[str] | None = None) -> int:
    """Run the command; every failure reaches the user as one line on stderr and a non-zero
    exit status (2: refused input or model, 1: anything that went wrong while running)."""
    from .core.errors import DecodeError, ModelLoadError
    from .core.limits import InputError

    args = build_parser().parse_args(argv)
    try:
        if args.command == "workbench":
            return workbench.run(args)
        return export_model(args) if args.command == "export-model" else generate(args)
    except (InputError, ModelLoadError, DecodeError) as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug or a model the checks let through: still no traceback
        print(f"error: {type(e).__name__}: {one_line(e)}", file=sys.stderr)
        return 1

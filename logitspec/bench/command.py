"""`python -m logitspec.bench`: speed and acceptance of the decoders over Spec-Bench questions.

The bench's command line (its options and their checks) and the plain-text table it prints;
the measuring is in bench.run.

The report's figures are drawn from its JSON by `python -m visual.bench REPORT --out DIR`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..analysis.lanes import lane, names
from ..arguments import add_processor_options, number
from ..core.settings import POOLS, DecodeSettings
from .questions import QuestionFileError
from .run import decode_settings, run_dtypes


class BenchInputError(ValueError):
    """A questions file or argument the bench cannot use; the message says why."""


def resolve_auto(args: argparse.Namespace):
    """`--dtype auto`: time the model in each exact dtype, bench the faster (printed and kept in
    the report); the pass costs default to the dtypes benched."""
    pick = None
    if args.dtypes == ["auto"]:
        from ..dtype_pick import pick_dtype
        from ..runtime.threads import configure_threads

        configure_threads(args.threads)
        lm, pick = pick_dtype(args.model, args.device, args.max_new_tokens)
        del lm  # run_bench loads its own, after the pick
        print(pick.words())
        args.dtypes = [pick.dtype]
    if args.pass_cost_dtypes is None:
        args.pass_cost_dtypes = list(args.dtypes)
    return pick


def print_table(report: dict) -> None:
    """A plain-text table of speed-up and mean accepted tokens per method."""
    methods = report["methods"]
    cats = report["settings"]["categories"]
    head = f"{'category':<16}" + "".join(f"{m:>22}" for m in methods)
    print(head)
    for c in cats + ["overall"]:
        cells = []
        for m in methods:
            e = methods[m]["overall"] if c == "overall" else methods[m]["per_category"][c]
            su = e.get("speedup_vs_vanilla")
            cells.append(f"{(su or 0):>8.2f}x {e['mean_accepted_tokens']:>5.2f} tok/step")
        print(f"{c:<16}" + "".join(f"{x:>22}" for x in cells))
    for m, entry in methods.items():
        if "versus" in entry:
            print_versus(m, entry["versus"], cats)
    for phase in report.get("phases", []):
        load = phase["background_load"]
        cells = []
        for m, e in phase["methods"].items():
            o = e["overall"]
            cells.append(f"{m} {(o.get('speedup_vs_vanilla') or 0):.2f}x {o['mean_accepted_tokens']:.2f} tok/step"
                         + (f" tree {o['mean_tree_size']:.2f}" if "mean_tree_size" in o else ""))
        print(f"phase {phase['name']} ({load} busy process{'es' if load != 1 else ''}): " + "; ".join(cells))
    st = report["settings"]
    if "cpu_model" in st:
        print(f"CPU: {st['cpu_model']} ({', '.join(st['instruction_sets']) or 'no AVX2'}); "
              f"few-row kernel: {st['few_row_kernel']}")
    if st.get("half_mode"):
        print(st["half_mode"]["note"])
    if "isa_caps" in st:
        print("instruction-set caps: " + ", ".join(f"{k}={v}" for k, v in st["isa_caps"].items()))
    if report.get("by_dtype"):
        from .paper import dtype_markdown

        print("each dtype, overall:\n" + dtype_markdown(report))
    if report.get("pass_cost"):
        from .passcost import describe

        print("cost of a forward pass:")
        for entry in report["pass_cost"]:
            print("  " + describe(entry))
    print(f"lossless: {report['lossless']}{sameness_note(report.get('mismatches', []))}")


def sameness_note(mismatches: list[dict]) -> str:
    """' (4 runs parted from vanilla, each at a near-tie: equal up to 4 near-ties)', or how many
    did not part at one; "" when none parted."""
    if not mismatches:
        return ""
    ties = sum(bool(m.get("near_tie")) for m in mismatches)
    if ties == len(mismatches):
        return f" ({ties} runs parted from vanilla, each at a near-tie: equal up to {ties} near-ties)"
    return f" ({len(mismatches)} runs parted from vanilla, {len(mismatches) - ties} of them not at a near-tie)"


def print_versus(method: str, vs: dict, cats: list[str]) -> None:
    """Each category's head-to-head of a method with prompt lookup, its range and repetitions ahead."""
    print(f"{method} against {vs['against']}: speed ratio of the median runs (range over the repetitions; "
          "repetitions at or ahead)")
    for c in cats + ["overall"]:
        v = vs["overall"] if c == "overall" else vs["per_category"][c]
        print(f"  {c:<14}{v['ratio']:>6.3f}x ({v['min']:.3f}-{v['max']:.3f}; {v['ahead_in']} of {v['repeats']})")


def build_parser() -> argparse.ArgumentParser:
    d = DecodeSettings()
    p = argparse.ArgumentParser(prog="python -m logitspec.bench", description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=Path, required=True, help="Spec-Bench style .jsonl")
    p.add_argument("--categories", type=lambda s: [c for c in s.split(",") if c], default=None)
    p.add_argument("--limit-per-category", type=int, default=None)
    p.add_argument("--methods", type=lambda s: [m for m in s.split(",") if m], default=["vanilla", "pld", "logitspec"])
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--model", default="bundled")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="float32", help="the weights' dtype; several, comma-separated "
                   "(float32,bfloat16), run the bench once for each and report them side by side; auto "
                   "benches the faster exact dtype, timed first")
    p.add_argument("--threads", type=int, default=None,
                   help="a fixed intra-op thread count (default: one per core, fewer while other work "
                        "makes fewer faster)")
    p.add_argument("--temperature", type=number, default=d.temperature, help="0 = greedy (every method samples alike)")
    p.add_argument("--top-p", type=number, default=d.top_p, help="nucleus sampling mass, in (0, 1]")
    p.add_argument("--seed", type=number, default=d.seed, help="sampling seed, the same for every method")
    p.add_argument("--background-load", type=int, nargs="?", const=1, default=0, metavar="N",
                   help="time a first phase while N processes (default 1) each spin a core, started "
                        "before the warm-up so c(n) is measured under load; then time again without them")
    p.add_argument("--pass-cost-dtypes", type=lambda s: [d for d in s.split(",") if d], default=None,
                   metavar="DTYPES", help="after the runs, time c(n) over a 512-token cache and the memory "
                   "floor for each of these dtypes (comma-separated; default: the --dtype of the runs; "
                   "'' for none)")
    add_processor_options(p)  # what generate's processors cost each method: one run with, one without
    p.add_argument("--pool", choices=POOLS, default=d.pool,
                   help="which occurrence of an n-gram retrieval continues: the latest, or the one with the "
                        "longest continuation (the paper's code)")
    p.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    return p


def main(argv: list[str] | None = None) -> int:
    from ..core.limits import InputError
    from ..models import DTYPES
    from ..core.errors import ModelLoadError

    args = build_parser().parse_args(argv)
    try:
        unknown = [m for m in args.methods if lane(m) is None]
        if unknown:
            raise BenchInputError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(names())}")
        if "vanilla" not in args.methods:
            args.methods = ["vanilla"] + args.methods  # the reference every method is checked against
        if args.background_load < 0:
            raise BenchInputError("--background-load must be 0 or more processes")
        if args.repeats < 1 or (args.limit_per_category is not None and args.limit_per_category < 1):
            raise BenchInputError("--repeats and --limit-per-category must be at least 1")
        decode_settings(args)
        args.dtypes = [d for d in args.dtype.split(",") if d]
        if not args.dtypes:
            raise BenchInputError("--dtype needs a dtype: float32, bfloat16 or float16 (comma-separated for several)")
        if "auto" in args.dtypes and len(args.dtypes) > 1:
            raise BenchInputError("--dtype auto picks one dtype: give it alone, or name the dtypes to compare")
        for flag, given in (("--dtype", args.dtypes), ("--pass-cost-dtypes", args.pass_cost_dtypes or [])):
            bad = [d for d in given if d not in DTYPES and not (flag == "--dtype" and d == "auto")]
            if bad:
                raise BenchInputError(f"unknown dtype(s) {', '.join(bad)} in {flag}; choose from "
                                      f"{', '.join(DTYPES)}" + (" or auto" if flag == "--dtype" else ""))
        pick = resolve_auto(args)
        report = run_dtypes(args)
        if pick is not None:
            report["settings"]["dtype_pick"] = pick.to_dict()
    except (BenchInputError, QuestionFileError, InputError, ModelLoadError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print_table(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        print(f"report: {args.out}")
        if "paper_table" in report:
            from .paper import markdown

            table = args.out.with_suffix(".md")
            table.write_text(markdown(report) + "\n")
            print(f"the paper's table: {table}")
    return 0 if report["lossless"] else 1

"""`python -m logitspec.bench`: speed and acceptance of the decoders over Spec-Bench questions.

Methods run interleaved per question (their order rotating each repetition) on the same
model in one process, so load on a shared machine hits them alike. Each method's output is
checked against vanilla greedy token for token. Figures are medians over repetitions.
The report's figures are drawn from its JSON by `python -m visual.bench REPORT --out DIR`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from ..analysis.budget import pooled, replay_budgets
from ..analysis.drafts import drafted_bound
from ..analysis.lanes import lane, names, run_spec
from ..analysis.parting import Choices, parting
from ..runtime.fewrows import kernel_status
from ..core.settings import POOLS, DecodeSettings
from ..core.trace import G2_RESCUED, RunTrace
from .machine import hardware, instruction_sets, isa_caps, torch_version
from .questions import QuestionFileError, load_questions



class BenchInputError(ValueError):
    """A questions file or argument the bench cannot use; the message says why."""


def summarise(rows: list[dict], vanilla_rows: list[dict] | None) -> dict:
    """Aggregate per-question medians into the report's figures for one method."""
    tokens = sum(r["tokens"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    steps = sum(r["steps"] for r in rows)
    tps = tokens / seconds if seconds else 0.0
    out = {
        "questions": len(rows),
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_second": tps,
        "mean_accepted_tokens": tokens / steps if steps else 0.0,
        "retrieval_success_rate": _share(rows, "retrieved"),
        "draft_bookkeeping_share": sum(r["overhead"] for r in rows) / sum(r["decode_seconds"] for r in rows),
        "calibration_seconds": sum(r.get("calibration_seconds", 0.0) for r in rows),
    }
    if all("drafted_bound" in r for r in rows) and steps:
        # Mean tokens per step had every drafted token been verified (see drafted_bound).
        out["drafted_tokens_per_step"] = sum(r["drafted_bound"] for r in rows) / steps
    if any("g2_rescued" in r for r in rows):
        out["g2_rescue_rate"] = _share(rows, "g2_rescued")
    if any("tree_nodes" in r for r in rows):
        out["mean_tree_size"] = sum(r["tree_nodes"] for r in rows) / steps if steps else 0.0
    if vanilla_rows is not None:
        v = summarise(vanilla_rows, None)
        out["speedup_vs_vanilla"] = tps / v["tokens_per_second"] if v["tokens_per_second"] else None
    return out


def _share(rows: list[dict], key: str) -> float | None:
    steps = sum(r["steps"] for r in rows if key in r)
    return sum(r[key] for r in rows if key in r) / steps if steps else None


def measure(lm, prompt_ids: list[int], method: str, settings: DecodeSettings) -> dict:
    """One timed run; wall time covers prefill and decoding as a user would wait for them."""
    from ..decoders import decode

    name, tree = run_spec(method, settings.tree)
    # Every timed run pays its own prefill: none is copied from the run before.
    s = replace(settings, tree=tree or settings.tree, share_prefill=False)
    t0 = time.perf_counter()
    steps = list(decode(lm.model, prompt_ids, name, s, lm.eos_ids))
    # A re-measuring of c(n) that decoding asked for (see costcurve.observe_forward) is a
    # one-off of the process, like the warm-up, not part of this run's decoding.
    calibration = sum(st.calibration_seconds for st in steps)
    wall = time.perf_counter() - t0 - calibration
    fwd = [st for st in steps if st.forward]
    row = {
        "tokens_list": [t for st in steps for t in st.tokens],
        "choices": Choices.of_steps(steps, lm.dtype),
        "seconds": wall,
        "calibration_seconds": calibration,
        "decode_seconds": sum(st.seconds for st in steps),
        "overhead": sum(st.draft_seconds + st.bookkeeping_seconds for st in steps),
        "steps": len(fwd),
    }
    row["tokens"] = len(row["tokens_list"])
    if name in ("pld", "logitspec"):  # what trees of every size would have accepted in this run's steps
        row["budget"] = replay_budgets(RunTrace(name, "", "", list(prompt_ids), s.to_dict(), steps))
    if name in ("pld", "logitspec", "logitspec+recycling", "lookahead", "rest"):  # a recycled tree runs no query
        row["retrieved"] = sum(st.retrieved for st in fwd)
    if name in ("pld", "logitspec", "logitspec+recycling"):
        row["drafted_bound"] = drafted_bound(steps)
    if name in ("logitspec", "logitspec+recycling"):
        row["g2_rescued"] = sum(st.outcome == G2_RESCUED for st in fwd)
    if name not in ("vanilla", "pld"):
        row["tree_nodes"] = sum(len(st.verified_nodes) for st in fwd)
    return row


def timed_runs(lm, questions: list[dict], prompts: dict, methods: list[str], settings: DecodeSettings,
               repeats: int) -> tuple[dict, bool, list[dict]]:
    """Every method on every question, `repeats` times, interleaved; (runs per method and
    question, lossless, mismatches)."""
    from tqdm import tqdm

    per_q: dict[str, dict[int, list[dict]]] = {m: defaultdict(list) for m in methods}
    lossless, mismatches = True, []
    total = len(questions) * repeats
    with tqdm(total=total, desc="bench", unit="question", file=sys.stderr) as bar:
        for rep in range(repeats):
            for qi, q in enumerate(questions):
                order = methods[(qi + rep) % len(methods):] + methods[: (qi + rep) % len(methods)]
                rows = {m: measure(lm, prompts[q["question_id"]], m, settings) for m in order}
                ref = rows["vanilla"]["choices"] if "vanilla" in rows else None
                for m, r in rows.items():
                    part = parting(r["choices"], ref, len(r["tokens_list"]), both_ended=True) if ref else None
                    if part is not None:
                        lossless = False
                        mismatches.append({"question_id": q["question_id"], "method": m, "repeat": rep,
                                           "token": part.index, "near_tie": part.near_tie,
                                           "leads_ulps": [part.lead, part.lane_lead]})
                    per_q[m][q["question_id"]].append(r)
                bar.set_postfix_str(q["category"])
                bar.update(1)

    return per_q, lossless, mismatches


def median_row(reps: list[dict]) -> dict:
    """The repetition with the median wall time stands for the question."""
    return sorted(reps, key=lambda r: r["seconds"])[len(reps) // 2]


def method_figures(per_q: dict, methods: list[str], questions: list[dict], repeats: int) -> dict:
    """Each method's figures, overall and per category, from the timed runs; with more than one
    repetition, the speed-up's range over them, and each method's head-to-head with prompt
    lookup (`versus`)."""
    cats = sorted({q["category"] for q in questions})
    by_cat = {"overall": [q["question_id"] for q in questions],
              **{c: [q["question_id"] for q in questions if q["category"] == c] for c in cats}}
    out = {}
    medians = {m: {qid: median_row(r) for qid, r in per_q[m].items()} for m in per_q}
    v_rows = medians.get("vanilla")
    for m in methods:
        rows = medians[m]
        entry = {"per_category": {}}
        for c, ids in by_cat.items():
            e = summarise([rows[i] for i in ids], [v_rows[i] for i in ids] if v_rows else None)
            if v_rows and repeats > 1:  # noise: the speed-up within each repetition alone
                ups = by_repeat(per_q, m, "vanilla", ids, repeats)
                e["speedup_min"], e["speedup_max"] = min(ups), max(ups)
            if c == "overall":
                entry["overall"] = e
                if all("budget" in rows[i] for i in ids):  # pooled over the questions, as tokens per pass are
                    e["budget"] = pooled([rows[i]["budget"] for i in ids]).summary()
            else:
                entry["per_category"][c] = e
        if "pld" in per_q and m not in ("pld", "vanilla"):
            vs = {c: versus(per_q, medians, m, "pld", ids, repeats) for c, ids in by_cat.items()}
            entry["versus"] = {"against": "pld", "overall": vs.pop("overall"), "per_category": vs}
        out[m] = entry
    return out


def by_repeat(per_q: dict, m: str, other: str, ids: list, repeats: int) -> list[float]:
    """Method m's speed over `other`'s on these questions, within each repetition alone."""
    def speed(x: str, rep: int) -> float:
        return sum(per_q[x][i][rep]["tokens"] for i in ids) / sum(per_q[x][i][rep]["seconds"] for i in ids)

    return [speed(m, rep) / speed(other, rep) for rep in range(repeats)]


def versus(per_q: dict, medians: dict, m: str, other: str, ids: list, repeats: int) -> dict:
    """m's speed over `other`'s on these questions: from the median runs (`medians`, as the
    speed-ups are), its range over the repetitions, and in how many of them m was ahead, so
    a category's lead or lag can be told from the noise."""
    speed = {x: sum(medians[x][i]["tokens"] for i in ids) / sum(medians[x][i]["seconds"] for i in ids)
             for x in (m, other)}
    ratios = by_repeat(per_q, m, other, ids, repeats)
    return {"ratio": speed[m] / speed[other], "min": min(ratios), "max": max(ratios),
            "ahead_in": sum(r >= 1.0 for r in ratios), "repeats": repeats}


def _curves(lm, methods: list[str]) -> list[dict]:
    """The cost curves in use now (as decoding has corrected them), for the report."""
    if not any(run_spec(m)[1] == "cost" for m in methods):
        return []
    from ..sizing.costcurve import measured_curves

    return [c.to_dict() for c in measured_curves(lm.model)]


class BusyLoad:
    """Other work on the machine for the bench: `count` processes each spinning one core
    (not pinned, so they compete with the decoder's threads as a neighbour's job would)."""

    def __init__(self, count: int = 0) -> None:
        self.count = count
        self.procs: list = []

    def start(self) -> "BusyLoad":
        import subprocess

        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        return self

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []


def prepare(args: argparse.Namespace, lm, prompts: dict, settings: DecodeSettings) -> None:
    """Warm up every method once so first-call costs (allocations, the cost curves) stay out
    of the timed runs: every context length the runs will reach is measured beforehand."""
    from ..sizing.costcurve import warm_up

    if any(run_spec(m)[1] == "cost" for m in args.methods):
        warm_up(lm.model, max(len(p) for p in prompts.values()) + args.max_new_tokens, settings.capacity)
    warm = next(iter(prompts.values()))
    for m in args.methods:
        measure(lm, warm, m, replace(settings, max_new_tokens=8))


def run_bench(args: argparse.Namespace) -> dict:
    """Load, warm up, time. With --background-load the busy processes start before the
    warm-up (so c(n) is measured under load, as at a busy start-up), a first phase is timed
    under load, then they stop and the same runs are timed again."""
    from ..models import load_model
    from ..runtime.threads import configure_threads
    from ..runtime.tuner import thread_tuner

    questions = load_questions(args.questions, args.categories, args.limit_per_category)
    methods = args.methods
    threads = configure_threads(args.threads)
    load = BusyLoad(args.background_load).start()
    phases = []
    try:
        lm = load_model(args.model, args.device, args.dtype)
        settings = decode_settings(args)
        prompts = {q["question_id"]: lm.encode_chat(q["turns"][0]) for q in questions}
        prepare(args, lm, prompts, settings)
        if load.procs:
            seen = dict(thread_tuner().passes)
            phases.append(("loaded", timed_runs(lm, questions, prompts, methods, settings, args.repeats),
                           _curves(lm, methods), _passes_since(seen)))
    finally:
        load.stop()
    seen = dict(thread_tuner().passes)
    runs = timed_runs(lm, questions, prompts, methods, settings, args.repeats)
    if phases:
        phases.append(("after", runs, _curves(lm, methods), _passes_since(seen)))
    report = make_report(args, lm, questions, settings, threads, runs)
    report["settings"]["threads_tuned"] = not thread_tuner().fixed
    if args.pass_cost_dtypes:
        from .passcost import pass_costs

        # Timed after the runs, on the same idle cores, and never while a busy load runs.
        report["pass_cost"] = pass_costs(lm, args.model, args.device, args.pass_cost_dtypes)
    report["passes_per_thread_count"] = _passes_since(seen)
    if phases:
        report["lossless"] = all(r[1] for _, r, _, _ in phases)
        report["mismatches"] = [dict(m, phase=n) for n, r, _, _ in phases for m in r[2]]
        report["phases"] = [{"name": n, "background_load": args.background_load if n == "loaded" else 0,
                             "lossless": r[1], "methods": method_figures(r[0], methods, questions, args.repeats),
                             "cost_curves": c, "passes_per_thread_count": t} for n, r, c, t in phases]
    return report


def run_dtypes(args: argparse.Namespace) -> dict:
    """The bench once per dtype of --dtype, one after another in this process, on the same
    questions: the first dtype's report is the report, `by_dtype` holds every dtype's figures
    side by side, and the run is lossless only if every dtype's is."""
    dtypes, cost_dtypes = args.dtypes, args.pass_cost_dtypes
    reports = {}
    for i, dtype in enumerate(dtypes):
        args.dtype = dtype
        args.pass_cost_dtypes = cost_dtypes if i == len(dtypes) - 1 else []  # timed once, at the end
        reports[dtype] = run_bench(args)
    args.dtype, args.pass_cost_dtypes = dtypes[0], cost_dtypes
    report = reports[dtypes[0]]
    if len(dtypes) > 1:
        by_dtype = {d: {"lossless": r["lossless"], "few_row_kernel": r["settings"]["few_row_kernel"],
                        "half_mode": r["settings"].get("half_mode"),
                        "methods": r["methods"]} for d, r in reports.items()}
        if "pass_cost" in reports[dtypes[-1]]:
            report["pass_cost"] = reports[dtypes[-1]]["pass_cost"]
        report["mismatches"] = [dict(m, dtype=d) for d, r in reports.items() for m in r["mismatches"]]
        report["lossless"], report["by_dtype"] = all(r["lossless"] for r in by_dtype.values()), by_dtype
    return report


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


def _passes_since(seen: dict[int, int]) -> dict[str, int]:
    """Forward passes run on each intra-op thread count since `seen` was taken (runtime.tuner)."""
    from ..runtime.tuner import thread_tuner

    now = thread_tuner().passes
    return {str(c): now[c] - seen.get(c, 0) for c in sorted(now) if now[c] > seen.get(c, 0)}


def make_report(args: argparse.Namespace, lm, questions: list[dict], settings: DecodeSettings, threads: int,
                runs: tuple[dict, bool, list[dict]]) -> dict:
    """The report of one phase of timed runs, with the settings and the machine."""
    from ..runtime.fewrows import cpu_model, kernel_variant

    per_q, lossless, mismatches = runs
    report = {
        "lossless": lossless,
        "mismatches": mismatches,
        "settings": {
            "model": lm.name, "device": lm.device, "dtype": lm.dtype, "threads": threads,
            "packed_linear_layers": lm.packed_layers, "few_row_kernel": kernel_status(),
            "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
            "questions": len(questions), "categories": sorted({q["category"] for q in questions}),
            "methods": args.methods, "questions_file": str(args.questions), "decode": settings.to_dict(),
            "hardware": hardware(lm.device), "torch": torch_version(), "cpu_model": cpu_model(),
            "instruction_sets": instruction_sets(), "isa_caps": isa_caps(), "kernel_variant": kernel_variant()[0],
            "background_load": args.background_load, "weights_from": lm.weights_from,
            "half_mode": lm.half_mode.to_dict() if getattr(lm, "half_mode", None) else None,
            # Every method samples with these; the same seed makes their outputs comparable.
            "temperature": settings.temperature, "top_p": settings.top_p, "seed": settings.seed,
        },
        "methods": method_figures(per_q, args.methods, questions, args.repeats),
    }
    if any(run_spec(m)[1] == "cost" for m in args.methods):
        report["cost_curves"] = _curves(lm, args.methods)
    if {"pld", "logitspec"} <= set(args.methods):
        from .paper import paper_table

        report["paper_table"] = paper_table(report)
    return report


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


def decode_settings(args: argparse.Namespace) -> DecodeSettings:
    """The settings every method decodes with, checked (InputError for bad sampling values)."""
    from ..arguments import processor_options
    from ..core.limits import checked_settings

    return checked_settings(dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                 top_p=args.top_p, seed=args.seed, pool=args.pool,
                                 processors=processor_options(args)))


def build_parser() -> argparse.ArgumentParser:
    from ..arguments import add_processor_options, number

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


"""The bench's measuring: every decoder over Spec-Bench questions, timed side by side.

Methods run interleaved per question (their order rotating each repetition) on the same
model in one process, so load on a shared machine hits them alike. Each method's output is
checked against vanilla greedy token for token. Figures are medians over repetitions
(bench.summary); the command line and its printed table are in bench.command.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from dataclasses import replace

from ..analysis.budget import replay_budgets
from ..analysis.drafts import drafted_bound
from ..analysis.lanes import lane_run, run_spec
from ..analysis.parting import Choices, parting
from ..arguments import processor_options
from ..core.settings import DecodeSettings
from ..core.trace import G2_RESCUED, RunTrace
from ..runtime.fewrows import kernel_status
from .machine import hardware, instruction_sets, isa_caps, torch_version
from .questions import load_questions
from .summary import method_figures


def measure(lm, prompt_ids: list[int], method: str, settings: DecodeSettings) -> dict:
    """One timed run; wall time covers prefill and decoding as a user would wait for them."""
    from ..decoders import decode

    name, s = lane_run(method, settings)
    s = replace(s, share_prefill=False)  # every timed run pays its own prefill: none is copied from the run before
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


def decode_settings(args: argparse.Namespace) -> DecodeSettings:
    """The settings every method decodes with, checked (InputError for bad sampling values)."""
    from ..core.limits import checked_settings

    return checked_settings(dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                 top_p=args.top_p, seed=args.seed, pool=args.pool,
                                 processors=processor_options(args)))

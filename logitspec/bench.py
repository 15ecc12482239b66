"""`python -m logitspec.bench`: speed and acceptance of the decoders over Spec-Bench questions.

Methods run interleaved per question (their order rotating each repetition) on the same
model in one process, so load on a shared machine hits them alike. Each method's output is
checked against vanilla greedy token for token. Figures are medians over repetitions.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from .drafts import drafted_bound
from .fewrows import kernel_status
from .settings import DecodeSettings

METHOD_SPECS = {
    "vanilla": ("vanilla", None),
    "pld": ("pld", None),
    "logitspec": ("logitspec", "cost"),  # the default: cost-aware tree
    "logitspec-static": ("logitspec", "static"),  # the paper's fixed rule
}


class BenchInputError(ValueError):
    """A questions file or argument the bench cannot use; the message says why."""


def load_questions(path: Path, categories: list[str] | None, limit: int | None) -> list[dict]:
    """Questions in Spec-Bench format (question_id, category, turns); first turn used."""
    if not path.is_file():
        raise BenchInputError(f"questions file not found: {path}")
    out, per_cat = [], defaultdict(int)
    for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            raise BenchInputError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
        if not isinstance(q, dict) or not {"question_id", "category", "turns"} <= q.keys():
            raise BenchInputError(f"{path}:{lineno}: a question needs question_id, category and turns")
        if not isinstance(q["turns"], list) or not q["turns"] or not isinstance(q["turns"][0], str):
            raise BenchInputError(f"{path}:{lineno}: turns must be a non-empty list of strings")
        if categories and q["category"] not in categories:
            continue
        if limit is not None and per_cat[q["category"]] >= limit:
            continue
        per_cat[q["category"]] += 1
        out.append(q)
    if not out:
        raise BenchInputError(f"no questions selected from {path}")
    return out


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
    from .decoders import decode

    name, tree = METHOD_SPECS[method]
    s = replace(settings, tree=tree) if tree else settings
    t0 = time.perf_counter()
    steps = list(decode(lm.model, prompt_ids, name, s, lm.eos_ids))
    # A re-measuring of c(n) that decoding asked for (see costmodel.observe_forward) is a
    # one-off of the process, like the warm-up, not part of this run's decoding.
    calibration = sum(st.calibration_seconds for st in steps)
    wall = time.perf_counter() - t0 - calibration
    fwd = [st for st in steps if st.forward]
    row = {
        "tokens_list": [t for st in steps for t in st.tokens],
        "seconds": wall,
        "calibration_seconds": calibration,
        "decode_seconds": sum(st.seconds for st in steps),
        "overhead": sum(st.draft_seconds + st.bookkeeping_seconds for st in steps),
        "steps": len(fwd),
    }
    row["tokens"] = len(row["tokens_list"])
    if name != "vanilla":
        row["retrieved"] = sum(any(q.matched for q in st.queries) for st in fwd)
        row["drafted_bound"] = drafted_bound(steps)
    if name == "logitspec":
        row["g2_rescued"] = sum((not st.queries[0].matched) and any(q.matched for q in st.queries[1:]) for st in fwd)
        row["tree_nodes"] = sum(len(st.verified_nodes) for st in fwd)
    return row


def hardware(device: str) -> str:
    """The machine in words: the GPU's name on CUDA, else the CPU count."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU, {os.cpu_count()} cores ({platform.machine()})"


def torch_version() -> str:
    import torch

    return torch.__version__


def run_bench(args: argparse.Namespace) -> dict:
    from tqdm import tqdm

    from .costmodel import warm_up
    from .models import load_model
    from .threads import configure_threads

    questions = load_questions(args.questions, args.categories, args.limit_per_category)
    methods = args.methods
    threads = configure_threads(args.threads)
    lm = load_model(args.model, args.device, args.dtype)
    settings = DecodeSettings(max_new_tokens=args.max_new_tokens)
    prompts = {q["question_id"]: lm.encode_chat(q["turns"][0]) for q in questions}

    # Warm up every method once so first-call costs (allocations, the cost curves) stay out
    # of the timed runs: every context length the runs will reach is measured beforehand.
    if any(METHOD_SPECS[m][1] == "cost" for m in methods):
        warm_up(lm.model, max(len(p) for p in prompts.values()) + args.max_new_tokens, settings.capacity)
    warm = prompts[questions[0]["question_id"]]
    for m in methods:
        measure(lm, warm, m, replace(settings, max_new_tokens=8))

    per_q: dict[str, dict[int, list[dict]]] = {m: defaultdict(list) for m in methods}
    lossless, mismatches = True, []
    total = len(questions) * args.repeats
    with tqdm(total=total, desc="bench", unit="question", file=sys.stderr) as bar:
        for rep in range(args.repeats):
            for qi, q in enumerate(questions):
                order = methods[(qi + rep) % len(methods):] + methods[: (qi + rep) % len(methods)]
                rows = {m: measure(lm, prompts[q["question_id"]], m, settings) for m in order}
                ref = rows["vanilla"]["tokens_list"] if "vanilla" in rows else None
                for m, r in rows.items():
                    if ref is not None and r["tokens_list"] != ref:
                        lossless = False
                        mismatches.append({"question_id": q["question_id"], "method": m, "repeat": rep})
                    per_q[m][q["question_id"]].append(r)
                bar.set_postfix_str(q["category"])
                bar.update(1)

    def median_row(reps: list[dict]) -> dict:
        """The repetition with the median wall time stands for the question."""
        return sorted(reps, key=lambda r: r["seconds"])[len(reps) // 2]

    cats = sorted({q["category"] for q in questions})
    by_cat = {c: [q["question_id"] for q in questions if q["category"] == c] for c in cats}
    report = {
        "lossless": lossless,
        "mismatches": mismatches,
        "settings": {
            "model": lm.name, "device": lm.device, "dtype": lm.dtype, "threads": threads,
            "packed_linear_layers": lm.packed_layers, "few_row_kernel": kernel_status(),
            "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
            "questions": len(questions), "categories": cats, "methods": methods,
            "questions_file": str(args.questions), "decode": settings.to_dict(),
            "hardware": hardware(lm.device), "torch": torch_version(),
        },
        "methods": {},
    }
    v_rows = {qid: median_row(r) for qid, r in per_q["vanilla"].items()} if "vanilla" in per_q else None
    for m in methods:
        rows = {qid: median_row(r) for qid, r in per_q[m].items()}
        ids = list(rows)
        entry = {"overall": summarise([rows[i] for i in ids], [v_rows[i] for i in ids] if v_rows else None)}
        entry["per_category"] = {
            c: summarise([rows[i] for i in by_cat[c]], [v_rows[i] for i in by_cat[c]] if v_rows else None)
            for c in cats
        }
        if v_rows and args.repeats > 1:
            # Noise: the overall speed-up computed within each repetition alone.
            ups = []
            for rep in range(args.repeats):
                tok = sum(per_q[m][i][rep]["tokens"] for i in ids)
                sec = sum(per_q[m][i][rep]["seconds"] for i in ids)
                vtok = sum(per_q["vanilla"][i][rep]["tokens"] for i in ids)
                vsec = sum(per_q["vanilla"][i][rep]["seconds"] for i in ids)
                ups.append((tok / sec) / (vtok / vsec))
            entry["overall"]["speedup_min"] = min(ups)
            entry["overall"]["speedup_max"] = max(ups)
        report["methods"][m] = entry
    if any(METHOD_SPECS[m][1] == "cost" for m in methods):
        from .costmodel import measured_curves

        report["cost_curves"] = [c.to_dict() for c in measured_curves(lm.model)]
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
    print(f"lossless: {report['lossless']}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m logitspec.bench", description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=Path, required=True, help="Spec-Bench style .jsonl")
    p.add_argument("--categories", type=lambda s: [c for c in s.split(",") if c], default=None)
    p.add_argument("--limit-per-category", type=int, default=None)
    p.add_argument("--methods", type=lambda s: [m for m in s.split(",") if m], default=["vanilla", "pld", "logitspec"])
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--model", default="bundled")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--plot", type=Path, default=None, help="write figures (HTML, PNG) to this folder")
    return p


def main(argv: list[str] | None = None) -> int:
    from .limits import InputError, check_settings
    from .models import ModelLoadError

    args = build_parser().parse_args(argv)
    try:
        unknown = [m for m in args.methods if m not in METHOD_SPECS]
        if unknown:
            raise BenchInputError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHOD_SPECS)}")
        if "vanilla" not in args.methods:
            args.methods = ["vanilla"] + args.methods  # the reference every method is checked against
        if args.repeats < 1 or (args.limit_per_category is not None and args.limit_per_category < 1):
            raise BenchInputError("--repeats and --limit-per-category must be at least 1")
        check_settings(DecodeSettings(max_new_tokens=args.max_new_tokens))
        report = run_bench(args)
    except (BenchInputError, InputError, ModelLoadError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print_table(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        print(f"report: {args.out}")
    if args.plot:
        from .bench_plots import write_plots

        for path in write_plots(report, args.plot):
            print(f"figure: {path}")
    return 0 if report["lossless"] else 1


if __name__ == "__main__":
    sys.exit(main())

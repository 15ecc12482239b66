"""`python -m logitspec workbench`: decode a set of prompts with one or more methods into one set file.

    python -m logitspec workbench --questions coding --methods logitspec,pld --max-new 128 -o set.jsonl

--questions takes a Spec-Bench category of the shipped subset (data/spec_bench_subset.jsonl), `all`,
or a JSONL file of questions (question_id, category, turns). --methods takes methods, each with
settings of its own after a colon (`logitspec,logitspec:pool=longest` runs LogitSpec under both pools;
every table names such a run by the setting that differs). A prompt's runs are written once all have
finished (analysis/sets.py), so Ctrl-C keeps every finished prompt; the app's Workbench tab opens the
file, and runs the same decoding (`decode_set`) itself.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import parse_ngrams
from .analysis.lanes import methods
from .core.settings import POOLS, DecodeSettings

if TYPE_CHECKING:  # decoding imports torch; reading the run specs must not
    from .analysis.failures import RunSummary
    from .analysis.sets import SetWriter
    from .models import LoadedModel

SUBSET = Path(__file__).resolve().parents[1] / "data" / "spec_bench_subset.jsonl"
# The settings a run of the set may change after its method's colon, by the short name a spec uses.
RUN_SETTINGS = {"ngram": "ngram_sizes", "k": "k", "pool": "pool", "tree": "tree"}
SPEC_HELP = "method[:setting=value...], e.g. logitspec,logitspec:pool=longest,pld (settings: ngram=1-3, k, pool, tree)"


@dataclass(frozen=True)
class SetRun:
    """One way each prompt of a set is decoded: a method under its settings, named `label` in every table."""

    label: str
    method: str
    settings: DecodeSettings


@dataclass
class SetProgress:
    """Where a set's decoding is: prompt `prompt` (from 0) of `total`, under run `run`; once that
    prompt's runs are all written, `written` holds their summaries by label."""

    prompt: int
    total: int
    question: dict
    prompt_text: str
    run: str = ""
    written: dict[str, RunSummary] = field(default_factory=dict)


class SetStopped(Exception):
    """The set's decoding was stopped; the `done` prompts before it are written whole."""

    def __init__(self, done: int) -> None:
        super().__init__(f"stopped after {done} prompts")
        self.done = done


def add_parser(sub) -> None:
    """The workbench subcommand's options on the CLI's subparsers."""
    d = DecodeSettings()
    w = sub.add_parser("workbench", help="decode a set of prompts with one or more methods into one set file")
    w.add_argument("--questions", default="all",
                   help="a Spec-Bench category of the shipped subset, 'all', or a questions file (.jsonl)")
    w.add_argument("--limit", type=int, help="at most this many questions per category")
    w.add_argument("--methods", default="logitspec,pld", help=f"comma-separated {SPEC_HELP}; methods: {', '.join(methods())}")
    w.add_argument("--max-new", type=int, default=d.max_new_tokens, help="new tokens per run")
    w.add_argument("--ngram", type=parse_ngrams, default=d.ngram_sizes, help="n-gram sizes, e.g. 1-3")
    w.add_argument("--k", type=int, default=d.k, help="next-next candidates (top-k)")
    w.add_argument("--pool", choices=POOLS, default=d.pool)
    w.add_argument("--tree", choices=["static", "cost"], default=d.tree)
    w.add_argument("--model", default="bundled", help="'bundled', a local folder or .gguf, or a hub id")
    w.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    w.add_argument("-o", "--out", required=True, help="the set file to write (.jsonl, or .jsonl.gz)")
    w.add_argument("--csv", help="also write the failure summary here, the table the app shows and downloads")


def pick_questions(spec: str, limit: int | None) -> list[dict]:
    """The questions `spec` names: a category of the shipped subset, 'all', or a file (InputError otherwise)."""
    from .bench.questions import QuestionFileError, load_questions
    from .core.limits import InputError

    path = Path(spec)
    try:
        if spec.endswith((".jsonl", ".json")) or path.is_file():
            return load_questions(path, None, limit)
        cats = categories()
        if spec != "all" and spec not in cats:
            raise InputError(f"no questions file or category {spec!r}; categories: all, {', '.join(cats)}")
        return load_questions(SUBSET, None if spec == "all" else [spec], limit)
    except QuestionFileError as e:
        raise InputError(str(e)) from None


def categories() -> list[str]:
    """The Spec-Bench categories of the shipped subset."""
    from .bench.questions import load_questions

    return sorted({q["category"] for q in load_questions(SUBSET)})


def _setting(spec: str, item: str) -> tuple[str, Any]:
    """One `name=value` of a run spec as (DecodeSettings field, value); InputError naming the spec."""
    from .core.limits import InputError

    name, eq, value = item.partition("=")
    name, value = name.strip(), value.strip()
    if not eq or name not in RUN_SETTINGS or not value:
        raise InputError(f"{spec!r}: settings after a method look like ngram=1-3, k=16, pool=longest or tree=static")
    if name == "ngram":
        lo, _, hi = value.partition("-")
        if not (lo.isdigit() and (hi.isdigit() or not hi)):
            raise InputError(f"{spec!r}: n-gram sizes look like ngram=1-3 or ngram=2")
        return "ngram_sizes", tuple(range(int(lo), int(hi or lo) + 1))
    if name == "k":
        if not value.isdigit():
            raise InputError(f"{spec!r}: k must be a whole number")
        return "k", int(value)
    return RUN_SETTINGS[name], value


def set_runs(specs: str, values: dict[str, Any]) -> list[SetRun]:
    """The runs comma-separated `specs` name, each method's settings `values` with its own after a
    colon, checked (InputError in one line); a run given twice runs once. Labels: run_labels."""
    from .core.limits import InputError, checked_settings

    runs: list[tuple[str, DecodeSettings]] = []
    for spec in (s.strip() for s in specs.split(",")):
        if not spec:
            continue
        method, *items = (p.strip() for p in spec.split(":"))
        if method not in methods():
            raise InputError(f"unknown method {method!r}; choose from {', '.join(methods())}")
        s = checked_settings({**values, **dict(_setting(spec, i) for i in items)})
        if (method, s) not in runs:
            runs.append((method, s))
    if not runs:
        raise InputError(f"no method given; choose from {', '.join(methods())}")
    return [SetRun(label, m, s) for label, (m, s) in zip(run_labels(runs), runs)]


def _shown(name: str, value: Any) -> str:
    if name == "ngram_sizes":
        sizes = list(value)
        return "ngram=" + (f"{sizes[0]}-{sizes[-1]}" if sizes == list(range(sizes[0], sizes[-1] + 1)) else
                           "+".join(map(str, sizes)))
    return f"{name}={value}"


def run_labels(runs: list[tuple[str, DecodeSettings]]) -> list[str]:
    """Each run's name: its method, and where a method runs more than once, the settings in which its
    runs differ (`logitspec pool=longest`), read from the settings that ran."""
    labels = []
    for method, s in runs:
        mine = [x.to_dict() for m, x in runs if m == method]
        differ = [k for k in mine[0] if any(d[k] != mine[0][k] for d in mine)]
        own = s.to_dict()
        labels.append(" ".join([method, *(_shown(k, own[k]) for k in differ)]))
    return labels


def decode_set(lm: LoadedModel, questions: list[dict], prompts: list[str], runs: list[SetRun], writer: SetWriter,
               should_stop: Callable[[], bool] | None = None,
               stepper: Callable[[Iterator], Iterator] | None = None) -> Iterator[SetProgress]:
    """Decode every prompt under every run, writing a prompt's runs once all have finished.

    Yields a SetProgress as each run starts and once each prompt is written. `should_stop` is asked
    before every step (SetStopped when it says yes: the prompt under way is dropped); `stepper`
    takes a run's steps (the app's model thread), else they are taken here. A prompt's runs share
    its prefill (runtime/prefills.py), which is forgotten once they end: a set's memory stays that
    of one prompt, however many it holds.
    """
    from .core.profile import profile_of
    from .runner import Run

    for i, (q, prompt) in enumerate(zip(questions, prompts)):
        ids, traces = lm.encode_chat(prompt), {}
        store = profile_of(lm.model).prefills  # made by the model's first run that shares a prefill
        kept_before = store is not None and store.holds(lm.model, ids)  # a race's, say: it stays
        try:
            for r in runs:
                yield SetProgress(i, len(questions), q, prompt, r.label)
                run = Run(lm, prompt, r.method, r.settings, prompt_ids=ids)
                for _ in (stepper or iter)(iter(run)):
                    if should_stop is not None and should_stop():
                        raise SetStopped(i)
                if should_stop is not None and should_stop():
                    raise SetStopped(i)
                traces[r.label] = run.trace
        finally:
            store = profile_of(lm.model).prefills
            if store is not None and not kept_before:
                store.forget(lm.model, ids)
        written = {label: writer.add(i, q, t, label) for label, t in traces.items()}
        yield SetProgress(i, len(questions), q, prompt, "", written)


def set_header(lm: LoadedModel, questions: str, runs: list[SetRun]) -> dict:
    """A set file's header: the model, the machine, where the prompts came from and each run's settings."""
    from .bench.machine import hardware

    return {"model": lm.name, "dtype": lm.dtype, "machine": hardware(lm.device), "questions": questions,
            "methods": [r.label for r in runs], "runs": {r.label: r.method for r in runs},
            "settings": {r.label: r.settings.to_dict() for r in runs}}


def run(args: argparse.Namespace) -> int:
    """Decode every question with every run and write the set file prompt by prompt."""
    from .core.limits import InputError, check_prompt

    runs = set_runs(args.methods, dict(max_new_tokens=args.max_new, ngram_sizes=args.ngram, k=args.k,
                                       pool=args.pool, tree=args.tree))
    questions = pick_questions(args.questions, args.limit)
    prompts = [check_prompt(q["turns"][0]) for q in questions]
    out, table = Path(args.out), Path(args.csv) if args.csv else None
    for path, what in ((out, "the set file"), (table, "the CSV")):
        if path is not None and (path.is_dir() or not path.parent.is_dir()):
            raise InputError(f"cannot write {what} {path}: {'it is a folder' if path.is_dir() else 'no such folder'}")
    # torch and transformers load only once the input has passed its checks.
    from .analysis.sets import SetWriter
    from .models import load_model
    from .runtime.threads import configure_threads

    configure_threads()
    lm = load_model(args.model, None, args.dtype)
    done = 0
    with SetWriter(out, set_header(lm, args.questions, runs)) as w:
        try:
            for p in decode_set(lm, questions, prompts, runs, w):
                q = p.question
                for label, summary in p.written.items():
                    print(f"[{p.prompt + 1}/{p.total}] {q.get('category', '')} {q.get('question_id', '')} {label}: "
                          f"{summary.words()}", file=sys.stderr, flush=True)
                done += bool(p.written)
        except KeyboardInterrupt:
            print(f"stopped: {done} of {len(questions)} prompts written whole to {out}", file=sys.stderr)
            return 130
    print(f"wrote {out}: {len(questions)} prompts x {len(runs)} runs", file=sys.stderr)
    if table is not None:
        from .analysis.set_tables import summary_csv
        from .analysis.sets import read_set

        table.write_text(summary_csv(read_set(out)), encoding="utf-8")
        print(f"wrote {table}: the failure summary", file=sys.stderr)
    return 0

"""The files the app ships and writes: the example prompts, the recorded traces and races, and
a race's file for download. No components here."""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from logitspec.bench.questions import load_questions
from logitspec.core.limits import Limits
from serve.model_cache import BUNDLED, ModelCache
from logitspec.analysis.pays import PassCosts, read_pass_costs
from logitspec.analysis.race import RaceFile, load_race, read_race, save_race
from logitspec.core.trace import RunTrace
from logitspec.runtime.fewrows import cpu_description

ROOT = Path(__file__).resolve().parents[1]
TRACES_DIR = ROOT / "traces"
QUESTIONS = ROOT / "data" / "spec_bench_subset.jsonl"
# One example per kind of text; ids refer to data/spec_bench_subset.jsonl.
EXAMPLE_IDS = {"Summarisation": 242, "Code": 122, "Translation": 161, "Maths": 401,
               "Chat": 321, "RAG": 482}
RECORDED_RACE = TRACES_DIR / "races" / "summarization-242.json"  # the first screen's race
GALLERY_DIR = TRACES_DIR / "gallery"  # recorded races that show where each method wins
PASS_COSTS_DIR = ROOT / "data" / "pass_costs"  # other machines' measured c(n) (data/README.md)


def recorded_pass_costs() -> list[PassCosts]:
    """Every machine's measured pass costs the app ships, in file order."""
    return [c for path in sorted(PASS_COSTS_DIR.glob("*.json")) for c in read_pass_costs(path)]


def gallery_names() -> list[str]:
    """The gallery's race files (gzipped: a 9-lane race is about 1.5 MB as JSON)."""
    return sorted(p.name for p in GALLERY_DIR.glob("*.json.gz"))


def load_examples() -> list[tuple[str, str]]:
    """(label, prompt) for the example kinds, from the shipped Spec-Bench subset."""
    by_id = {q["question_id"]: q["turns"][0] for q in load_questions(QUESTIONS)}
    return [(label, by_id[qid]) for label, qid in EXAMPLE_IDS.items() if qid in by_id]


def shipped_traces() -> list[Path]:
    return sorted(TRACES_DIR.glob("*.json"))


def shipped_names() -> list[str]:
    return [p.name for p in shipped_traces()]


def recorded_examples() -> list[tuple[str, str, str]]:
    """(label, prompt, file name) of each shipped trace, for the cached examples."""
    out = []
    for path in shipped_traces():
        try:
            t = RunTrace.load(path)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a broken file is skipped here; opening it by name says why
        kind = path.stem.split("-")[0].capitalize()
        out.append((f"{kind}: {len(t.tokens)} tokens, {len(t.steps)} steps", t.prompt_text, path.name))
    return out


@functools.lru_cache(maxsize=1)
def recorded_race() -> tuple[dict[str, RunTrace], str] | None:
    """The first screen's recorded race (its lanes and machine), else None: read once for every
    visitor's page (parsing it was a quarter of a page load's server time), never changed."""
    return load_race(RECORDED_RACE) if RECORDED_RACE.is_file() else None


@functools.lru_cache(maxsize=1)
def recorded_logitspec() -> tuple[RunTrace | None, str]:
    """The recorded race's LogitSpec lane (else the first shipped trace) and its file name: what the
    Explain tab explains to a visitor with no run of their own. Read once, never changed."""
    race = recorded_race()
    if race is not None:
        return race[0].get("logitspec"), RECORDED_RACE.name
    files = shipped_traces()
    return (RunTrace.load(files[0]), files[0].name) if files else (None, "")


RACE_FILE_PREFIX = "logitspec-race-"  # how the name of a race file the app writes begins


def race_file_name(traces: dict[str, RunTrace], stop_reason: str | None) -> str:
    """A race file's name: a race, its lanes, how far it got, and whether it was cut short
    ("logitspec-race-vanilla_logitspec-stopped-19tok.json"); a lane's name holds no "_". How far is
    LogitSpec's lane's count (else the first lane's), the count the verdict's "Stopped after" says."""
    lanes = "_".join(traces).replace("+", "plus")
    cut = f"-{stop_reason.replace(' ', '-')}" if stop_reason else ""
    counted = traces.get("logitspec") or next(iter(traces.values()))
    return f"{RACE_FILE_PREFIX}{lanes}{cut}-{len(counted.tokens)}tok.json"


def write_race_file(traces: dict[str, RunTrace], stop_reason: str | None) -> str:
    """A live race, every lane of it, as a race file in Gradio's temp area, for the download button:
    the verdict's inputs (the traces, why it stopped) and the machine it ran on (this CPU, when
    every lane ran on one; a GPU's name is not known here)."""
    machine = cpu_description() if all(t.device == "cpu" for t in traces.values()) else ""
    path = Path(tempfile.mkdtemp(prefix="logitspec-")) / race_file_name(traces, stop_reason)
    save_race(traces, path, machine, stop_reason)
    return str(path)


def read_lanes(p: Path, models: ModelCache) -> RaceFile:
    """The checked lanes in trace or race file `p`, the machine a race ran on and why it stopped (ids
    checked against the real vocabulary once its model is loaded); InputError saying what is wrong otherwise."""
    limit = Limits.from_env().trace_bytes
    race = read_race(p, limit)
    lm = models.loaded(BUNDLED)
    if lm is not None and any(t.model == lm.name for t in race.lanes.values()):
        race = read_race(p, limit, len(lm.tokenizer))
    return race

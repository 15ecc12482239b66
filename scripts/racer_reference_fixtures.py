"""Record what hkr04/RACER's own automaton drafts, step by step, for tests/unit/test_racer_reference.py.

    .venv/bin/python scripts/racer_reference_fixtures.py --checkout /tmp/RACER --build-python /tmp/cy/bin/python

`--checkout`: a work tree of hkr04/RACER at the commit to compare against (recorded in the fixture;
`--commit` names it where the tree was put together from that commit's stored files rather than
checked out); its racer/automaton (Cython + C++) is built in a scratch copy by `--build-python`, a
Python of the same version with Cython and setuptools, and loaded here. Nothing of it enters this
repository: the fixture holds the token histories and, per step, a digest of the reference's draft tree.
Two fixtures are checked: fc494a3 (FIXTURE, the first public version) and 4b25165 (LATER), whose
Logits Tree gives the root's children the paper's breadths; its tree is fc494a3's with
racer/automaton/src/automaton.cpp as stored at 4b25165 (`--commit 4b251651e8830d1ce566a29c239c2111985b90bc
--out tests/fixtures/racer_reference_4b25165.json.gz`).

Each context is a Spec-Bench question's tokens (bundled tokenizer): the first `PROMPT` tokens are the
prompt, and what follows them, then a quote of the prompt, stands for the model's output. Both
drafters read the same history and the same logits rows (seeded top-k lists over the context's own
tokens, the true next token among them on the accepted path): every prompt position's row, then
every drafted node's row after each pass, as the reference's loop stores them
(evaluation/inference_racer.py:51-53, 108-110). A step accepts the drafted path that matches the
output longest, as greedy verification would; the next root is the output's next token.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import random
import shutil
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "racer_reference.json.gz"
LATER = ROOT / "tests" / "fixtures" / "racer_reference_4b25165.json.gz"
QUESTIONS = (Path("/work/shared/data/spec_bench/question.jsonl"), ROOT / "data" / "spec_bench_subset.jsonl")
PROMPT, QUOTE, OUTPUT, STEPS, PER_CATEGORY = 96, 24, 24, 40, 26
BREADTH, NODES, DRAFTS = 8, 10000, 64  # the reference's defaults (evaluation/inference_racer.py:197-220)


@dataclass
class Context:
    """One replayed decode: its tokens (prompt, then the output) and where the output starts."""

    name: str
    tokens: list[int]
    prompt: int
    seed: int
    steps: list[tuple[int, int]] = field(default_factory=list)  # per step: (nodes, crc32 of the tree)

    @cached_property
    def vocabulary(self) -> list[int]:
        return sorted(set(self.tokens))


def tree_digest(paths: list[list[int]]) -> tuple[int, int]:
    """A draft tree's node count and a crc32 of its nodes' token paths from the root, sorted."""
    nodes = sorted({tuple(p[:j]) for p in paths for j in range(1, len(p) + 1)})
    return len(nodes), zlib.crc32(json.dumps(nodes).encode())


def row(ctx: Context, step: int, token: int, truth: int | None) -> list[int]:
    """The top-BREADTH row after `token` at a step: the context's tokens drawn by a seeded
    generator, with the true next token at a drawn rank (60% of the time) where there is one."""
    rng = random.Random(f"{ctx.seed}:{step}:{token}")
    out = rng.sample(ctx.vocabulary, min(BREADTH, len(ctx.vocabulary)))
    if truth is not None and rng.random() < 0.6 and truth not in out:
        out[rng.randrange(len(out))] = truth
    return out


def replay(ctx: Context, lane) -> list[tuple[int, int]]:
    """Run a drafter (`lane`: start, draft, heard) over the context; each step's tree digest."""
    toks, p = ctx.tokens, ctx.prompt
    prompt_rows = [(toks[i], row(ctx, -1, toks[i], toks[i + 1])) for i in range(p)]
    lane.start(toks[:p], prompt_rows)
    out = []
    for step in range(STEPS):
        if p >= len(toks):
            break
        paths = lane.draft(toks[p])
        out.append(tree_digest(paths))
        accepted = max((_agree(path, toks[p:]) for path in paths), default=1) - 1
        truth = {toks[p + j]: toks[p + j + 1] for j in range(accepted + 1) if p + j + 1 < len(toks)}
        tokens = sorted({t for path in paths for t in path})
        lane.heard(toks[:p + accepted + 1], [(t, row(ctx, step, t, truth.get(t))) for t in tokens])
        p += accepted + 1
    return out


def _agree(path: list[int], text: list[int]) -> int:
    n = 0
    while n < min(len(path), len(text)) and path[n] == text[n]:
        n += 1
    return n


class ReferenceLane:
    """hkr04/RACER's automaton driven as its loop drives it (evaluation/inference_racer.py:51-121)."""

    def __init__(self, module) -> None:
        self.module = module

    def start(self, prompt: list[int], rows) -> None:
        self.ac = self.module.Automaton(NODES)
        self.ac.init_logits(49152, BREADTH)
        self.ac.update([t for t, _ in rows], [r for _, r in rows])
        for i in range(len(prompt) - 10 + 1):
            self.ac.insert(prompt[i:i + 10])
        self.ac.build()
        self.read = len(prompt)

    def draft(self, root: int) -> list[list[int]]:
        return [list(c) for c in self.ac.retrieve(root, DRAFTS, False).candidates]

    def heard(self, text: list[int], rows) -> None:
        self.ac.update([t for t, _ in rows], [r for _, r in rows])
        for end in range(len(text), max(self.read, 9), -1):
            self.ac.insert(text[end - 10:end])
        if len(text) - self.read > 1:
            self.ac.trans_tokens(text[self.read + 1:])
        self.read = len(text)


def build_reference(checkout: Path, python: str):
    """The checkout's racer/automaton built in a scratch copy and imported."""
    work = Path(tempfile.mkdtemp(prefix="racer_ref_"))
    shutil.copytree(checkout / "racer" / "automaton", work / "automaton")
    subprocess.run([python, "setup.py", "build_ext", "--inplace"], cwd=work / "automaton", check=True,
                   stdout=subprocess.DEVNULL)
    lib = next((work / "automaton").glob("Automaton*.so"))
    spec = importlib.util.spec_from_file_location("Automaton", lib)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contexts() -> list[Context]:
    """Spec-Bench questions, up to PER_CATEGORY a category: prompt, then its output (the next
    tokens, a quote of the prompt, the next ones again) as the replay's truth."""
    from logitspec.models import bundled_gguf
    from transformers import AutoTokenizer

    folder, name = bundled_gguf()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    path = next(p for p in QUESTIONS if p.is_file())
    taken: dict[str, int] = {}
    out = []
    for line in path.read_text().splitlines():
        q = json.loads(line)
        if taken.get(q["category"], 0) >= PER_CATEGORY:
            continue
        ids = tok(" ".join(q["turns"])).input_ids
        if len(ids) < PROMPT // 2:
            ids = ids * (PROMPT // len(ids) + 1)  # a short question read twice: its repeats are retrieval's
        p = min(PROMPT, len(ids) - OUTPUT // 2)
        start = (q["question_id"] * 7) % max(1, p - QUOTE)
        tokens = ids[:p] + ids[p:p + OUTPUT // 2] + ids[start:start + QUOTE] + ids[p + OUTPUT // 2:p + OUTPUT]
        taken[q["category"]] = taken.get(q["category"], 0) + 1
        out.append(Context(f"{q['category']}-{q['question_id']}", tokens, p, int(q["question_id"])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, required=True)
    ap.add_argument("--build-python", default=sys.executable)
    ap.add_argument("--commit", help="the checkout's commit (default: its git HEAD)")
    ap.add_argument("--out", type=Path, default=FIXTURE)
    args = ap.parse_args()
    commit = args.commit or subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"],
                                           capture_output=True, text=True, check=True).stdout.strip()
    ref = ReferenceLane(build_reference(args.checkout, args.build_python))
    ctxs = contexts()
    for c in ctxs:
        c.steps = replay(c, ref)
    doc = {"reference": "hkr04/RACER", "commit": commit, "prompt": PROMPT, "steps": STEPS,
           "contexts": [{"name": c.name, "seed": c.seed, "prompt": c.prompt, "tokens": c.tokens, "steps": c.steps}
                        for c in ctxs]}
    args.out.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), 9, mtime=0))
    print(f"{len(ctxs)} contexts, {sum(len(c.steps) for c in ctxs)} steps, commit {commit[:7]}: "
          f"{args.out} ({args.out.stat().st_size / 1024:.1f} KB)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()

"""Record what Luowaterbi/TokenRecycling's own code drafts, pass by pass, for tests/unit/test_recycling_reference.py.

    git clone https://github.com/Luowaterbi/TokenRecycling /tmp/TokenRecycling
    PYTHONPATH=. .venv/bin/python scripts/recycling_reference_fixtures.py --checkout /tmp/TokenRecycling

The checkout's tree template (model/recycling/tree_template_.py, version "2.2.2") and the two
functions of evaluation/inference_recycling.py that fill it from the adjacency matrix
(`prepare_data`, `prepare_data_input_ids`, nested in `recycling_forward`) are loaded from its files
and run here on the CPU; their matrix starts as zeros and every pass writes every node's row into it
(`adj_matrix[input_ids] = topk`), as `recycling_forward` does. Nothing of the checkout enters this
repository: the fixture holds the commit, the contexts' tokens and a digest of each pass's tree,
with the first trees whole. The replay itself is tests/helpers/recycling_reference.py.
"""
from __future__ import annotations

import argparse
import ast
import gzip
import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from helpers.recycling_reference import FIXTURE, K, digest, replay  # noqa: E402

QUESTIONS = ROOT / "data" / "spec_bench_subset.jsonl"
TEMPLATE = "2.2.2"  # recycling_forward's default tree_version
WHOLE = 4  # trees kept whole in the fixture, for a readable difference


def authors_functions(checkout: Path) -> tuple[list, dict]:
    """The template, and `prepare_data` and `prepare_data_input_ids` compiled from their source,
    with `torch` whose CUDA devices are this CPU."""
    spec = importlib.util.spec_from_file_location("tree_template_", checkout / "model/recycling/tree_template_.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    template = mod.choose_tree_template(TEMPLATE)
    source = (checkout / "evaluation/inference_recycling.py").read_text()
    outer = next(f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef) and f.name == "recycling_forward")
    wanted = [f for f in outer.body if isinstance(f, ast.FunctionDef)
              and f.name in ("prepare_data", "prepare_data_input_ids")]
    cpu = types.SimpleNamespace(**{n: getattr(torch, n) for n in ("zeros", "zeros_like", "long", "tensor")},
                                device=lambda *a, **k: torch.device("cpu"))
    scope = {"torch": cpu, "pad_len": len(template[-1]) + 1, "output_id_topk": K}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "inference_recycling.py", "exec"), scope)
    return template, scope


def contexts(tokenizer, per_category: int) -> list[dict]:
    """Questions of every category of the shipped subset, as token lists."""
    taken: dict[str, int] = {}
    out = []
    for line in QUESTIONS.read_text().splitlines():
        q = json.loads(line)
        if taken.get(q["category"], 0) < per_category:
            taken[q["category"]] = taken.get(q["category"], 0) + 1
            text = "\n".join(q["turns"])
            out.append({"name": f"{q['category']}-{q['question_id']}", "tokens": tokenizer(text)["input_ids"][:160]})
    return out


def record(checkout: Path, per_category: int) -> dict:
    from logitspec.models import load_model

    torch.Tensor.cuda = lambda self, *a, **k: self  # their tensors go to 'cuda:0': here, the CPU
    template, fns = authors_functions(checkout)
    tok = load_model("bundled").tokenizer
    vocab = len(tok)
    _, _, _, father, candi, split = fns["prepare_data"](template, torch.zeros(1, 1, dtype=torch.long))
    adj = torch.zeros((vocab, K), dtype=torch.long)  # shared by every question: their hot start

    def draft(root: int):
        ids = fns["prepare_data_input_ids"](torch.tensor([root]), adj, father, candi, split)[0]
        return ids.tolist(), father.tolist()

    def update(tokens: list[int], rows: list[list[int]]) -> None:
        adj[torch.tensor(tokens)] = torch.tensor(rows)

    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    ctxs = contexts(tok, per_category)
    for seed, c in enumerate(ctxs):
        trees = replay(c["tokens"], seed, vocab, draft, update)
        c["digests"] = [digest(t) for t in trees]
        c["whole"] = trees[:WHOLE] if seed == 0 else []
    return {"reference": "Luowaterbi/TokenRecycling", "commit": commit, "template": TEMPLATE, "k": K,
            "vocab": vocab, "contexts": ctxs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, required=True, help="a work tree of Luowaterbi/TokenRecycling")
    ap.add_argument("--per-category", type=int, default=1)
    args = ap.parse_args()
    fixture = record(args.checkout, args.per_category)
    FIXTURE.write_bytes(gzip.compress(json.dumps(fixture, separators=(",", ":")).encode(), mtime=0))
    passes = sum(len(c["digests"]) for c in fixture["contexts"])
    print(f"{FIXTURE}: {len(fixture['contexts'])} contexts, {passes} passes, commit {fixture['commit'][:12]}, "
          f"{FIXTURE.stat().st_size} bytes")


if __name__ == "__main__":
    main()

"""vLLM engines as the engine tests run them (tests/engines): one process per engine, through the
bench's runner, each decoding the questions at each batch size."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT

MAX_TOKENS = 48  # every engine test's answer length


def decode(method: str, model_dir: Path, questions_file: Path, out: Path, batches: str = "1,8") -> dict:
    """One vLLM engine (its own process) decoding the questions at each batch size, as
    logitspec.bench.engines runs it; its phases by batch size."""
    path = out / f"{method}.json"
    subprocess.run([sys.executable, "-m", "logitspec.bench.engines", "--one-method", method, "--json-out", str(path),
                    "--model", str(model_dir), "--questions", str(questions_file), "--limit-per-category", "2",
                    "--max-new-tokens", str(MAX_TOKENS), "--k", "5", "--batches", batches],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return {p["batch"]: p for p in json.loads(path.read_text())["phases"]}

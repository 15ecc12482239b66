"""The engine tests run in the engine venv (.venv-vllm, `make test`): the bundled model exported
once to a transformers folder, the Spec-Bench prompts they decode, and vLLM's own answers to them
without speculation (one engine a run, which both the offline and the served checks compare with)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.vllm_runs import decode

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = ROOT / "artifacts" / "engines" / "model"
CATEGORIES = ("summarization", "coding", "rag", "translation")  # 2 questions each: a batch of 8


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The bundled model as vLLM reads it, float32, exported once and kept under artifacts/."""
    if not (MODEL_DIR / "config.json").exists():
        from logitspec.export import export_model

        MODEL_DIR.parent.mkdir(parents=True, exist_ok=True)
        tmp = MODEL_DIR.with_name("model.partial")
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp)
        export_model(tmp)
        tmp.rename(MODEL_DIR)
    return MODEL_DIR


@pytest.fixture(scope="session")
def questions_file(tmp_path_factory) -> Path:
    """Two Spec-Bench questions of each of CATEGORIES, in the bench's question format."""
    from logitspec.bench.questions import load_questions

    qs = load_questions(ROOT / "data" / "spec_bench_subset.jsonl", list(CATEGORIES), limit=2)
    path = tmp_path_factory.mktemp("questions") / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in qs))
    return path


@pytest.fixture(scope="session")
def plain(model_dir, questions_file, tmp_path_factory) -> dict:
    """vLLM without speculation on the questions, at batch 1 and 8: the answers every check compares with."""
    return decode("none", model_dir, questions_file, tmp_path_factory.mktemp("plain"))

"""The engine tests run in the engine venv (.venv-vllm, `make test`): the bundled model exported
once to a transformers folder, the Spec-Bench prompts they decode, and a free port."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

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

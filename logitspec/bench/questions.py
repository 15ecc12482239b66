"""Spec-Bench questions (question_id, category, turns), as the bench and the app's examples read them."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path


class QuestionFileError(ValueError):
    """A questions file the bench cannot use; the message says where and why."""


def load_questions(path: Path, categories: list[str] | None = None, limit: int | None = None) -> list[dict]:
    """Questions in Spec-Bench format (question_id, category, turns); first turn used."""
    if not path.is_file():
        raise QuestionFileError(f"questions file not found: {path}")
    out, per_cat = [], defaultdict(int)
    for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            raise QuestionFileError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
        if not isinstance(q, dict) or not {"question_id", "category", "turns"} <= q.keys():
            raise QuestionFileError(f"{path}:{lineno}: a question needs question_id, category and turns")
        if not isinstance(q["turns"], list) or not q["turns"] or not isinstance(q["turns"][0], str):
            raise QuestionFileError(f"{path}:{lineno}: turns must be a non-empty list of strings")
        if categories and q["category"] not in categories:
            continue
        if limit is not None and per_cat[q["category"]] >= limit:
            continue
        per_cat[q["category"]] += 1
        out.append(q)
    if not out:
        raise QuestionFileError(f"no questions selected from {path}")
    return out

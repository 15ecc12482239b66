"""Spec-Bench questions (question_id, category, turns), as the bench and the app's examples read them."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path


class QuestionFileError(ValueError):
    """A questions file the bench cannot use; the message says where and why."""


def load_questions(path: Path, categories: list[str] | None = None, limit: int | None = None) -> list[dict]:
    """Questions in Spec-Bench format (question_id, category, turns); first turn used."""
    out, per_cat = [], defaultdict(int)
    for lineno, line in enumerate(_question_lines(path), 1):
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


def _question_lines(path: Path) -> list[str]:
    """The file's lines; QuestionFileError in one line for a folder, a missing or unreadable file,
    and for the project's own trace and race files, which hold runs rather than questions."""
    if path.is_dir():
        raise QuestionFileError(f"{path} is a folder, not a questions file")
    if not path.is_file():
        raise QuestionFileError(f"questions file not found: {path}")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise QuestionFileError(f"{path}: could not be read ({e.strerror or e})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise QuestionFileError(f"{path} is not UTF-8 text (bad byte at position {e.start}), not a questions "
                                "file (JSON lines)") from None
    if not text.strip():
        raise QuestionFileError(f"{path} is empty: a questions file holds one JSON question a line")
    # Whole-file JSON is never a question list (one object a line); say what it is when it is ours.
    kind = _run_file_kind(text)
    if kind:
        raise QuestionFileError(f"{path} is {kind}, not a questions file (JSON lines: one question a line, "
                                "with question_id, category and turns)")
    return text.splitlines()


def _run_file_kind(text: str) -> str:
    """'a recorded race' or 'a LogitSpec trace' when the text is one of those files, else ''."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return ""  # JSON lines (or not JSON at all): read line by line
    form = str(data.get("format", "")) if isinstance(data, dict) else ""
    if form.startswith("logitspec-race/"):
        return "a recorded race"
    if form.startswith("logitspec-trace/") or (isinstance(data, dict) and {"steps", "prompt_tokens"} <= data.keys()):
        return "a LogitSpec trace"
    return ""

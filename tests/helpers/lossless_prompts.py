"""Prompts of many kinds for the lossless checks on the bundled model.

Most come from the Spec-Bench subset shipped in data/ (Apache-2.0, see its attribution);
a few are written here to cover what the subset lacks: a one-line chat, an answer that ends
on EOS early, a long verbatim copy and a summary of more than 1,000 prompt tokens.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from helpers.paths import SPEC_BENCH


@dataclass(frozen=True)
class LosslessPrompt:
    """One prompt: an id for the test name, what kind of text it is, and the user message."""

    id: str
    kind: str
    text: str


@cache
def spec_bench() -> dict[int, dict]:
    """The Spec-Bench questions by question_id."""
    with SPEC_BENCH.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {int(r["question_id"]): r for r in rows}


def first_turn(qid: int) -> str:
    return spec_bench()[qid]["turns"][0]


def long_summary() -> str:
    """Two Spec-Bench news articles to summarise together: well over 1,000 prompt tokens."""
    a = first_turn(241).removeprefix("Summarize: ")
    b = first_turn(242).removeprefix("Summarize: ")
    return f"Summarize the two news articles below, one paragraph each.\n\nArticle 1:\n{a}\n\nArticle 2:\n{b}"


# (Spec-Bench question id, kind) drawn into the suite.
SPEC_BENCH_IDS: list[tuple[int, str]] = [
    (81, "writing"), (91, "roleplay"), (101, "reasoning"), (111, "math"), (401, "math"),
    (121, "code"), (122, "code"), (131, "extraction"), (141, "stem"), (152, "humanities"),
    (161, "translation"), (162, "translation"), (241, "summarization"), (481, "rag"), (321, "chat"),
]

WRITTEN: list[LosslessPrompt] = [
    LosslessPrompt("chat-hello", "chat", "Hi! How are you today?"),
    LosslessPrompt("eos-capital", "eos", "What is the capital of France? Reply with the city name only."),
    LosslessPrompt("code-complete", "code",
                   "Complete this Python function and nothing else:\n\n"
                   "def is_palindrome(s: str) -> bool:\n    \"\"\"True if s reads the same backwards.\"\"\"\n"),
    LosslessPrompt("copy-list", "copy",
                   "Copy this list exactly, one item per line: apples, pears, plums, cherries, "
                   "apples, pears, plums, cherries, apples, pears, plums, cherries."),
    LosslessPrompt("translate-fr", "translation", "Translate into French: The cat sleeps on the warm windowsill."),
]


def lossless_prompts() -> list[LosslessPrompt]:
    """All prompts of the lossless suite (more than 20, of different kinds)."""
    out = [LosslessPrompt(f"{kind}-{qid}", kind, first_turn(qid)) for qid, kind in SPEC_BENCH_IDS]
    out += WRITTEN
    out.append(LosslessPrompt("long-summary", "long", long_summary()))
    return out

"""Argument types and options shared by the command lines (generate, workbench, the bench)."""
from __future__ import annotations

import argparse


def parse_ngrams(text: str) -> tuple[int, ...]:
    """'1,2,3' or '1-3' -> (1, 2, 3)."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            return tuple(range(lo, hi + 1))
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"n-gram sizes must look like 1,2,3 or 1-3, got {text!r}") from e


def number(text: str) -> int | float | str:
    """A number as typed (int if whole), or the text itself, which check_settings then refuses
    in one line: argparse's own refusal prints a usage block as well."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def add_processor_options(p: argparse.ArgumentParser) -> None:
    """generate's most used logits processors, applied to every tree node with its own prefix;
    left out, each applies nothing (logitspec.core.settings.INERT)."""
    p.add_argument("--repetition-penalty", type=number, help="above 1 makes tokens already in the text less likely")
    p.add_argument("--no-repeat-ngram-size", type=number, help="no n-gram of this size appears twice")
    p.add_argument("--min-new-tokens", type=number, help="no end of text before this many new tokens")


def processor_options(args: argparse.Namespace) -> dict:
    """The logits-processor options given on the command line, by their generate names."""
    given = {"repetition_penalty": args.repetition_penalty, "no_repeat_ngram_size": args.no_repeat_ngram_size,
             "min_new_tokens": args.min_new_tokens}
    return {name: value for name, value in given.items() if value is not None}

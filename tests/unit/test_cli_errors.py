"""No traceback, ever, in the CLI: a refused model and any failure while decoding reach the
user as one line on stderr with a non-zero exit status."""
from __future__ import annotations

import json

import pytest
from transformers import BloomConfig

import logitspec.core.loop
import logitspec.models
from helpers.commands import cli
from helpers.gguf_files import write_gguf
from logitspec.cli import main


def run_main(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main(["generate", *argv])
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    return code, [line for line in out.err.splitlines() if line.strip()]


def test_an_unexpected_error_while_loading_is_one_line(capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the loader broke\nwith a second line")

    monkeypatch.setattr(logitspec.models, "load_model", broken)
    code, lines = run_main(capsys, "Hello")
    assert code == 1 and lines == ["error: RuntimeError: the loader broke"]


def test_a_failure_inside_decoding_is_one_line(capsys, monkeypatch, tmp_path):
    path = write_gguf(tmp_path / "tiny.gguf")

    def broken(*args, **kwargs):
        raise IndexError("index 7 is out of bounds")

    monkeypatch.setattr(logitspec.core.loop, "verify_tree", broken)
    code, lines = run_main(capsys, "t1 t2 t3", "--model", str(path), "--no-chat", "--max-new-tokens", "4")
    assert code == 1 and lines[-1] == "error: IndexError: index 7 is out of bounds"


def test_a_refused_family_exits_with_its_reason_and_no_traceback(capsys, tmp_path):
    BloomConfig().save_pretrained(tmp_path)  # a config and no weights
    code, lines = run_main(capsys, "Hello", "--model", str(tmp_path))
    assert code != 0 and len(lines) == 1 and lines[0].startswith("error:") and "ALiBi" in lines[0]


def test_an_unreadable_gguf_architecture_exits_with_its_reason(capsys, tmp_path):
    path = write_gguf(tmp_path / "odd.gguf", arch="made-up-arch", weights=False)
    code, lines = run_main(capsys, "Hello", "--model", str(path))
    assert code != 0 and len(lines) == 1 and lines[0].startswith("error:") and "cannot read GGUF files of architecture" in lines[0]


@pytest.mark.slow
def test_a_tiny_gguf_generates_through_the_cli(tmp_path):
    """A GGUF file through the entry point as a process, end to end."""
    path = write_gguf(tmp_path / "tiny.gguf")
    proc = cli("t1 t2 t3 t1 t2 t3 t1 t2", "--model", str(path), "--no-chat", "--max-new-tokens", "12", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["model"] == "tiny" and len(out["tokens"]) == 12


@pytest.mark.parametrize("flag, value, words", [
    ("--temperature", "-0.1", "temperature must be a number from 0"),
    ("--temperature", "2.5", "temperature must be a number from 0"),
    ("--top-p", "0", "top-p must be a number above 0"),
    ("--top-p", "1.5", "top-p must be a number above 0"),
    ("--top-k", "-3", "top-k must be a whole number"),
    ("--top-k", "2.5", "top-k must be a whole number"),
    ("--seed", "1.5", "seed must be a whole number"),
    ("--seed", "twelve", "seed must be a whole number"),
])
def test_bad_sampling_flags_are_one_line(capsys, flag, value, words):
    code, lines = run_main(capsys, "Hello", flag, value)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0]

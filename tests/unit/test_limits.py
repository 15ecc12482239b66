"""One set of input limits, enforced by the library and the CLI with clear messages."""
from __future__ import annotations

import pytest

from helpers.commands import in_process
from logitspec.cli import main
from logitspec.core.settings import DecodeSettings
from logitspec.core.limits import InputError, Limits, check_context, check_prompt, check_settings


@pytest.mark.parametrize("prompt, message", [
    ("", "empty"),
    ("   \n\t ", "empty"),
    ("hello\x00world", r"control character \(U\+0000\)"),
    ("bell \x07", r"control character \(U\+0007\)"),
    ("lone \ud800 surrogate", "lone surrogate"),
    (b"\xff\xfe bytes", "not valid UTF-8"),
    ("x" * 1_000_000, "1,000,000 characters; the limit is 100,000"),
    (42, "must be text"),
])
def test_bad_prompts_are_refused_with_a_reason(prompt, message):
    with pytest.raises(InputError, match=message):
        check_prompt(prompt, Limits())


def test_good_prompts_pass_unchanged():
    text = "Résumé:\n\tline two — ✓ 漢字"
    assert check_prompt(text, Limits()) == text
    assert check_prompt(text.encode("utf-8"), Limits()) == text


@pytest.mark.parametrize("field, value, message", [
    ("max_new_tokens", 0, "max new tokens must be a whole number from 1 to 1024"),
    ("max_new_tokens", 1025, "max new tokens"),
    ("k", 0, "k \\(next-next candidates\\) must be a whole number from 1 to 256"),
    ("k", 257, "k "),
    ("capacity", 0, "tree capacity must be a whole number from 1 to 256"),
    ("capacity", 300, "tree capacity"),
    ("cpu_capacity", 0, "CPU tree capacity must be a whole number from 1 to 256"),
    ("ngram_sizes", (0, 1), "n-gram size must be a whole number from 1 to 5"),
    ("ngram_sizes", (6,), "n-gram size"),
    ("ngram_sizes", (), "at least one n-gram size"),
    ("tree", "bushy", "tree must be 'static' or 'cost'"),
    ("k", True, "k "),
])
def test_settings_out_of_range_are_refused(field, value, message):
    with pytest.raises(InputError, match=message):
        check_settings(DecodeSettings(**{field: value}), Limits())


def test_settings_at_the_edges_pass():
    for s in (DecodeSettings(max_new_tokens=1, k=1, capacity=1, ngram_sizes=(1,)),
              DecodeSettings(max_new_tokens=1024, k=256, capacity=256, ngram_sizes=(1, 2, 3, 4, 5))):
        assert check_settings(s, Limits()) is s


def test_context_cap_and_model_context():
    check_context(3000, 1000, 8192, Limits())  # 4,000 <= the 4,096 cap
    with pytest.raises(InputError, match="the context cap of 4,096"):
        check_context(3500, 1000, 8192, Limits())
    with pytest.raises(InputError, match="the model's context of 2,048"):
        check_context(2000, 100, 2048, Limits())


def test_limits_are_overridden_by_the_environment(monkeypatch):
    monkeypatch.setenv("LOGITSPEC_CONTEXT_CAP", "8192")
    monkeypatch.setenv("LOGITSPEC_MAX_NEW_TOKENS", "2048")
    lim = Limits.from_env()
    assert lim.context_cap == 8192 and lim.max_new_tokens == 2048 and lim.k == 256
    monkeypatch.setenv("LOGITSPEC_K", "many")
    with pytest.raises(InputError, match="LOGITSPEC_K='many' is not a number"):
        Limits.from_env()


@pytest.mark.parametrize("args, message", [
    (["hello\x07"], "control character"),
    (["x" * 120_000], "the limit is 100,000"),  # argv holds at most 128 KiB per argument
    (["hi", "--k", "0"], "k (next-next candidates)"),
    (["hi", "--capacity", "999"], "tree capacity"),
    (["hi", "--ngram", "1-7"], "n-gram size"),
    (["hi", "--max-new-tokens", "5000"], "max new tokens"),
])
def test_cli_refuses_bad_input_before_loading_a_model(args, message, capsys, monkeypatch):
    from logitspec import models

    def no_load(*a, **kw):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(models, "load_model", no_load)
    r = in_process(main, capsys, "generate", *args)  # the CLI as a process: tests/unit/test_cli.py
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow  # tokenizes on the bundled model: the full tier's
def test_cli_refuses_a_prompt_longer_than_the_context_cap(bundled, capsys, monkeypatch):
    from logitspec import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: bundled)  # the session's model
    long = "word " * 5000
    r = in_process(main, capsys, "generate", long, "--max-new-tokens", "16")
    assert r.returncode == 2
    assert "exceeds the context cap of 4,096 tokens" in r.stderr or "exceeds the model's context" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("field, value, message", [
    ("temperature", -0.01, "temperature must be a number from 0 \\(greedy\\) to 2"),
    ("temperature", 2.01, "temperature must be a number"),
    ("temperature", float("nan"), "temperature must be a number"),
    ("temperature", "hot", "temperature must be a number"),
    ("top_p", 0.0, "top-p must be a number above 0 and at most 1"),
    ("top_p", 1.01, "top-p"),
    ("top_k", -1, "top-k must be a whole number, 0 \\(off\\) or more"),
    ("top_k", 3.5, "top-k"),
    ("seed", 1.5, "seed must be a whole number"),
    ("seed", "7", "seed must be a whole number"),
    ("seed", -1, "seed must be a whole number"),
    ("seed", True, "seed"),
])
def test_sampling_settings_out_of_range_are_refused(field, value, message):
    with pytest.raises(InputError, match=message):
        check_settings(DecodeSettings(**{field: value}), Limits())


def test_sampling_settings_at_the_edges_pass():
    for s in (DecodeSettings(temperature=0, top_p=1.0, top_k=0, seed=0),
              DecodeSettings(temperature=2, top_p=1e-6, top_k=10**6, seed=2**63 - 1)):
        assert check_settings(s, Limits()) is s


def test_a_size_reads_in_kb_under_a_megabyte_and_in_mb_over():
    from logitspec.core.limits import size_words

    assert size_words(300) == "1 kB" and size_words(48_000) == "47 kB" and size_words(999 * 2**10) == "999 kB"
    assert size_words(1000 * 2**10) == "1.0 MB" and size_words(2**20) == "1.0 MB" and size_words(20 * 2**20) == "20.0 MB"

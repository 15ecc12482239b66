"""`python -m logitspec generate`: its JSON contract and clear refusals of bad input."""
from __future__ import annotations

import json

import pytest
import torch

from helpers.commands import assert_refused, cli
from logitspec.cli import main
from logitspec.core.settings import DecodeSettings
from logitspec.runner import run_trace


# Each case a user hits first runs as a real process: exit status, stderr, no traceback.

def test_empty_prompt():
    assert_refused(cli("", "--json"), "error:", "prompt is empty")


def test_max_new_tokens_zero():
    assert_refused(cli("Hello", "--max-new-tokens", "0", "--json"), "error:", "max new tokens", "got 0")


# More bad input through the same entry point, in this process (a process start costs seconds).

def main_refuses(capsys, *argv: str) -> str:
    """Run the CLI's main; return its stderr after checking it refused without a traceback."""
    try:
        code = main(["generate", *argv])
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    out = capsys.readouterr()
    assert code not in (0, None)
    assert out.out == "" and "Traceback" not in out.err
    return out.err.strip().splitlines()[-1]


@pytest.mark.parametrize("argv, must_contain", [
    (["   \n\t "], ["error:", "prompt is empty"]),
    (["Hello\x07there"], ["error:", "control character", "U+0007"]),
    (["Hello\ud800"], ["error:", "lone surrogate"]),
    (["Hello", "--max-new-tokens", "-3"], ["error:", "max new tokens", "-3"]),
    (["Hello", "--max-new-tokens", "100000"], ["error:", "max new tokens", "1 to 1024"]),
    (["Hello", "--max-new-tokens", "many"], ["--max-new-tokens", "invalid int value"]),
    (["Hello", "--k", "0"], ["error:", "k (next-next candidates)"]),
    (["Hello", "--capacity", "999"], ["error:", "tree capacity"]),
    (["Hello", "--cpu-capacity", "0"], ["error:", "CPU tree capacity", "1 to 256"]),
    (["Hello", "--ngram", "0-2"], ["error:", "n-gram size"]),
    (["Hello", "--ngram", "a,b"], ["--ngram", "n-gram sizes must look like"]),
    (["Hello", "--method", "beam"], ["invalid choice", "beam"]),
    (["Hello", "--model", "./missing-model-dir"], ["error:", "./missing-model-dir", "does not exist"]),
    (["Hello", "--model", "/no/such/model/folder"], ["error:", "/no/such/model/folder", "does not exist"]),
    (["Hello", "--model", "no-such-org/no-such-model-4242"], ["error:", "could not load model",
                                                             "no-such-org/no-such-model-4242"]),
    (["Hello", "--dtype", "float8"], ["invalid choice", "float8"]),
    (["Hello", "--repetition-penalty", "0"], ["error:", "repetition penalty must be a number above 0"]),
    (["Hello", "--repetition-penalty", "lots"], ["error:", "repetition penalty", "'lots'"]),
    (["Hello", "--no-repeat-ngram-size", "1.5"], ["error:", "no repeat ngram size must be a whole number"]),
    (["Hello", "--min-new-tokens", "-2"], ["error:", "min new tokens must be a whole number from 0"]),
    (["Hello", "--min-new-tokens", "inf"], ["error:", "min new tokens must be a whole number from 0"]),
    (["Hello", "--repetition-penalty", "nan"], ["error:", "repetition penalty must be a number above 0"]),
    (["Hello", "--pool", "newest"], ["invalid choice", "newest"]),
])
def test_bad_input_in_process(capsys, monkeypatch, argv, must_contain):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the unknown hub id is refused without the network
    last = main_refuses(capsys, *argv)
    for part in must_contain:
        assert part in last, f"{part!r} not in {last!r}"


@pytest.mark.slow  # decodes on the bundled model: the full tier's
@pytest.mark.parametrize("method", ["logitspec", "pld"])
def test_json_output(bundled, method, tmp_path, capsys, monkeypatch):
    """The JSON contract through main(), on the session's model (the process below loads its own)."""
    import logitspec.models

    monkeypatch.setenv("LOGITSPEC_THREADS", str(torch.get_num_threads()))  # main() keeps the run's own count
    monkeypatch.setattr(logitspec.models, "load_model", lambda *a, **k: bundled)
    prompt, n = "List three colours of the rainbow.", 24
    trace_file = tmp_path / "trace.json"
    code = main(["generate", prompt, "--method", method, "--max-new-tokens", str(n), "--json",
                 "--save-trace", str(trace_file)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    out = json.loads(printed.out)
    for key in ("tokens", "text", "steps", "mean_accepted_tokens", "seconds"):
        assert key in out
    # The same greedy tokens as vanilla decoding.
    expected = run_trace(bundled, prompt, "vanilla", DecodeSettings(max_new_tokens=n)).tokens
    assert out["tokens"] == expected
    assert out["text"] == bundled.decode(expected)
    assert out["method"] == method and out["model"] == "SmolLM2-135M-Instruct"
    assert 1 <= out["steps"] <= len(out["tokens"])
    assert out["mean_accepted_tokens"] == pytest.approx(len(out["tokens"]) / out["steps"])
    assert out["seconds"] > 0
    assert out["prompt_tokens"] == len(bundled.encode_chat(prompt))
    # The saved trace is the run the JSON describes.
    from logitspec.core.trace import RunTrace

    saved = RunTrace.load(trace_file)
    assert saved.tokens == out["tokens"] and saved.forward_steps == out["steps"]
    assert saved.method == method


@pytest.mark.slow  # decodes on the bundled model: the full tier's
def test_processor_options_reach_the_decoder_and_the_json(bundled, capsys, monkeypatch):
    import logitspec.models

    monkeypatch.setenv("LOGITSPEC_THREADS", str(torch.get_num_threads()))
    monkeypatch.setattr(logitspec.models, "load_model", lambda *a, **k: bundled)
    prompt, n, options = "List the days of the week, twice.", 24, {"repetition_penalty": 1.3, "no_repeat_ngram_size": 3}
    code = main(["generate", prompt, "--max-new-tokens", str(n), "--repetition-penalty", "1.3",
                 "--no-repeat-ngram-size", "3", "--json"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    out = json.loads(printed.out)
    want = run_trace(bundled, prompt, "vanilla", DecodeSettings(max_new_tokens=n, processors=options)).tokens
    assert out["tokens"] == want != run_trace(bundled, prompt, "vanilla", DecodeSettings(max_new_tokens=n)).tokens
    assert out["processors"] == options


@pytest.mark.slow
def test_plain_output_is_the_text(bundled):
    """The smoke test of the entry point as a process: it loads the model itself."""
    prompt, n = "Say hello.", 12
    proc = cli(prompt, "--max-new-tokens", str(n))
    assert proc.returncode == 0, proc.stderr
    expected = run_trace(bundled, prompt, "vanilla", DecodeSettings(max_new_tokens=n)).tokens
    assert proc.stdout.rstrip("\n") == bundled.decode(expected)

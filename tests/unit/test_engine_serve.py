"""`logitspec-vllm-serve`'s arguments without vLLM: the proposer put in place as the served test
(tests/engines/test_vllm_served.py) starts it, the rest handed to vLLM's server unchanged."""
from __future__ import annotations

import json
import tomllib

import pytest

from helpers.paths import ROOT
from logitspec.engines import vllm_serve
from logitspec.engines.vllm_serve import PROPOSER, server_argv


def spec_of(args: list[str]) -> dict:
    assert args[-2] == "--speculative-config"
    return json.loads(args[-1])


def test_the_proposer_is_put_in_place_and_the_rest_handed_on():
    args, rule = server_argv(["/tmp/m", "--dtype", "float32", "--port", "8001"])
    assert args[:-2] == ["--model", "/tmp/m", "--dtype", "float32", "--port", "8001"] and rule is None
    assert spec_of(args) == {"method": "custom_class", "model": PROPOSER, "num_speculative_tokens": 5}
    args, _ = server_argv(["--model", "/tmp/m", "--spec-tokens", "3"])
    assert args[:-2] == ["--model", "/tmp/m", "--spec-tokens", "3"]  # vLLM merges K into the config
    assert "num_speculative_tokens" not in spec_of(args)


def test_the_rule_is_taken_out_and_checked():
    for given in (["--rule", "precise"], ["--rule=precise"]):
        args, rule = server_argv(["/tmp/m", *given, "--port", "1"])
        assert rule == "precise" and args[:-2] == ["--model", "/tmp/m", "--port", "1"]
    with pytest.raises(SystemExit, match="--rule 'sure'"):
        server_argv(["/tmp/m", "--rule", "sure"])


@pytest.mark.parametrize("clash", ["--speculative-config={}", "-sc", "--spec_method", "--spec-model"])
def test_an_option_the_command_sets_is_refused_in_one_line(clash):
    with pytest.raises(SystemExit, match="sets .* itself") as e:
        server_argv(["/tmp/m", clash, "x"])
    assert "\n" not in str(e.value)


def test_without_a_wait_policy_it_starts_again_with_passive_threads(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    calls = []

    def execve(path, argv, env):
        calls.append((argv, env["OMP_WAIT_POLICY"]))
        raise SystemExit(0)

    monkeypatch.setattr(vllm_serve.os, "execve", execve)
    with pytest.raises(SystemExit):
        vllm_serve.main(["/tmp/m", "--rule", "precise"])
    assert calls == [([vllm_serve.sys.executable, "-m", "logitspec.engines.vllm_serve", "/tmp/m", "--rule",
                       "precise"], "PASSIVE")]


def test_the_console_script_runs_this_main():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["logitspec-vllm-serve"] == "logitspec.engines.vllm_serve:main"

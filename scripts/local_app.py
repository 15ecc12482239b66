"""app.py on a free loopback port, for the scripts that time it and the tests that drive it."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READY = "LogitSpec Explorer:"  # the line app.py prints once its model is ready
# No curve timing in the background, which would take the cores from whatever the app is
# measured beside, and no curve corrected by the passes' times, so a race's trees do not
# depend on how busy the machine is.
STEADY_CURVES = {"LOGITSPEC_MEASURE_CURVES": "0", "LOGITSPEC_STEADY_CURVES": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def start(log: Path, env: dict[str, str] | None = None, timeout: float = 180.0,
          model_ready: bool = False) -> tuple[subprocess.Popen, str]:
    """Start app.py on a free port, its output to `log`; (process, url) once the page answers
    and, with `model_ready`, once the app says its model is ready."""
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False", **(env or {})}
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if _answers(url) and (not model_ready or READY in log.read_text(errors="replace")):
            return proc, url
        time.sleep(0.5)
    stop(proc)
    raise RuntimeError(f"app.py was not ready within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()

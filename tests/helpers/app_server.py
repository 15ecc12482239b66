"""The app as a subprocess on a free loopback port, and the race's inputs and outputs, for the
tests that drive it (gradio_client, the browser, the load test)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from helpers.paths import ROOT
from helpers.threads import TEST_THREADS

MAX_NEW = 24


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(log_path: Path, env_extra: dict[str, str] | None = None, timeout: float = 180.0):
    """Start app.py on a free port; return (process, url) once it answers."""
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False", "LOGITSPEC_THREADS": str(TEST_THREADS),
           # No curve measuring in the background: it would take the cores from the tests the
           # whole session (tests/unit/test_calibration.py covers it); and no correcting from
           # the passes' times, so a race's trees do not depend on how busy the machine is.
           "LOGITSPEC_MEASURE_CURVES": "0", "LOGITSPEC_STEADY_CURVES": "1", **(env_extra or {})}
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"app.py did not answer within {timeout:.0f} s:\n{log_path.read_text()[-3000:]}")


def stop_app(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def race_args(prompt: str, model: str = "bundled", max_new: int = MAX_NEW, tree: str = "static", **given) -> dict:
    """The race's inputs in order (ui/form.py), each at its default unless given: a lane box by
    its name (with_pld=True), sampling (temperature, top_p, seed) and every other setting."""
    from ui.form import default_values

    return default_values(prompt=prompt, model=model, max_new=max_new, tree=tree, **given)


def trace_file(result) -> Path:
    """The downloaded trace among the race's outputs (the last one)."""
    last = result[-1]
    path = last.get("value", last) if isinstance(last, dict) else last
    return Path(path)

"""What an idle app server costs: the CPU seconds per second of `python app.py` once its model is
ready and no visitor is on the page.

    python scripts/time_idle_server.py [--seconds 30]

Starts the app on a free loopback port (curve timing off, as in the tests), waits for its
"LogitSpec Explorer:" line that the model is ready, then reads the process's CPU time over
`--seconds` and prints it per second of wall time, and the busiest of its threads.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(timeout: float = 300.0) -> subprocess.Popen:
    """app.py, returned once it prints that the model is ready."""
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(free_port()),
           "GRADIO_ANALYTICS_ENABLED": "False", "LOGITSPEC_MEASURE_CURVES": "0", "LOGITSPEC_STEADY_CURVES": "1"}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        if line.startswith("LogitSpec Explorer:"):
            print(line.strip())
            return proc
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise SystemExit("time_idle_server: the app did not say its model was ready")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=30.0)
    args = p.parse_args()
    proc = start()
    try:
        app = psutil.Process(proc.pid)
        time.sleep(3)  # the ready line's own work settles
        before = {t.id: t.user_time + t.system_time for t in app.threads()}
        t0 = time.monotonic()
        time.sleep(args.seconds)
        after = {t.id: t.user_time + t.system_time for t in app.threads()}
        wall = time.monotonic() - t0
        used = {k: v - before.get(k, 0.0) for k, v in after.items()}
        print(f"idle server: {sum(used.values()) / wall:.4f} CPU-s per s over {wall:.0f} s "
              f"({len(used)} threads; the busiest {max(used.values()) / wall:.4f})")
    finally:
        proc.terminate()
        proc.wait(15)


if __name__ == "__main__":
    main()

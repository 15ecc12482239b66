"""What an idle app server costs: the CPU seconds per second of `python app.py` once its model is
ready and no visitor is on the page.

    python scripts/time_idle_server.py [--seconds 30]

Starts the app on a free loopback port (curve timing off, as in the tests), waits for its
"LogitSpec Explorer:" line that the model is ready, then reads the process's CPU time over
`--seconds` and prints it per second of wall time, and the busiest of its threads.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts.local_app import READY, STEADY_CURVES, start, stop  # noqa: E402  (the project's root, above)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=30.0)
    args = p.parse_args()
    log = Path(tempfile.mkdtemp()) / "app.log"
    proc, _ = start(log, STEADY_CURVES, timeout=300, model_ready=True)
    print(next(line for line in log.read_text().splitlines() if line.startswith(READY)))
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
        stop(proc)


if __name__ == "__main__":
    main()

"""Time `make demo` to the bundled model's first finished race, as a visitor would see it.

    python scripts/time_first_race.py [--max-new-tokens 128]

Starts `make demo` (set-up included when .venv is fresh), waits for the page, runs the
first example through the app's own API and prints the seconds from the command to the
end of the race, and the race's verdict.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--port", type=int, default=7860)
    a = ap.parse_args()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(a.port), "GRADIO_ANALYTICS_ENABLED": "False"}
    t0 = time.monotonic()
    proc = subprocess.Popen(["make", "demo"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{a.port}/"
    try:
        while True:
            if proc.poll() is not None:
                print(f"make demo exited with {proc.returncode}", file=sys.stderr)
                return 1
            try:
                with urllib.request.urlopen(url, timeout=2):
                    break
            except OSError:
                time.sleep(0.25)
        t_page = time.monotonic() - t0
        sys.path.insert(0, str(ROOT))
        from gradio_client import Client

        import app  # the app's own example list; importing it loads no model

        label, prompt = app.load_examples()[0]
        client = Client(url, verbose=False)
        result = client.predict(prompt, "bundled", False, 64, 64, [1, 2, 3], 20, a.max_new_tokens, "cost",
                                ["g1 matched", "g2 rescued", "both failed"], api_name="/race")
        t_race = time.monotonic() - t0
        verdict = next((r for r in result if isinstance(r, str) and "identical" in r), "")
        print(f"page served after {t_page:.1f} s; first race ({label}, {a.max_new_tokens} tokens) "
              f"finished {t_race:.1f} s after the command")
        print(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", verdict)).strip()[:600])
        return 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(main())

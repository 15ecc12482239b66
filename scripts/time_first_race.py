"""Time `make demo` to the bundled model's first finished race, as a visitor would see it,
on a first start with an empty cache folder and on later starts that reuse it.

    python scripts/time_first_race.py [--max-new-tokens 128] [--starts 2] [--cache-dir DIR]
                                      [--races N] [--background-load N]

Each start runs `make demo` (set-up included when .venv is fresh) with LOGITSPEC_KERNEL_DIR
pointing at the cache folder (a fresh temporary one unless given: the kernel build, the
converted weights and the stored cost curves all go there), waits for the page, notes when
the app says the model is ready, runs the first example through the app's own API and
prints the seconds from the command to each of those, and the race's verdict. `--races N`
races the first N examples in turn (each verdict printed); `--background-load N` keeps N
processes spinning a core each from before the first command to the end, as on a busy
shared machine.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Start:
    """One start's times, in seconds from the command."""

    page: float
    ready: float | None
    race: float
    ready_line: str
    verdicts: list[str]  # one per race, the first example's first


def _watch_ready(proc: subprocess.Popen, t0: float, seen: dict) -> None:
    """Note when the app prints that the model is ready (or failed)."""
    for line in proc.stdout:
        if line.startswith("LogitSpec Explorer:") and "ready" not in seen:
            seen["ready"], seen["line"] = time.monotonic() - t0, line.strip()


def _wait_page(proc: subprocess.Popen, url: str) -> None:
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"make demo exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.25)


def _race(client, prompt: str, max_new_tokens: int) -> str:
    """One race of the bundled model through the app's API, at the default decode settings; its verdict."""
    from ui.form import default_values

    args = default_values(prompt=prompt, max_new=max_new_tokens, tree="cost")  # greedy unless the defaults say otherwise
    result = client.predict(*args.values(), api_name="/race")
    verdict = next((r for r in result if isinstance(r, str) and "identical" in r), "")
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", verdict)).strip()[:400]


def one_start(port: int, cache: Path, max_new_tokens: int, linger: float, races: int = 1) -> Start:
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False",
           "LOGITSPEC_KERNEL_DIR": str(cache), "PYTHONUNBUFFERED": "1"}
    t0 = time.monotonic()
    proc = subprocess.Popen(["make", "demo"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    seen: dict = {}
    threading.Thread(target=_watch_ready, args=(proc, t0, seen), daemon=True).start()
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_page(proc, url)
        t_page = time.monotonic() - t0
        from gradio_client import Client

        from ui.files import load_examples  # the app's own example list; importing it loads no model

        examples = load_examples()[:max(1, races)]
        client = Client(url, verbose=False)
        verdicts = [_race(client, examples[0][1], max_new_tokens)]
        t_race = time.monotonic() - t0
        verdicts += [_race(client, prompt, max_new_tokens) for _, prompt in examples[1:]]
        time.sleep(linger)  # lets the background measurement of c(n) finish and be stored
        return Start(t_page, seen.get("ready"), t_race, seen.get("line", ""),
                     [f"{label}: {v}" for (label, _), v in zip(examples, verdicts)])
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--port", type=int, default=7860)
    ap.add_argument("--starts", type=int, default=2, help="the first with an empty cache folder, then reusing it")
    ap.add_argument("--cache-dir", type=Path, default=None, help="the cache folder (default: a fresh temporary one)")
    ap.add_argument("--linger", type=float, default=0.0, help="seconds to keep each server up after its race")
    ap.add_argument("--races", type=int, default=1, help="race the first N examples, one after another")
    ap.add_argument("--background-load", type=int, default=0, metavar="N",
                    help="N processes each spinning a core from before the first start to the end")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from logitspec.bench.run import BusyLoad

    cache = a.cache_dir or Path(tempfile.mkdtemp(prefix="logitspec-cache-"))
    print(f"cache folder: {cache}" + (f"; {a.background_load} busy process(es)" if a.background_load else ""))
    load = BusyLoad(a.background_load).start()
    try:
        for i in range(a.starts):
            s = one_start(a.port, cache, a.max_new_tokens, a.linger, a.races)
            ready = (f"{s.ready:.1f} s ({s.ready - s.page:+.1f} s after the page)" if s.ready is not None
                     else "not reported")
            print(f"start {i + 1}: page {s.page:.1f} s; model ready {ready}; first race ({a.max_new_tokens} tokens) "
                  f"finished {s.race:.1f} s after the command")
            print(f"  {s.ready_line}")
            for v in s.verdicts:
                print(f"  {v}")
    finally:
        load.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

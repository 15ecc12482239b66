"""Many users at once, on loopback: 8 gradio_client sessions race at the same time.

Each session sends its own prompt; all must complete, each must get back its own trace
(its own prompt, tokens equal to vanilla greedy for that prompt) and nothing may error.
The figures (completions, p50/p95 latency, errors) are written to artifacts/load.json.
"""
from __future__ import annotations

import json
import statistics
import threading
import time

import pytest

from helpers.app_server import race_args, trace_file
from helpers.paths import ROOT

USERS = 8
MAX_NEW = 4  # each prompt's first four tokens differ from every other's: a session given another's decode shows
PROMPTS = [
    "Name three primary colours.",
    "Translate to French: good morning.",
    "What is 12 times 12?",
    "Write a haiku about rain.",
    "Who wrote Hamlet?",
    "Give a synonym for happy.",
    "What is the capital of Japan?",
    "Write one line of Python that prints hello.",
]


@pytest.mark.slow
def test_eight_simultaneous_sessions_complete_without_cross_talk(app_url, bundled):
    from gradio_client import Client

    from logitspec.core.settings import DecodeSettings
    from logitspec.runner import run_trace
    from logitspec.analysis.race import read_race

    url = app_url
    results: dict[int, dict] = {}

    def user(i: int) -> None:
        t0 = time.monotonic()
        try:
            client = Client(url, verbose=False)
            job = client.submit(*race_args(PROMPTS[i], max_new=MAX_NEW).values(), api_name="/race")
            positions = set()
            while not job.done():
                st = job.status()
                if st.rank is not None:
                    positions.add(st.rank)
                time.sleep(0.2)
            out = job.result()
            results[i] = {"latency": time.monotonic() - t0, "trace": str(trace_file(out)), "positions": sorted(positions)}
        except Exception as e:  # recorded and asserted on below
            results[i] = {"latency": time.monotonic() - t0, "error": f"{type(e).__name__}: {e}"}

    threads = [threading.Thread(target=user, args=(i,)) for i in range(USERS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    wall = time.monotonic() - t0

    errors = {i: r["error"] for i, r in results.items() if "error" in r}
    lat = sorted(r["latency"] for r in results.values() if "error" not in r)
    figures = {
        "users": USERS, "completed": len(lat), "errors": len(errors), "wall_seconds": round(wall, 1),
        "p50_seconds": round(statistics.median(lat), 1) if lat else None,
        "p95_seconds": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 1) if lat else None,
        "max_new_tokens": MAX_NEW,
        "queue_positions_seen": sorted({p for r in results.values() for p in r.get("positions", [])}),
    }
    out = ROOT / "artifacts" / "load.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    print("load test:", json.dumps(figures))

    assert not errors, errors
    assert len(results) == USERS and figures["completed"] == USERS
    # The queue is visible: while one race runs, the others wait with a position.
    assert any(p >= 1 for p in figures["queue_positions_seen"])
    for i, r in results.items():
        trace = read_race(r["trace"]).lanes["logitspec"]  # the race file's LogitSpec lane
        assert trace.prompt_text == PROMPTS[i], f"session {i} got another session's trace"
        vanilla = run_trace(bundled, PROMPTS[i], "vanilla", DecodeSettings(max_new_tokens=MAX_NEW, tree="static"))
        assert trace.tokens == vanilla.tokens

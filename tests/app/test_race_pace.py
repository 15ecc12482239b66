"""A race in the launched app keeps pace with the same decoding run alone, as the bench runs it.

The race (through gradio_client, three lanes interleaved on the app's model thread, the page's
counters and figures made as it goes) and plain runs of the same lanes in this process take
turns, never overlapping, twice each; each side keeps its fastest turn, since other work on a
shared machine only ever adds time. Both sides count the same thing: a lane's tokens over its
own measured compute (prefill and steps). Vanilla and prompt lookup do the same work on both
sides (the cost tree's size depends on each process's measured curve), so they are compared:
the race must not fall more than 25% behind. A measurement, so it is not part of `make test`:
`.venv/bin/python -m pytest -m pace -s tests/app/test_race_pace.py` on an idle machine.
"""
from __future__ import annotations

import re

import pytest
from helpers.app_server import race_args

PROMPT = "Summarise in two sentences: the city council voted to expand the bus network, adding "\
         "twelve routes and doubling the frequency on the busiest lines from next spring."
MAX_NEW = 64
TURNS = 2
LANES = ("vanilla", "pld")
ROW = re.compile(r"<tr data-lane='([\w+-]+)'><td>.*?</td><td>(\d+)</td><td>\d+</td><td>[\d.]+</td><td>[\d.]+</td>"
                 r"<td>([\d.]+) s</td>")


def _race_rates(client) -> dict[str, float]:
    args = {**race_args(PROMPT, max_new=MAX_NEW, with_pld=True), "tree": "cost"}
    result = client.predict(*args.values(), api_name="/race")
    counters = next(r for r in result if isinstance(r, str) and "tokens / pass" in r)
    rows = {name: int(tokens) / float(secs) for name, tokens, secs in ROW.findall(counters)}
    assert set(LANES) <= set(rows), counters
    return rows


def _alone_rates(lm) -> dict[str, float]:
    from logitspec.runner import run_trace
    from logitspec.core.settings import DecodeSettings

    s = DecodeSettings(max_new_tokens=MAX_NEW)
    return {m: len(t.tokens) / t.seconds for m in LANES for t in [run_trace(lm, PROMPT, m, s)]}


@pytest.mark.pace
@pytest.mark.slow
def test_each_race_lane_runs_within_a_quarter_of_its_pace_alone(app_url, bundled):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    race, alone = {m: 0.0 for m in LANES}, {m: 0.0 for m in LANES}
    _alone_rates(bundled)  # the first runs of this process warm its caches and kernels
    for _ in range(TURNS):
        for m, r in _race_rates(client).items():
            race[m] = max(race.get(m, 0.0), r)
        for m, r in _alone_rates(bundled).items():
            alone[m] = max(alone[m], r)
    for m in LANES:
        print(f"{m}: race {race[m]:.1f} tokens/s, alone {alone[m]:.1f} tokens/s ({race[m] / alone[m]:.2f}x)")
    behind = {m: round(race[m] / alone[m], 3) for m in LANES if race[m] < 0.75 * alone[m]}
    assert not behind, f"race lanes more than 25% behind their pace alone: {behind}"

"""The paper's lane (logitspec-static): LogitSpec's static 64-token tree raced on the bundled model,
lossless against vanilla, directly and through the app's API with its verdict and passes figure."""
from __future__ import annotations

import pytest

from helpers.app_server import race_args
from serve.race import interleave, model_lanes
from logitspec.core.settings import DecodeSettings

PROMPT = "List the planets of the solar system, one per line, then say which is largest."


@pytest.mark.slow
@pytest.mark.lossless
def test_the_static_lane_runs_the_papers_tree_and_equals_vanilla(bundled):
    # The race's own capacity is small here: the paper's lane keeps the paper's 64 all the same.
    settings = DecodeSettings(max_new_tokens=24, capacity=8, tree="cost")
    lanes = model_lanes(bundled, PROMPT, ["logitspec-static", "vanilla"], settings)
    assert [ln.name for ln in lanes] == ["vanilla", "logitspec-static"]
    list(interleave(lanes))
    van, st = (ln.trace for ln in lanes)
    assert st.method == "logitspec" and st.settings["tree"] == "static" and st.settings["capacity"] == 64
    assert len(st.tokens) == 24 and st.tokens == van.tokens
    assert max(len(s.verified_nodes) for s in st.steps) > 8  # bigger than the race's own capacity
    assert st.forward_steps < van.forward_steps  # it drafted, and its drafts were accepted


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.mark.slow
@pytest.mark.lossless
def test_a_race_with_the_papers_lane_states_both_figures(client):
    result = client.predict(*race_args(PROMPT, with_pld=True, with_static=True).values(), api_name="/race")
    counters = next(r for r in result if isinstance(r, str) and "tokens / pass" in r)
    assert "data-lane='logitspec-static'" in counters and "the paper's" in counters
    verdict = counters.split("class='verdict'>", 1)[1]
    assert "on this CPU" in verdict and "per forward pass, <b>" in verdict
    assert "for prompt lookup" in verdict and "for LogitSpec, the paper's static tree (64 tokens" in verdict
    assert "identical to vanilla" in verdict and "DIFFERENT" not in verdict
    assert any(isinstance(r, str) and "Race: tokens generated against forward passes" in r for r in result)

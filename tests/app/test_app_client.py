"""The launched app, driven through gradio_client like any API user would.

The app runs as a subprocess on a free loopback port with the bundled model; the race's
LogitSpec trace must equal a vanilla run made here on the same prompt and settings.
"""
from __future__ import annotations

import time

import pytest
from helpers.app_server import MAX_NEW, downloaded_lane, race_args

PROMPT = "Write a Python function that returns the sum of a list of numbers."


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.mark.slow
def test_race_trace_equals_vanilla(client, bundled):
    from logitspec.core.settings import DecodeSettings
    from logitspec.runner import run_trace

    result = client.predict(*race_args(PROMPT).values(), api_name="/race")
    trace = downloaded_lane(result)
    assert trace.method == "logitspec" and trace.model == "SmolLM2-135M-Instruct"
    assert len(trace.tokens) == MAX_NEW  # a code answer does not end within 24 tokens

    vanilla = run_trace(bundled, PROMPT, "vanilla", DecodeSettings(max_new_tokens=MAX_NEW, tree="static"))
    assert trace.tokens == vanilla.tokens
    assert trace.prompt_tokens == vanilla.prompt_tokens
    # The counters report the measured race and its verdict.
    counters = next(r for r in result if isinstance(r, str) and "tokens / pass" in r)
    assert "identical to vanilla" in counters


@pytest.mark.slow
def test_a_sampled_race_equals_vanilla_sampling_and_names_its_seed(client, bundled):
    from logitspec.core.settings import DecodeSettings
    from logitspec.runner import run_trace

    result = client.predict(*race_args(PROMPT, temperature=1.0, top_p=0.9, seed=7).values(), api_name="/race")
    trace = downloaded_lane(result)
    assert trace.settings["temperature"] == 1.0 and trace.settings["seed"] == 7
    s = DecodeSettings(max_new_tokens=MAX_NEW, tree="static", temperature=1.0, top_p=0.9, seed=7)
    assert trace.tokens == run_trace(bundled, PROMPT, "vanilla", s).tokens
    status = next(r for r in result if isinstance(r, str) and r.startswith("**Done:**"))
    assert "seed 7" in status and "temperature 1" in status
    counters = next(r for r in result if isinstance(r, str) and "tokens / pass" in r)
    assert "identical to vanilla" in counters


@pytest.mark.slow
@pytest.mark.parametrize("sampling, message", [({"temperature": 2.5}, "temperature must be|greater than maximum"),
                                               ({"seed": -1}, "seed must be a whole number|less than minimum")])
def test_bad_sampling_values_are_refused(client, sampling, message):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=message):
        client.predict(*race_args(PROMPT, **sampling).values(), api_name="/race")


@pytest.mark.slow
@pytest.mark.parametrize("prompt, message", [("", "prompt is empty"), ("   \n ", "prompt is empty"),
                                             ("bad \x07 bell", "control character")])
def test_bad_prompt_returns_a_message(client, prompt, message):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=message):
        client.predict(*race_args(prompt).values(), api_name="/race")


@pytest.mark.slow
def test_models_off_the_allow_list_are_refused(client):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="not offered|not in the list of choices"):
        client.predict(*race_args(PROMPT, model="/etc/passwd").values(), api_name="/race")


@pytest.mark.slow
def test_out_of_range_settings_are_refused(client):
    from gradio_client.exceptions import AppError

    args = race_args(PROMPT, max_new=5000)
    with pytest.raises(AppError, match="max new tokens must be a whole number from 1 to 1024|greater than maximum value 1024"):
        client.predict(*args.values(), api_name="/race")


@pytest.mark.slow
def test_stop_frees_the_worker_for_the_next_run(client, app_url):
    from gradio_client import Client
    from gradio_client.utils import Status

    job = client.submit(*race_args(PROMPT, max_new=400).values(), api_name="/race")
    t0 = time.monotonic()
    while job.status().code != Status.ITERATING:
        assert time.monotonic() - t0 < 120, "the long race never started"
        time.sleep(0.2)
    time.sleep(1.0)  # a few steps in
    client.predict(api_name="/stop")
    # Another user's short race now gets the worker at once: it is not queued behind 400 tokens.
    other = Client(app_url, verbose=False)
    t1 = time.monotonic()
    other.predict(*race_args(PROMPT, max_new=8).values(), api_name="/race")
    assert time.monotonic() - t1 < 90
    assert job.done()

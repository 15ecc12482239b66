"""The app's form to DecodeSettings: sampling values pass through or are refused in one line; the
form and the race API's inputs come from DecodeSettings, Limits and the lane table, once."""
from __future__ import annotations

import pytest

from logitspec.analysis import lanes
from logitspec.core.limits import InputError, Limits
from logitspec.core.settings import DecodeSettings
from ui.form import SETTINGS, default_values, lane_boxes, race_inputs, race_lanes_of, sampling_note, settings_from

FORM = dict(k=64, capacity=64, ngram=[1, 2, 3], continuation=20, max_new=128, tree="cost")


def test_sampling_values_reach_the_settings():
    s = settings_from({**FORM, "temperature": 0.7, "top_p": 0.9, "seed": 42.0})  # a number box sends a float
    assert (s.temperature, s.top_p, s.seed) == (0.7, 0.9, 42) and isinstance(s.seed, int)
    d = DecodeSettings()
    left_out = settings_from(FORM)
    assert (left_out.temperature, left_out.top_p, left_out.seed) == (d.temperature, d.top_p, d.seed)


@pytest.mark.parametrize("temperature, top_p, seed, message", [
    (-0.5, 1.0, 0, "temperature must be a number from 0"),
    (2.5, 1.0, 0, "temperature must be a number from 0"),
    (1.0, 0.0, 0, "top-p must be a number above 0"),
    (1.0, 1.0, 1.5, "seed must be a whole number"),
    (1.0, 1.0, -3, "seed must be a whole number"),
])
def test_bad_sampling_values_are_one_line(temperature, top_p, seed, message):
    with pytest.raises(InputError, match=message) as e:
        settings_from({**FORM, "temperature": temperature, "top_p": top_p, "seed": seed})
    assert "\n" not in str(e.value)


def test_the_repetition_penalty_reaches_the_processors_and_comes_last_in_the_api():
    assert settings_from({**FORM, "repetition_penalty": 1.2}).processors == {"repetition_penalty": 1.2}
    assert settings_from({**FORM, "repetition_penalty": 1.0}).processors == {}  # 1 applies nothing
    assert race_inputs()[-1] == "repetition_penalty" and default_values()["repetition_penalty"] == 1.0
    slider = next(f for f in SETTINGS if f.name == "repetition_penalty").component(Limits.from_env(), DecodeSettings())
    assert (slider.minimum, slider.value) == (1.0, 1.0)
    with pytest.raises(InputError, match="repetition penalty must be a number above 0") as e:
        settings_from({**FORM, "repetition_penalty": -1})  # the API is not held to the slider's range
    assert "\n" not in str(e.value)


def test_no_ngram_size_is_refused_in_one_line():
    with pytest.raises(InputError, match="at least one n-gram size"):
        settings_from({**FORM, "ngram": []})


def test_a_sampled_run_names_its_seed_and_a_greedy_one_says_nothing():
    note = sampling_note(settings_from({**FORM, "temperature": 1.2, "top_p": 0.95, "seed": 31}).to_dict())
    assert "temperature 1.2" in note and "top-p 0.95" in note and "seed 31" in note
    assert sampling_note(DecodeSettings().to_dict()) == ""
    assert sampling_note({}) == ""  # a trace recorded before sampling existed


def test_the_form_is_drawn_from_the_settings_and_the_limits():
    lim, s = Limits.from_env(), DecodeSettings()
    fields = {f.name: f.component(lim, s) for f in SETTINGS}
    assert (fields["k"].maximum, fields["k"].value) == (lim.k, s.k)
    assert (fields["max_new"].maximum, fields["max_new"].value) == (lim.max_new_tokens, s.max_new_tokens)
    assert fields["ngram"].value == list(s.ngram_sizes) and len(fields["ngram"].choices) == lim.ngram
    assert fields["tree"].value == s.tree and fields["seed"].value == s.seed
    assert settings_from(default_values()) == s  # the form's defaults are DecodeSettings' own


def test_the_race_api_keeps_its_order_and_the_lanes_come_from_the_table():
    assert race_inputs()[:15] == ["prompt", "model", "with_pld", "k", "capacity", "ngram", "continuation", "max_new",
                                  "tree", "temperature", "top_p", "seed", "outcomes", "with_static", "with_recycling"]
    assert [b.lane for b in lane_boxes()] == [n for n in lanes.race_order() if n not in ("vanilla", "logitspec")]
    ids = [b.elem_id for b in lane_boxes()]  # each box findable on the page, prompt lookup's too
    assert all(ids) and len(set(ids)) == len(ids) and ids[0] == "with-pld"
    assert list(default_values(prompt="hi")) == race_inputs()
    ticked = default_values(with_static=True, with_recycling=True)
    assert race_lanes_of(ticked) == ["vanilla", "logitspec", "logitspec-static", "recycling"]
    with pytest.raises(TypeError, match="not inputs of the race"):
        default_values(lanes=["pld"])


def test_an_idle_server_polls_its_queue_every_20_ms_not_every_millisecond():
    """Gradio's own queue polls every millisecond while idle (about 5% of a core); app.py slows
    it. Fails if Gradio renames the settings, which app.py would otherwise skip in silence."""
    import gradio as gr

    from app import PROGRESS_POLL_SECONDS, QUEUE_POLL_SECONDS, quiet_queue

    with gr.Blocks() as demo:
        gr.Markdown("x")
    demo.queue()
    assert demo._queue.sleep_when_free < QUEUE_POLL_SECONDS  # what Gradio does unasked
    quiet_queue(demo)
    assert demo._queue.sleep_when_free == QUEUE_POLL_SECONDS
    assert demo._queue.progress_update_sleep_when_free == PROGRESS_POLL_SECONDS

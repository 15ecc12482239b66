"""The app's form to DecodeSettings: sampling values pass through or are refused in one line."""
from __future__ import annotations

import pytest

from app import sampling_note, settings_from
from logitspec.limits import InputError
from logitspec.settings import DecodeSettings

FORM = (64, 64, [1, 2, 3], 20, 128, "cost")  # k, capacity, n-grams, continuation, max new, tree


def test_sampling_values_reach_the_settings():
    s = settings_from(*FORM, 0.7, 0.9, 42.0)  # a number box sends a float
    assert (s.temperature, s.top_p, s.seed) == (0.7, 0.9, 42) and isinstance(s.seed, int)
    d = DecodeSettings()
    left_out = settings_from(*FORM)
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
        settings_from(*FORM, temperature, top_p, seed)
    assert "\n" not in str(e.value)


def test_a_sampled_run_names_its_seed_and_a_greedy_one_says_nothing():
    note = sampling_note(settings_from(*FORM, 1.2, 0.95, 31).to_dict())
    assert "temperature 1.2" in note and "top-p 0.95" in note and "seed 31" in note
    assert sampling_note(DecodeSettings().to_dict()) == ""
    assert sampling_note({}) == ""  # a trace recorded before sampling existed

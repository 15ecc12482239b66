"""Each model's learned state lives in one object on the model (logitspec/core/profile.py), none in
a module: two decodes from fresh profiles build the same trees."""
from __future__ import annotations

import enum
import importlib
import pkgutil
import re
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

import logitspec
import serve
import ui
import visual
from helpers.tiny_models import tiny_prompts
from logitspec.core.settings import DecodeSettings
from logitspec.decoders import decode
from logitspec.core.profile import fresh_profile, profile_of

ROOT = Path(__file__).resolve().parents[2]
# Process-wide by nature, each with its reason: a C++ extension loads into the process once
# (the built kernels and why a build failed); ZeroGPU's GPU call runs in a forked process that
# finds the app's loaded models only in a module (a model cannot be pickled across).
# vLLM builds its proposers itself, deep in its engine: the registry is how the engine bench, in
# the same process, reads their counts.
PROCESS_WIDE = {("logitspec.runtime.fewrows", "_ops"), ("logitspec.runtime.fewrows", "_errors"),
                ("serve.zerogpu", "_LOADED"), ("logitspec.engines.vllm_proposer", "PROPOSERS")}
PROJECT = ("logitspec", "visual", "ui", "serve", "app")
MUTATES = r"\b{name}(\[[^\]]*\]\s*=[^=]|\.(setdefault|update|pop|append|clear|add|extend|remove)\()"


def trees(model, prompt, settings) -> list[list[int]]:
    return [[n.token for n in s.tree] for s in decode(model, prompt, "recycling", settings) if s.tree]


def test_two_decodes_from_fresh_profiles_build_the_same_trees(tiny_llama, one_thread, monkeypatch):
    # The head's batch rows are timed (verify.measure_head_batch_rows), and a loaded machine times
    # another count: the matrix then learns from other leaves' rows. Every other field is learnt.
    monkeypatch.setattr("logitspec.core.verify.measure_head_batch_rows", lambda model: 4)
    settings = DecodeSettings(max_new_tokens=32, tree="static")
    prompt = tiny_prompts(1)[0]
    fresh_profile(tiny_llama)
    first = trees(tiny_llama, prompt, settings)
    assert profile_of(tiny_llama).successors is not None  # the run learnt its successor matrix there
    hot = trees(tiny_llama, prompt, settings)  # the same profile: drafts start from what the first run left
    fresh_profile(tiny_llama)
    assert trees(tiny_llama, prompt, settings) == first != hot


def _modules():
    yield importlib.import_module("app")
    for pkg in (logitspec, visual, ui, serve):
        for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not m.name.endswith("__main__"):
                yield importlib.import_module(m.name)


def changes_in_place(value) -> bool:
    """An object whose state changes as it is used: an iterator (a counter, say), or an instance of
    a project class that is not a frozen dataclass (a model cache, the stop flags, the drawings)."""
    if isinstance(value, Iterator):
        return True
    cls = type(value)
    if cls.__module__.split(".")[0] not in PROJECT or isinstance(value, (type, enum.Enum)):
        return False
    params = getattr(cls, "__dataclass_params__", None)
    return not (params and params.frozen)


@pytest.mark.parametrize("module", list(_modules()), ids=lambda m: m.__name__)
def test_no_module_keeps_state_that_changes_at_run_time(module):
    source = Path(module.__file__).read_text()
    for name, value in vars(module).items():
        if isinstance(value, (weakref.WeakKeyDictionary, weakref.WeakValueDictionary)):
            pytest.fail(f"{module.__name__}.{name}: per-model state belongs in the model's profile")
        if (isinstance(value, (dict, list, set)) and (module.__name__, name) not in PROCESS_WIDE
                and re.search(MUTATES.format(name=re.escape(name)), source)):
            pytest.fail(f"{module.__name__}.{name} is changed at run time")
        if changes_in_place(value) and (module.__name__, name) not in PROCESS_WIDE:
            pytest.fail(f"{module.__name__}.{name}: a service belongs in an object the caller creates and passes")
    allowed = {n for m, n in PROCESS_WIDE if m == module.__name__}
    rebound = set(re.findall(r"^\s*global\s+(\w+)", source, re.M)) - allowed
    assert not rebound, f"{module.__name__} rebinds {sorted(rebound)} at run time"

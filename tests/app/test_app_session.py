"""Serving state: the model allow-list, the model cache, stop flags and uploaded-trace checks."""
from __future__ import annotations

import gc
import json
import threading
import weakref
from pathlib import Path

import pytest

from helpers.paths import FIXTURES, fixture_text
from logitspec.core.limits import InputError, Limits
from logitspec.core.errors import ModelLoadError
from logitspec.runtime.heap import freeze_heap
from serve.model_cache import BUNDLED, ModelCache, allowed_models, check_model_choice
from serve.stop import StopSignals
from logitspec.core.trace import read_trace_file

LIMIT = Limits().trace_bytes


def test_allow_list_is_bundled_plus_env_with_env_default_first():
    assert allowed_models({}) == [BUNDLED]
    env = {"LOGITSPEC_MODELS": " Qwen/Qwen2.5-7B-Instruct, meta-llama/Llama-3.1-8B-Instruct ,,",
           "LOGITSPEC_DEFAULT_MODEL": "Qwen/Qwen2.5-7B-Instruct"}
    assert allowed_models(env) == ["Qwen/Qwen2.5-7B-Instruct", BUNDLED, "meta-llama/Llama-3.1-8B-Instruct"]


@pytest.mark.parametrize("bad", ["/etc/passwd", "../models/x", "gpt2", "", None, 3])
def test_choices_off_the_allow_list_are_refused(bad):
    with pytest.raises(InputError, match="not offered"):
        check_model_choice(bad, {"LOGITSPEC_MODELS": "Qwen/Qwen2.5-0.5B-Instruct"})


def test_allowed_choice_passes():
    assert check_model_choice("Qwen/Qwen2.5-0.5B-Instruct", {"LOGITSPEC_MODELS": "Qwen/Qwen2.5-0.5B-Instruct"}) \
        == "Qwen/Qwen2.5-0.5B-Instruct"


class _Loaded:
    device = "cpu"

    def __init__(self, name: str) -> None:
        self.name = name


def test_cache_loads_once_and_bounds_how_many_it_keeps():
    calls: list[str] = []

    def loader(name: str):
        calls.append(name)
        return _Loaded(name)

    cache = ModelCache(loader=loader, keep=2)
    threads = [threading.Thread(target=cache.get, args=("a",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["a"]
    assert cache.status("a").state == "ready"
    cache.get("b")
    cache.get("c")
    assert cache.loaded("a") is None and cache.loaded("c").name == "c"
    assert cache.status("a").state == "idle"


def test_a_model_unloaded_to_make_room_is_freed_despite_the_frozen_heap():
    class Cyclic(_Loaded):
        def __init__(self, name: str) -> None:
            super().__init__(name)
            self.me = self  # only the cyclic collector can free it

    refs = {}

    def loader(name: str):
        lm = Cyclic(name)
        refs[name] = weakref.ref(lm)
        freeze_heap()  # as load_model does
        return lm

    try:
        cache = ModelCache(loader=loader, keep=1)
        cache.get("a")
        cache.get("b")
        assert refs["a"]() is None and refs["b"]() is cache.loaded("b")
    finally:
        gc.unfreeze()


def test_a_failed_load_is_reported_and_retried():
    attempts = {"n": 0}

    def loader(name: str):
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise OSError("disk went away")
        return _Loaded(name)

    cache = ModelCache(loader=loader)
    with pytest.raises(ModelLoadError, match="disk went away"):
        cache.get("m")
    assert cache.status("m").state == "failed" and "disk went away" in cache.status("m").message
    assert cache.get("m").name == "m"
    assert cache.status("m").state == "ready"


def test_preload_records_the_reason_of_a_failure():
    def loader(name: str):
        raise ModelLoadError(f"could not load model {name!r}: no such repository")

    cache = ModelCache(loader=loader)
    cache.preload("nope/nope").join(5)
    st = cache.status("nope/nope")
    assert st.state == "failed" and "no such repository" in st.message


def test_stop_signals_per_session():
    sig = StopSignals()
    a1 = sig.start("a")
    b = sig.start("b")
    a2 = sig.start("a")  # a new run of the same user stops the old one
    assert a1.is_set() and not a2.is_set() and not b.is_set()
    assert sig.stop("a") is True and a2.is_set() and not b.is_set()
    assert sig.stop("a") is False
    sig.finish("b", b)
    assert sig.running() == 0


def test_a_stop_pressed_while_the_run_waits_is_seen_when_it_begins():
    sig = StopSignals()
    armed = sig.start("a")  # Run clicked: the run now waits in the queue
    assert sig.stop("a") is True  # Stop clicked while it waits
    ev = sig.claim("a")  # the run begins
    assert ev is armed and ev.is_set()
    assert sig.running() == 1
    sig.finish("a", ev)
    assert sig.running() == 0
    fresh = sig.claim("b")  # a run started without arming (an API call) gets its own flag
    assert not fresh.is_set() and sig.claim("b") is not fresh  # a flag is claimed once


def test_a_session_knows_its_own_race_from_another_visitors():
    sig = StopSignals()
    mine = sig.claim("a")  # this page's race runs
    assert sig.racing("a") and not sig.racing("b")
    again = sig.start("a")  # Run pressed again on the same page: the running race is told to stop
    assert mine.is_set() and not again.is_set()
    assert not sig.racing("a")  # the new race has not begun; the old one still ends its step
    sig.finish("a", mine)
    assert sig.claim("a") is again and sig.racing("a")


# ---------------------------------------------------------------- uploaded traces

def test_a_recorded_trace_loads_and_equals_the_file():
    t = read_trace_file(FIXTURES / "coding-121.json.gz", LIMIT)
    ref = json.loads(fixture_text(FIXTURES / "coding-121.json.gz"))
    assert t.tokens == [tok for s in ref["steps"] for tok in s["tokens"]]
    assert t.model == "SmolLM2-135M-Instruct"


def test_a_gzipped_trace_reads_as_its_json_within_the_limit_once_unpacked(tmp_path):
    text = fixture_text(FIXTURES / "coding-121.json.gz")
    packed, size = FIXTURES / "coding-121.json.gz", len(text.encode("utf-8"))
    assert read_trace_file(packed, size).tokens == read_trace_file(_write(tmp_path, text), LIMIT).tokens
    assert packed.stat().st_size < size - 1  # a file under the limit that unpacks past it is refused
    with pytest.raises(InputError, match="unpacks to more than"):
        read_trace_file(packed, size - 1)
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(packed.read_bytes()[:2] + b"not a deflate stream")
    with pytest.raises(InputError, match="gzip but cannot be unpacked"):
        read_trace_file(broken, LIMIT)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "up.json"
    p.write_text(text, encoding="utf-8")
    return p


def test_not_json(tmp_path):
    with pytest.raises(InputError, match="not JSON"):
        read_trace_file(_write(tmp_path, "hello, this is not json {"), LIMIT)


def test_truncated(tmp_path):
    text = fixture_text(FIXTURES / "coding-121.json.gz")
    with pytest.raises(InputError, match="truncated"):
        read_trace_file(_write(tmp_path, text[: len(text) // 2]), LIMIT)


@pytest.mark.parametrize("data", [[1, 2, 3], {"steps": 5}, {"hello": "world"},
                                  {"format": "other/1", "steps": []}])
def test_wrong_shape(tmp_path, data):
    with pytest.raises(InputError, match="not a LogitSpec trace"):
        read_trace_file(_write(tmp_path, json.dumps(data)), LIMIT)


def test_wrong_shape_inside_steps(tmp_path):
    d = json.loads(fixture_text(FIXTURES / "coding-121.json.gz"))
    d["steps"][0]["tree"] = [{"id": 0}]
    with pytest.raises(InputError, match="wrong shape"):
        read_trace_file(_write(tmp_path, json.dumps(d)), LIMIT)


def test_over_the_size_limit(tmp_path):
    with pytest.raises(InputError, match=r"the limit is 98 kB"):  # 100,000 bytes
        read_trace_file(FIXTURES / "coding-121.json.gz", 100_000)


def test_token_ids_outside_the_vocabulary(tmp_path):
    d = json.loads(fixture_text(FIXTURES / "coding-121.json.gz"))
    d["steps"][2]["tokens"][0] = 49152  # the bundled model's vocabulary is 0..49151
    with pytest.raises(InputError, match="outside the vocabulary"):
        read_trace_file(_write(tmp_path, json.dumps(d)), LIMIT)
    d["steps"][2]["tokens"][0] = -4
    with pytest.raises(InputError, match="not a whole number"):
        read_trace_file(_write(tmp_path, json.dumps(d)), LIMIT)


def test_a_field_the_format_does_not_know_is_named_in_the_files_terms(tmp_path):
    d = json.loads(fixture_text(FIXTURES / "coding-121.json.gz"))
    d["steps"][0]["nonsense"] = 1
    with pytest.raises(InputError, match="a field the format does not know: 'nonsense'") as e:
        read_trace_file(_write(tmp_path, json.dumps(d)), LIMIT)
    assert "__init__" not in str(e.value) and "StepRecord" not in str(e.value)


def test_a_file_cut_mid_string_is_called_truncated(tmp_path):
    text = fixture_text(FIXTURES / "coding-121.json.gz")
    cut = text.index('"', len(text) // 3) + 3  # inside a string, far from the end
    with pytest.raises(InputError, match="truncated"):
        read_trace_file(_write(tmp_path, text[:cut]), LIMIT)


def test_unknown_model_ids_must_be_in_the_traces_own_table(tmp_path):
    d = json.loads(fixture_text(FIXTURES / "coding-121.json.gz"))
    d["model"] = "someone/else"
    assert read_trace_file(_write(tmp_path, json.dumps(d)), LIMIT).model == "someone/else"
    d["steps"][0]["tokens"][0] = 900_000
    with pytest.raises(InputError, match="token table does not know"):
        read_trace_file(_write(tmp_path, json.dumps(d)), LIMIT)


def test_warm_up_runs_on_a_fresh_model_before_it_is_ready():
    seen: list[tuple[str, str]] = []
    cache: ModelCache

    def warm(lm) -> None:
        seen.append((lm.name, cache.status(lm.name).message))

    cache = ModelCache(loader=_Loaded, warm=warm)
    cache.get("m")
    cache.get("m")
    assert len(seen) == 1 and seen[0][0] == "m" and "draft-tree token costs" in seen[0][1]
    assert cache.status("m").state == "ready"


def test_the_example_cache_folder_follows_the_content_it_is_drawn_from(tmp_path):
    from serve.examples import example_cache_folder

    a, b = tmp_path / "a.json", tmp_path / "b.py"
    a.write_text("{}")
    b.write_text("x = 1")
    first = example_cache_folder(tmp_path / "cache", [a, b])
    assert first.parent == tmp_path / "cache"
    assert example_cache_folder(tmp_path / "cache", [b, a]) == first  # order does not matter
    b.write_text("x = 2")
    assert example_cache_folder(tmp_path / "cache", [a, b]) != first


def test_loading_and_warm_up_run_on_the_model_thread():
    seen: list[int] = []

    def loader(name: str):
        seen.append(threading.get_ident())
        return _Loaded(name)

    cache = ModelCache(loader=loader, warm=lambda lm: seen.append(threading.get_ident()))
    cache.preload("m").join(10)
    assert cache.status("m").state == "ready"
    assert seen == [cache.thread.call(threading.get_ident)] * 2

"""Converted GGUF weights cached for later starts: bit-identical, rebuilt when damaged or stale."""
from __future__ import annotations

import os
import shutil
import threading

import pytest
import torch

from helpers.gguf_files import write_gguf
from logitspec.runtime import weightcache
from logitspec.models import load_model

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("LOGITSPEC_KERNEL_DIR", str(folder))
    return folder


def same_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def entry(cache_dir):
    entries = [p for p in (cache_dir / "weights").iterdir()]
    assert len(entries) == 1 and not entries[0].name.startswith(".tmp")
    return entries[0]


def test_the_second_load_reads_the_converted_weights_bit_identical(tmp_path, cache_dir):
    path = write_gguf(tmp_path / "tiny-llama.gguf")
    first = load_model(str(path))
    assert first.weights_from == "gguf"
    folder = entry(cache_dir)
    assert (folder / weightcache.MANIFEST).is_file()
    second = load_model(str(path))
    assert second.weights_from == "cache" and second.name == first.name == "tiny-llama"
    assert same_weights(first.model, second.model)
    plain = {k: v for k, v in first.model.config.to_dict().items() if k != "quantization_config"}
    assert second.model.config.to_dict() == plain  # the GGUF's quantisation is undone in both
    ids = [5, 9, 30, 2]
    assert second.tokenizer.decode(ids) == first.tokenizer.decode(ids)
    assert second.tokenizer("t5 t9")["input_ids"] == first.tokenizer("t5 t9")["input_ids"]


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest"])
def test_a_damaged_entry_is_rebuilt_not_trusted(tmp_path, cache_dir, damage):
    path = write_gguf(tmp_path / "tiny-llama.gguf")
    first = load_model(str(path))
    folder = entry(cache_dir)
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    if damage == "truncate":
        weights.write_bytes(bytes(data[: len(data) - 100]))
    elif damage == "flip":
        data[-5] ^= 0xFF  # a flipped byte inside a tensor: the file still parses
        weights.write_bytes(bytes(data))
    else:
        (folder / weightcache.MANIFEST).write_text("{")
    again = load_model(str(path))
    assert again.weights_from == "gguf" and same_weights(first.model, again.model)
    assert load_model(str(path)).weights_from == "cache"  # the rebuilt entry serves again
    entry(cache_dir)


def test_a_changed_gguf_file_is_converted_afresh(tmp_path, cache_dir):
    path = write_gguf(tmp_path / "tiny-llama.gguf", seed=0)
    first = load_model(str(path))
    write_gguf(path, seed=1)  # same name, new weights
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    second = load_model(str(path))
    assert second.weights_from == "gguf" and not same_weights(first.model, second.model)


def test_the_same_file_installed_elsewhere_is_served_by_the_one_entry(tmp_path, cache_dir):
    """A new venv or a copy has a new place and modification time, and the same weights."""
    path = write_gguf(tmp_path / "tiny-llama.gguf", seed=0)
    first = load_model(str(path))
    copy = tmp_path / "elsewhere" / "tiny-llama.gguf"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    os.utime(copy, ns=(copy.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    again = load_model(str(copy))
    assert again.weights_from == "cache" and same_weights(first.model, again.model)
    entry(cache_dir)  # one entry for both


def test_a_load_waits_for_a_conversion_under_way_and_reads_its_entry(tmp_path, cache_dir):
    """Two processes starting on a cold cache convert the file once: the second waits on the
    first's lock and then reads the entry it wrote (here the first's conversion is staged: the
    entry is held aside while this test holds the lock)."""
    path = write_gguf(tmp_path / "tiny-llama.gguf")
    first = load_model(str(path))
    folder = entry(cache_dir)
    aside = tmp_path / "aside"
    folder.rename(aside)
    got = {}
    waiter = threading.Thread(target=lambda: got.update(lm=load_model(str(path))))
    with weightcache.conversion_lock(weightcache.cache_key(path, "float32")):
        waiter.start()
        waiter.join(1.5)
        assert waiter.is_alive(), "the load converted the file instead of waiting for the conversion under way"
        aside.rename(folder)  # the other process's entry, in place as it lets go of the lock
    waiter.join(60)
    assert got["lm"].weights_from == "cache" and same_weights(first.model, got["lm"].model)


def test_an_unwritable_cache_only_costs_the_conversion(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LOGITSPEC_KERNEL_DIR", str(blocker / "cache"))
    path = write_gguf(tmp_path / "tiny-llama.gguf")
    assert load_model(str(path)).weights_from == "gguf"
    assert load_model(str(path)).weights_from == "gguf"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_is_cast_from_the_float32_entry_bit_identical(tmp_path, cache_dir, dtype):
    """The float32 entry serves a half-precision load, as converting the file in that dtype would."""
    path = write_gguf(tmp_path / "tiny-llama.gguf")
    assert load_model(str(path)).weights_from == "gguf"  # the float32 entry
    half = load_model(str(path), dtype=dtype)
    assert half.weights_from == "cache" and half.model.dtype == getattr(torch, dtype)
    shutil.rmtree(cache_dir)
    direct = load_model(str(path), dtype=dtype)
    assert direct.weights_from == "gguf" and same_weights(half.model, direct.model)
    assert load_model(str(path), dtype=dtype).weights_from == "cache"  # its own entry now

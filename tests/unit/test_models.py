"""Model loading: the bundled SmolLM2 and readable failures for anything that cannot load."""
from __future__ import annotations

from pathlib import Path

import huggingface_hub.constants
import pytest
import torch

from logitspec.models import BUNDLED_FILE, bundled_gguf, load_model, pick_device
from logitspec.core.errors import ModelLoadError


@pytest.fixture
def offline(monkeypatch):
    """No model hub is reachable here; offline mode makes the lookup fail at once instead of
    after the hub client's retries."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def assert_readable(err: ModelLoadError, *must_contain: str) -> None:
    msg = str(err)
    assert msg and "\n" not in msg and "Traceback" not in msg
    for part in must_contain:
        assert part in msg


@pytest.mark.parametrize("path", ["/nonexistent/models/llama", "./no-such-folder/model", "/tmp/absent/model.gguf"])
def test_missing_local_path(path):
    with pytest.raises(ModelLoadError) as e:
        load_model(path)
    assert_readable(e.value, path, "does not exist")


def test_unknown_hub_id(offline):
    with pytest.raises(ModelLoadError) as e:
        load_model("no-such-org/no-such-model-4242")
    assert_readable(e.value, "no-such-org/no-such-model-4242")


def test_folder_without_a_model(tmp_path, offline):
    with pytest.raises(ModelLoadError) as e:
        load_model(str(tmp_path))
    assert_readable(e.value, "could not load model")


def test_corrupt_gguf_file(tmp_path, offline):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x00\x01garbage" * 64)
    with pytest.raises(ModelLoadError) as e:
        load_model(str(bad))
    assert_readable(e.value, "could not load model")


def test_unknown_dtype():
    with pytest.raises(ModelLoadError) as e:
        load_model("bundled", dtype="float8")
    assert_readable(e.value, "float8", "float32")


def test_pick_device():
    assert pick_device("cpu") == "cpu"
    assert pick_device(None) == pick_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")


def test_bundled_file_is_installed():
    folder, name = bundled_gguf()
    assert name == BUNDLED_FILE
    assert (Path(folder) / name).stat().st_size > 50_000_000  # the real weights, not a pointer


@pytest.mark.slow
def test_bundled_model_loads_and_speaks(bundled):
    assert bundled.name == "SmolLM2-135M-Instruct"
    assert bundled.dtype == "float32" and next(bundled.model.parameters()).dtype == torch.float32
    assert not bundled.model.training
    assert 2 in bundled.eos_ids  # <|im_end|>
    assert bundled.max_context >= 2048
    ids = bundled.encode_chat("What is 2 + 2?")
    text = bundled.tokenizer.decode(ids)
    # The chat template wraps the message and opens the assistant's turn.
    assert "<|im_start|>user\nWhat is 2 + 2?<|im_end|>" in text
    assert text.rstrip().endswith("<|im_start|>assistant")
    raw = bundled.encode_chat("What is 2 + 2?", chat=False)
    assert bundled.decode(raw) == "What is 2 + 2?"
    assert bundled.token_texts(raw[:2]) == {str(t): bundled.tokenizer.decode([t]) for t in raw[:2]}

"""`python app.py --model …` (serve/own_model.py): a bad path, a file that is not a model, a folder
with no model and a family the decoders cannot serve are refused in one line before any weight
loads; the bundled GGUF and 'bundled' are taken."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.paths import ROOT
from logitspec.core.errors import ModelLoadError
from logitspec.models import bundled_gguf
from serve.own_model import check_model_arg, model_from_argv


def refused(name) -> str:
    with pytest.raises(ModelLoadError) as e:
        check_model_arg(str(name))
    assert "\n" not in str(e.value)
    return str(e.value)


def test_bad_paths_and_files_are_refused(tmp_path):
    assert "the path does not exist" in refused(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("hello")
    assert "is not a model: give a folder, a .gguf file or a hub id" in refused(tmp_path / "notes.txt")
    (tmp_path / "empty").mkdir()
    assert "holds no config.json and no .gguf file" in refused(tmp_path / "empty")


@pytest.mark.parametrize("config, words", [
    ({"model_type": "bloom", "n_layer": 2, "n_head": 2, "hidden_size": 8}, "ALiBi is not supported"),
    ({"model_type": "mamba", "num_hidden_layers": 2, "hidden_size": 8}, "is not supported"),
])
def test_an_unsupported_family_is_refused_from_its_config(tmp_path, config, words):
    (tmp_path / "config.json").write_text(json.dumps(config))
    message = refused(tmp_path)
    assert message.startswith("cannot use model") and words in message, message


def test_the_bundled_model_is_taken_by_name_and_by_its_file(monkeypatch):
    monkeypatch.delenv("LOGITSPEC_DEFAULT_MODEL", raising=False)
    assert check_model_arg("bundled") == "bundled"
    folder, name = bundled_gguf()
    path = os.path.join(folder, name)
    assert check_model_arg(path) == os.path.realpath(path)
    assert model_from_argv(["--model", path]) == os.path.realpath(path)
    assert os.environ["LOGITSPEC_DEFAULT_MODEL"] == os.path.realpath(path)  # the page's menu offers it first


@pytest.mark.slow
def test_app_refuses_a_bad_model_in_one_line_before_loading(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "app.py"), "--model", str(tmp_path / "nowhere.gguf")],
                       capture_output=True, text=True, timeout=400, cwd=ROOT)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"error: no model found at '{tmp_path / 'nowhere.gguf'}': the path does not exist"]

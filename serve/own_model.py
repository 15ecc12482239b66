"""`python app.py --model <folder | file.gguf | hub id>`: the app on your own model.

The name is checked before anything loads: a path that does not exist, a file that is not a
GGUF, a folder with no model config, or a family the decoders cannot serve (read from the config
alone, no weights) is refused in one line. The model then becomes the deployment's default
(LOGITSPEC_DEFAULT_MODEL), which the page's model menu offers first.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from logitspec import environment
from logitspec.core.errors import ModelLoadError
from serve.model_cache import BUNDLED

HOW_TO_OPEN = "python app.py --model <folder | file.gguf | hub id>"


def check_model_arg(name: str) -> str:
    """The model to serve: 'bundled', an absolute path, or a hub id; ModelLoadError in one line
    when it cannot be one the decoders serve."""
    from logitspec.models import BUNDLED_ALIASES, _check_hub_id, _read_config, _source

    name = (name or "").strip()
    if not name or name.lower() in BUNDLED_ALIASES:
        return BUNDLED
    p = Path(name).expanduser()
    if p.is_file() and p.suffix != ".gguf":
        raise ModelLoadError(f"{name!r} is not a model: give a folder, a .gguf file or a hub id")
    src, gguf, display = _source(str(p) if p.exists() else name)  # a path that does not exist is refused here
    if not p.exists():
        _check_hub_id(src)
    if gguf is None and p.is_dir() and not (p / "config.json").is_file():
        raise ModelLoadError(f"no model in the folder {name!r}: it holds no config.json and no .gguf file")
    _read_config(src, display, {"gguf_file": gguf} if gguf else {})  # the family, refused before any weight
    return str(p.resolve()) if p.exists() else name


def model_note(name: str) -> str:
    """The model menu's line: which model the app serves by default and how to open another."""
    return f"Serving {name} first. Another model: {HOW_TO_OPEN} (or make demo MODEL=…)."


def model_from_argv(argv: list[str] | None = None) -> str | None:
    """The --model the command line names, checked (ModelLoadError), and made the default; None when none."""
    parser = argparse.ArgumentParser(prog="python app.py", description="LogitSpec Explorer")
    parser.add_argument("--model", help="a local folder, a .gguf file or a hub id (default: the bundled model)")
    args = parser.parse_args(argv)
    if args.model is None:
        return None
    model = check_model_arg(args.model)
    os.environ[environment.DEFAULT_MODEL.name] = model
    return model

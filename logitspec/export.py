"""Write a model the project loads (the bundled SmolLM2 by default) as a transformers folder:
config, safetensors weights and tokenizer, the form a serving engine (vLLM) reads."""
from __future__ import annotations

import json
from pathlib import Path

from .core.errors import ModelLoadError


def export_model(dest: str | Path, name: str = "bundled", dtype: str = "float32") -> Path:
    """Save `name` (as logitspec.models.load_model reads it) to the folder `dest`; returns it.

    The weights are the loaded model's own (a GGUF file dequantised to `dtype`), so an engine
    serving the folder computes the same model the project decodes.
    """
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise ModelLoadError(f"cannot export to {str(dest)!r}: it is a file, not a folder")
    if dest.is_dir() and any(dest.iterdir()):
        raise ModelLoadError(f"cannot export to {str(dest)!r}: the folder is not empty")
    from .models import load_model

    lm = load_model(name, "cpu", dtype)
    model = lm.model
    # The project's tree attention is registered under its own name; the folder names stock SDPA.
    model.config._attn_implementation = "sdpa"
    # Read from a GGUF file, the weights are already dequantised floats: saved as plain ones.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # Only the parameters and buffers the architecture declares: the packed copies the project
    # keeps for its own kernels are plain attributes and never reach the file.
    model.save_pretrained(dest, safe_serialization=True)
    lm.tokenizer.save_pretrained(dest)
    check_config(dest / "config.json")
    return dest


def check_config(path: Path) -> None:
    """Refuse a written config that names anything but stock attention."""
    config = json.loads(path.read_text())
    impl = config.get("attn_implementation") or config.get("_attn_implementation")
    if impl not in (None, "sdpa", "eager"):
        raise ModelLoadError(f"{path} names attention {impl!r}, which engines do not know")

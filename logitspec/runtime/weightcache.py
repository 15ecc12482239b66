"""Converted weights of a GGUF model, cached so that later starts skip the dequantisation.

transformers reads a GGUF file by dequantising every tensor to float at every start, the
slow part of loading (timings: docs/performance.md). The first load writes the converted
model (safetensors, config, tokenizer) under the kernel cache folder (LOGITSPEC_KERNEL_DIR, else
~/.cache/logitspec), in a folder named by the GGUF file's name and the SHA-256 of its bytes, the
transformers version and the dtype, so a changed file or library reads afresh, and the same file
installed again elsewhere (a new venv, a copy) is served by the one entry. A
manifest holds each file's size and SHA-256; an entry that does not match it is rebuilt,
never used. Entries are written to a temporary folder and renamed into place.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

log = logging.getLogger(__name__)

MANIFEST = "logitspec-weights.json"
FORMAT = "logitspec-weights/1"


@dataclass
class CacheKey:
    """What the converted weights depend on."""

    gguf: str  # the file's name
    size: int
    sha256: str  # of the file's bytes: its place and modification time say nothing of its weights
    transformers: str
    dtype: str

    def folder(self) -> Path:
        from .fewrows import cache_root

        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]
        return cache_root() / "weights" / f"{Path(self.gguf).stem}-{digest}"


def cache_key(gguf_path: Path, dtype: str) -> CacheKey:
    import transformers

    return CacheKey(gguf_path.name, gguf_path.stat().st_size, _digest(gguf_path), transformers.__version__, dtype)


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def cached_folder(key: CacheKey) -> Path | None:
    """The entry's folder if its manifest matches the key and every file its size and hash."""
    folder = key.folder()
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT or manifest.get("key") != asdict(key):
            return None
        for name, (size, digest) in manifest["files"].items():
            f = folder / name
            if f.stat().st_size != size or _digest(f) != digest:
                log.info("converted weights at %s are damaged (%s); converting again", folder, name)
                return None
        return folder
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@contextmanager
def conversion_lock(key: CacheKey) -> Iterator[None]:
    """One conversion of a GGUF file at a time across processes (two app workers or test
    workers starting together): an OS lock, released when its holder dies. Per file, not per
    dtype, so a half-precision load waits for the float32 entry and casts it. Without a
    writable cache folder there is nothing to share and no lock."""
    import fcntl

    from .fewrows import cache_root

    path = cache_root() / "weights.locks" / f"{Path(key.gguf).stem}-{key.sha256[:16]}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = path.open("w")
    except OSError:
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _save_model(model, folder: Path) -> None:
    """The float state dict as safetensors plus the config, as a plain model folder.

    save_pretrained refuses a model read from GGUF (it counts as quantised), so the
    tensors are written directly; tied tensors are written once and tied again on load.
    """
    from safetensors.torch import save_model

    save_model(model, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)  # the weights are plain floats now
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(folder)


def store(key: CacheKey, model, tokenizer) -> Path | None:
    """Write the converted model and tokenizer as the key's entry; None when it cannot be
    written (a read-only disk only costs the conversion next time)."""
    folder = key.folder()
    tmp = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-"))
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide the entry from a server run as another user
        _save_model(model, tmp)
        tokenizer.save_pretrained(tmp)
        files = {p.name: [p.stat().st_size, _digest(p)] for p in sorted(tmp.iterdir()) if p.is_file()}
        (tmp / MANIFEST).write_text(json.dumps({"format": FORMAT, "key": asdict(key), "files": files}))
        if folder.exists():  # a damaged or partial entry: replaced, never merged
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
        return folder
    except Exception as e:  # any fault in writing only costs the conversion next time
        log.info("converted weights not cached: %s", e)
        return None
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)

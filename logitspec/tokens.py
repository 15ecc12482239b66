"""The raw bytes of a token id, for any Hugging Face tokenizer.

`tokenizer.decode([t])` cannot show a token that holds only part of a UTF-8 character: a
byte-level BPE token (GPT-2, SmolLM2, Llama 3, Qwen) or a SentencePiece byte-fallback token
(`<0xE6>`, Llama 2, Gemma) decodes to "\ufffd" alone. The trace records each token's bytes
instead, so the pictures can join them into whole characters. Nothing here imports torch.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")
SP_SPACE = "\u2581"  # SentencePiece's "▁": a space in the text


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table from each byte to the printable character that stands for it in the vocab."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


@functools.lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def _decoder_types(tokenizer: Any) -> set[str]:
    """Type names in a fast tokenizer's decoder (a Sequence lists its parts); empty for a slow one."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None)
    if decoder is None:
        return set()
    try:
        state = json.loads(decoder.__getstate__())
    except (TypeError, ValueError, AttributeError):
        return {type(decoder).__name__}
    parts = state.get("decoders") or [state]
    return {p.get("type", "") for p in parts if isinstance(p, dict)}


def is_byte_level(tokenizer: Any) -> bool:
    """True for byte-level BPE: every vocab string spells bytes through GPT-2's table."""
    if getattr(tokenizer, "byte_decoder", None):  # slow GPT2Tokenizer and kin
        return True
    return "ByteLevel" in _decoder_types(tokenizer)


def _special_texts(tokenizer: Any) -> dict[int, str]:
    """Added and special tokens: their literal text (decode shows them as written)."""
    out = {int(i): str(getattr(t, "content", t)) for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items()}
    for i in getattr(tokenizer, "all_special_ids", []) or []:
        out.setdefault(int(i), tokenizer.convert_ids_to_tokens(int(i)))
    return out


def _piece_bytes(piece: str | None, byte_level: bool) -> bytes | None:
    """Bytes spelled by a vocab string, or None when the string does not spell bytes this way."""
    if piece is None:
        return None
    if byte_level:
        table = unicode_to_bytes()
        if all(c in table for c in piece):
            return bytes(table[c] for c in piece)
        return None
    m = BYTE_FALLBACK.fullmatch(piece)
    if m:
        return bytes([int(m.group(1), 16)])
    return piece.replace(SP_SPACE, " ").encode("utf-8")


def token_bytes(tokenizer: Any, tokens: Iterable[int]) -> dict[int, bytes]:
    """Each token id's raw bytes: joined in order they are the UTF-8 of the decoded text.

    Special and added tokens give their literal text; byte-level BPE maps the vocab string
    back through GPT-2's byte table; SentencePiece gives `<0xNN>` as that byte and "▁" as a
    space; anything else falls back to the UTF-8 of `decode([t])`.
    """
    ids = sorted(set(int(t) for t in tokens))
    specials = _special_texts(tokenizer)
    byte_level = is_byte_level(tokenizer)
    sentencepiece = not byte_level and bool(_decoder_types(tokenizer) & {"ByteFallback", "Metaspace", "Replace"})
    out: dict[int, bytes] = {}
    for t in ids:
        if t in specials:
            out[t] = specials[t].encode("utf-8")
            continue
        got = None
        if byte_level or sentencepiece or getattr(tokenizer, "sp_model", None) is not None:
            got = _piece_bytes(tokenizer.convert_ids_to_tokens(t), byte_level)
        out[t] = got if got is not None else tokenizer.decode([t]).encode("utf-8")
    return out


def token_bytes_hex(tokenizer: Any, tokens: Iterable[int]) -> dict[str, str]:
    """`token_bytes` as the trace stores it: token id (a string) -> hex of its bytes."""
    return {str(t): b.hex() for t, b in token_bytes(tokenizer, tokens).items()}

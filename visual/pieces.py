"""Token bytes joined into whole characters, one display piece per token.

A byte-level token may hold only part of a UTF-8 character (an emoji is often three tokens).
Decoding the joined bytes incrementally shows each character whole at the token that
completes it, never "\ufffd". Bytes that are only part of a character show as hex, e.g.
‹E3 81›, wherever a token is drawn alone: the one notation for them (SPLIT_NOTE says it on
screen). Pure Python: no tokenizer, no torch.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HEX_SEP = "\u2009"  # a thin space between hex bytes: `visible` would turn a plain space into ·
SPLIT_NOTE = ("‹E3 81›: the bytes, in hex, of a character split between tokens; "
              "the token that ends it shows it whole")


def split_note(*drawn: str) -> str:
    """SPLIT_NOTE where any of `drawn` shows bytes as ‹hex›, else ""."""
    return SPLIT_NOTE if any("‹" in d for d in drawn) else ""


def whole_characters(data: bytes) -> bool:
    """Whether the bytes are whole UTF-8 characters (a token drawn alone shows no ‹hex›)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass
class TokenPiece:
    """What one token shows inside a run of tokens."""

    text: str  # the characters this token completes (bytes that form none as ‹hex›)
    split: bytes = b""  # this token's bytes of a character a later token ends (or may end)

    @property
    def pending(self) -> bool:
        """Part of this token's bytes belong to a character a later token ends."""
        return bool(self.split)

    def label(self) -> str:
        """The token drawn alone: its characters, then its bytes of a character a later token ends."""
        return self.text + (hex_bytes(self.split) if self.split else "")


def char_length(lead: int) -> int:
    """Bytes in a UTF-8 character that starts with `lead` (0 for a byte no character starts with)."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def incomplete_start(data: bytes) -> int:
    """Where a trailing character that later bytes could still complete starts (len(data) if none)."""
    for k in range(1, min(4, len(data)) + 1):
        b = data[-k]
        if 0x80 <= b <= 0xBF:
            continue  # a continuation byte: look further back for its lead
        return len(data) - k if char_length(b) > k else len(data)
    return len(data)


def hex_bytes(data: bytes) -> str:
    """Bytes as readable hex: b"\\xe3\\x81" -> ‹E3 81› (thin spaces between)."""
    return "‹" + HEX_SEP.join(f"{b:02X}" for b in data) + "›"


class _Parts:
    """Per-token text being built; undecodable bytes of one token gather into one ‹hex› group."""

    def __init__(self, n: int) -> None:
        self.parts: list[list[str | bytearray]] = [[] for _ in range(n)]

    def text(self, i: int, s: str) -> None:
        self.parts[i].append(s)

    def byte(self, i: int, b: int) -> None:
        p = self.parts[i]
        if not p or not isinstance(p[-1], bytearray):
            p.append(bytearray())
        p[-1].append(b)

    def joined(self, i: int) -> str:
        return "".join(hex_bytes(bytes(p)) if isinstance(p, bytearray) else p for p in self.parts[i])


def _emit(held: list[tuple[int, int]], i: int, out: _Parts, split: list[bytearray]) -> None:
    """Decode held (owner, byte) pairs: a character goes to token i, which completes it; a byte
    that forms no character goes back to the token it came from (dropped if from the context)."""
    data = bytes(b for _, b in held)
    pos = 0
    for ch in data.decode("utf-8", errors="surrogateescape"):
        if "\udc80" <= ch <= "\udcff":
            owner = held[pos][0]
            if owner >= 0:
                out.byte(owner, held[pos][1])
            pos += 1
            continue
        size = len(ch.encode("utf-8"))
        for owner, b in held[pos:pos + size]:
            if 0 <= owner < i:
                split[owner].append(b)
        out.text(i, ch)
        pos += size


def join_pieces(chunks: Sequence[bytes], before: bytes = b"", final: bool = True) -> list[TokenPiece]:
    """One piece per chunk (a token's bytes), decoding all of them joined, after `before`.

    `before` is what precedes the run (the context); only its unfinished last character
    matters, and a chunk that completes it shows it whole. With `final`, bytes still
    unfinished at the end show as ‹hex› at their tokens; without, those tokens are pending.
    """
    n = len(chunks)
    before = bytes(before)
    held: list[tuple[int, int]] = [(-1, b) for b in before[incomplete_start(before):]]
    out, split = _Parts(n), [bytearray() for _ in range(n)]
    for i, chunk in enumerate(chunks):
        held += [(i, b) for b in chunk]
        cut = incomplete_start(bytes(b for _, b in held))
        _emit(held[:cut], i, out, split)
        held = held[cut:]
    for owner, b in held:
        if owner < 0:
            continue
        if final:
            out.byte(owner, b)
        else:
            split[owner].append(b)
    return [TokenPiece(out.joined(i), bytes(split[i])) for i in range(n)]

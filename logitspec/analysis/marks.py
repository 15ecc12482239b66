"""Whitespace and control characters made visible in token text, for every table and drawing."""
from __future__ import annotations

# Whitespace drawn as a mark every font holds (␍, the control picture, draws as a missing-glyph box).
WHITESPACE_MARKS: dict[str, tuple[str, str]] = {
    " ": ("·", "a space"), "\n": ("⏎", "a new line"), "\t": ("⇥", "a tab"), "\r": ("⇤", "a carriage return"),
}


def visible(text: str) -> str:
    """Token text with its whitespace made visible: space ·, newline ⏎, tab ⇥, carriage return ⇤."""
    out = []
    for ch in text:
        if ch in WHITESPACE_MARKS:
            out.append(WHITESPACE_MARKS[ch][0])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out) if out else "∅"

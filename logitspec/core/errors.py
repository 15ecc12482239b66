"""Errors whose messages are meant for users (light to import: no torch)."""
from __future__ import annotations


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says why in plain words."""


class DecodeError(RuntimeError):
    """Decoding cannot go on (e.g. out of accelerator memory); the message says why."""

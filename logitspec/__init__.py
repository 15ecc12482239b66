"""LogitSpec: training-free speculative decoding that drafts from the next-next token's guesses,
with every step recorded as a trace. `generate` and `stream` decode on your own model
(logitspec.api); `logitspec.custom_generate.generate` plugs into transformers'
`model.generate(custom_generate=...)`."""
from __future__ import annotations

from .api import Result, generate, stream

__version__ = "0.6.0"
__all__ = ["Result", "generate", "stream", "__version__"]

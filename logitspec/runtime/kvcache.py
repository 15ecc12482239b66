"""A KV cache that writes each step's entries into a reserved buffer instead of re-copying it.

transformers' DynamicCache appends by `torch.cat`, so every forward pass copies the whole
cache of every layer, paid by every decoder and growing with the context (timings,
`python scripts/time_cache.py`: docs/performance.md). Here each layer keeps one buffer with
room for the whole run and a step writes only its new rows.
Sliding-window layers are buffered the same way (`WindowedLayer`): the stock
DynamicSlidingWindowLayer drops rows as it appends, so after a tree pass it may already have
thrown away context rows that the accepted path still needs.
`layer.keys` / `layer.values` stay what the rest of the code and transformers expect: tensors
of shape [B, H, length, d] (views of the buffer), so cutting the cache is still slicing them
and compaction still moves rows in place.
"""
from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer, get_layer_types_and_kwargs

ROUND = 256  # buffers grow in whole blocks of this many positions


class BufferedLayer(DynamicLayer):
    """A DynamicLayer whose keys and values are views of a buffer with room to spare.

    A step writes its new rows after the current length (the length of `keys`, so slicing
    `keys` and `values` shortens the cache). When the buffer is full, or `keys` is no longer
    a view of it (some other code replaced it), the layer moves to a larger buffer.
    """

    reserve: int = 0  # positions to make room for on the first write
    _kbuf: torch.Tensor | None = None
    _vbuf: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self._kbuf = self._vbuf = None

    def _length(self) -> int:
        return self.keys.shape[-2] if self.keys is not None and self.keys.dim() == 4 else 0

    def _views_of_buffer(self) -> bool:
        buf = self._kbuf
        return (buf is not None and self.keys.dim() == 4 and self.values.dim() == 4
                and self.keys.data_ptr() == buf.data_ptr() and self.keys.stride() == buf.stride()
                and self.values.data_ptr() == self._vbuf.data_ptr() and self.values.stride() == self._vbuf.stride())

    def _grow(self, length: int, need: int, like_k: torch.Tensor, like_v: torch.Tensor) -> None:
        """Move to buffers with room for at least `need` positions, keeping the first `length`."""
        old = 0 if self._kbuf is None else self._kbuf.shape[-2]
        room = max(need, self.reserve, 2 * old)
        room = -(-room // ROUND) * ROUND
        b, h, _, d = like_k.shape
        kbuf = like_k.new_empty((b, h, room, d))
        vbuf = like_v.new_empty((b, h, room, like_v.shape[-1]))
        if length:
            kbuf[..., :length, :].copy_(self.keys)
            vbuf[..., :length, :].copy_(self.values)
        self._kbuf, self._vbuf = kbuf, vbuf

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new rows after the cached ones; return all keys and values so far."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length = self._length()
        end = length + key_states.shape[-2]
        if not self._views_of_buffer() or end > self._kbuf.shape[-2]:
            self._grow(length, end, key_states, value_states)
        self._kbuf[..., length:end, :].copy_(key_states)
        self._vbuf[..., length:end, :].copy_(value_states)
        self.keys = self._kbuf[..., :end, :]
        self.values = self._vbuf[..., :end, :]
        return self.keys, self.values

    def reset(self) -> None:
        super().reset()
        self._kbuf = self._vbuf = None


class WindowedLayer(BufferedLayer):
    """A sliding-window layer that keeps every row, like a full one, and shows attention
    only the rows its window can reach.

    Keeping them all lets a tree pass, compaction and cropping work on it exactly as on a
    full layer (rows sit at their absolute positions). What `update` returns, and what
    `get_mask_sizes` tells the mask builders, is the stock sliding layer's view: the last
    W-1 cached rows and the new ones, so a step's attention costs what the stock layer's
    does. The memory is a full layer's: the rows past the window are not freed.
    """

    is_sliding = True
    sliding_window: int = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = super().update(key_states, value_states)
        new = key_states.shape[-2]
        shown = min(keys.shape[-2] - new, self.sliding_window - 1) + new
        return keys[..., -shown:, :], values[..., -shown:, :]

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """(keys shown to a query of this length, position of the first), as the stock layer."""
        length = self.get_seq_length()
        return min(length, self.sliding_window - 1) + query_length, max(length - self.sliding_window + 1, 0)


# Layer classes whose rows compaction may move: full-attention layers and ours.
COMPACTABLE = (DynamicLayer, BufferedLayer, WindowedLayer)


def new_cache(config, reserve: int = 0) -> DynamicCache:
    """A DynamicCache for `config` whose attention layers write into reserved buffers.

    `reserve`: positions the run is expected to reach (prompt + new tokens + one tree), so
    the buffers are allocated once; a longer run still works, the buffers grow. Full
    layers become BufferedLayer, sliding-window layers WindowedLayer; layers of other
    kinds (chunked or linear attention) keep their own classes.
    """
    cache = DynamicCache(config=config)
    kinds, _ = get_layer_types_and_kwargs(config.get_text_config(decoder=True))
    for layer, kind in zip(cache.layers, kinds):
        if type(layer) is DynamicLayer:
            layer.__class__ = BufferedLayer
        elif type(layer) is DynamicSlidingWindowLayer and kind == "sliding_attention":
            layer.__class__ = WindowedLayer
        else:
            continue
        layer.reserve = int(reserve)
    return cache

"""The buffered KV cache: the same entries as the stock cache, written in place."""
from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, LlamaConfig, MistralConfig

from logitspec.runtime.kvcache import ROUND, BufferedLayer, WindowedLayer, new_cache
from logitspec.core.verify import crop_cache

pytestmark = pytest.mark.usefixtures("one_thread")

CFG = LlamaConfig(num_hidden_layers=2, hidden_size=16, num_attention_heads=2, num_key_value_heads=2)


def rows(start: int, n: int, layer: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys holding their position, values holding -position - 100*layer: [1, 2, n, 4]."""
    pos = torch.arange(start, start + n, dtype=torch.float32).view(1, 1, n, 1).expand(1, 2, n, 4)
    return pos.clone(), (-pos - 100 * layer).clone()


def positions(layer, layer_idx: int = 0) -> list[int]:
    """The positions a layer holds, checking its values were kept alongside."""
    assert torch.equal(layer.values[0, 0, :, 0], -layer.keys[0, 0, :, 0] - 100 * layer_idx)
    return [int(x) for x in layer.keys[0, 0, :, 0]]


def test_full_layers_are_buffered_and_sliding_ones_windowed():
    assert [type(layer) for layer in new_cache(CFG, 10).layers] == [BufferedLayer, BufferedLayer]
    sliding = MistralConfig(sliding_window=16, num_hidden_layers=2, hidden_size=32,
                            num_attention_heads=4, num_key_value_heads=2)
    layers = new_cache(sliding, 10).layers
    assert [type(layer) for layer in layers] == [WindowedLayer, WindowedLayer]
    assert all(layer.sliding_window == 16 and layer.reserve == 10 for layer in layers)


def test_rows_are_written_in_place_within_the_reserve():
    cache = new_cache(CFG, reserve=40)
    layer = cache.layers[0]
    cache.update(*rows(0, 10), 0)
    first = layer.keys.data_ptr()
    for start in range(10, 40, 5):
        keys, values = cache.update(*rows(start, 5), 0)
        assert keys is layer.keys and values is layer.values
        assert layer.keys.data_ptr() == first  # no new storage, no copy of the old rows
    assert positions(layer) == list(range(40))
    assert cache.get_seq_length() == 40


def test_a_full_buffer_grows_and_keeps_its_rows():
    cache = new_cache(CFG, reserve=0)
    layer = cache.layers[0]
    cache.update(*rows(0, ROUND - 1), 0)
    before = layer._kbuf.shape[-2]
    cache.update(*rows(ROUND - 1, 3), 0)
    assert layer._kbuf.shape[-2] > before
    assert positions(layer) == list(range(ROUND + 2))


def test_cutting_the_cache_makes_the_next_rows_follow_the_cut():
    cache = new_cache(CFG, reserve=32)
    for layer_idx in range(2):
        cache.update(*rows(0, 10, layer_idx), layer_idx)
    crop_cache(cache, 6)  # what a failed or measured tree step does
    cache.update(*rows(6, 2), 0)
    assert positions(cache.layers[0]) == list(range(8))
    assert cache.layers[1].get_seq_length() == 6


def test_keys_replaced_from_outside_are_taken_over():
    cache = new_cache(CFG, reserve=32)
    layer = cache.layers[0]
    cache.update(*rows(0, 4), 0)
    layer.keys, layer.values = (t.clone() for t in rows(100, 3))  # e.g. a reorder by other code
    cache.update(*rows(103, 2), 0)
    assert positions(layer) == [100, 101, 102, 103, 104]


@torch.inference_mode()
@pytest.mark.parametrize("model_name", ["tiny_llama", "tiny_gpt2"])
def test_a_model_reads_the_same_cache_from_buffers(model_name, request):
    """Logits and cached entries equal the stock cache's over a run long enough to grow."""
    model = request.getfixturevalue(model_name)
    prompt = torch.arange(3, 40).view(1, -1) % model.config.vocab_size
    stock, buffered = DynamicCache(config=model.config), new_cache(model.config, reserve=64)
    a = model(input_ids=prompt, cache=stock, use_cache=True).logits[0, -1]
    b = model(input_ids=prompt, cache=buffered, use_cache=True).logits[0, -1]
    for _ in range(ROUND):  # past the reserve, and past the first block it grows to
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        tok = torch.tensor([[int(a.argmax())]])
        a = model(input_ids=tok, cache=stock, use_cache=True).logits[0, -1]
        b = model(input_ids=tok, cache=buffered, use_cache=True).logits[0, -1]
    assert buffered.get_seq_length() == stock.get_seq_length() == prompt.shape[1] + ROUND
    for mine, theirs in zip(buffered.layers, stock.layers):
        torch.testing.assert_close(mine.keys, theirs.keys, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(mine.values, theirs.values, atol=1e-5, rtol=1e-5)

"""Tiny GGUF files written with the `gguf` package: a random Llama with a small vocabulary,
or a header alone for an architecture of choice (enough for a refusal from the config)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

GGUF_VOCAB, GGUF_DIM, GGUF_HEADS, GGUF_KV_HEADS, GGUF_FF = 48, 16, 2, 1, 32


def _header(writer, arch: str, layers: int) -> None:
    """Model sizes and a llama-style tokenizer (one piece per id) in the metadata."""
    writer.add_name(f"tiny-{arch}")
    writer.add_context_length(256)
    writer.add_embedding_length(GGUF_DIM)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(GGUF_FF)
    writer.add_head_count(GGUF_HEADS)
    writer.add_head_count_kv(GGUF_KV_HEADS)
    writer.add_rope_dimension_count(GGUF_DIM // GGUF_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(GGUF_VOCAB - 3)])
    writer.add_token_scores([0.0] * GGUF_VOCAB)
    writer.add_token_types([2, 3, 3] + [1] * (GGUF_VOCAB - 3))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)


def _llama_tensors(writer, layers: int, seed: int) -> None:
    rng = np.random.default_rng(seed)

    def rand(*shape: int) -> np.ndarray:  # wide weights, as tiny_models.INIT_RANGE
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    kv = GGUF_KV_HEADS * GGUF_DIM // GGUF_HEADS
    writer.add_tensor("token_embd.weight", rand(GGUF_VOCAB, GGUF_DIM))
    for b in range(layers):
        writer.add_tensor(f"blk.{b}.attn_norm.weight", np.ones(GGUF_DIM, np.float32))
        for name, rows in (("attn_q", GGUF_DIM), ("attn_k", kv), ("attn_v", kv), ("attn_output", GGUF_DIM)):
            writer.add_tensor(f"blk.{b}.{name}.weight", rand(rows, GGUF_DIM))
        writer.add_tensor(f"blk.{b}.ffn_norm.weight", np.ones(GGUF_DIM, np.float32))
        writer.add_tensor(f"blk.{b}.ffn_gate.weight", rand(GGUF_FF, GGUF_DIM))
        writer.add_tensor(f"blk.{b}.ffn_up.weight", rand(GGUF_FF, GGUF_DIM))
        writer.add_tensor(f"blk.{b}.ffn_down.weight", rand(GGUF_DIM, GGUF_FF))
    writer.add_tensor("output_norm.weight", np.ones(GGUF_DIM, np.float32))
    writer.add_tensor("output.weight", rand(GGUF_VOCAB, GGUF_DIM))


def write_gguf(path: Path, arch: str = "llama", weights: bool = True, layers: int = 2, seed: int = 0) -> Path:
    """Write a tiny GGUF; `weights` False writes the metadata alone (no tensors)."""
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    _header(writer, arch, layers)
    if weights:
        _llama_tensors(writer, layers, seed)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path

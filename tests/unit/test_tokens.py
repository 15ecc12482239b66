"""A token's raw bytes: joined in order they are the UTF-8 of the decoded text, on the real
bundled tokenizer (byte-level BPE) and on a SentencePiece-style byte-fallback tokenizer."""
from __future__ import annotations

import random

import pytest

from logitspec.tokens import bytes_to_unicode, is_byte_level, token_bytes, token_bytes_hex

TEXTS = [
    "こんにちは、世界 🌍🎉 naïve café",
    "Emoji: 👋🏽 👨‍👩‍👧 🇯🇵 ✓ — “quoted” Ω≈ç√∫",
    "日本語のテキストと中文文本，还有한국어.",
    "Ça coûte 5 €, déjà vu; Ærøskøbing; Straße",
    "mixed\tTabs\n  and\r\nnewlines 🙂\n",
]


@pytest.fixture(scope="module")
def tokenizer():
    """The bundled SmolLM2 tokenizer alone (loading it takes a few seconds, no weights)."""
    from transformers import AutoTokenizer

    from logitspec.models import bundled_gguf

    folder, name = bundled_gguf()
    return AutoTokenizer.from_pretrained(folder, gguf_file=name)


def test_gpt2_byte_table_is_a_bijection_on_printable_characters():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert table[ord("A")] == "A" and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ"


def test_the_bundled_tokenizer_is_byte_level(tokenizer):
    assert is_byte_level(tokenizer)


@pytest.mark.parametrize("text", TEXTS)
def test_joined_bytes_are_the_decoded_text(tokenizer, text):
    ids = tokenizer(text)["input_ids"]
    tb = token_bytes(tokenizer, ids)
    joined = b"".join(tb[i] for i in ids)
    assert joined == tokenizer.decode(ids).encode("utf-8")
    assert joined.decode("utf-8") == text
    assert all(tb[i].decode("utf-8", "replace") == tokenizer.decode([i]) for i in ids)
    # The point of it all: most of these texts hold tokens that are parts of characters.
    if text != TEXTS[-1]:
        assert any("\ufffd" in tokenizer.decode([i]) for i in ids)


def test_chat_template_and_special_tokens_keep_their_literal_text(tokenizer):
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "Say 🌍 in 日本語"}], add_generation_prompt=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    tb = token_bytes(tokenizer, ids)
    assert b"".join(tb[i] for i in ids) == tokenizer.decode(ids).encode("utf-8")
    assert tb[tokenizer.eos_token_id] == tokenizer.eos_token.encode()  # <|im_end|>
    assert token_bytes_hex(tokenizer, [tokenizer.eos_token_id]) == {str(tokenizer.eos_token_id): tokenizer.eos_token.encode().hex()}


def test_random_id_sequences_join_to_what_decode_gives(tokenizer):
    rng = random.Random(0)
    vocab = len(tokenizer)
    tb = token_bytes(tokenizer, range(vocab))
    assert len(tb) == vocab
    # Random ids from anywhere in the vocab: decode replaces broken characters, so compare that way.
    for _ in range(1500):
        ids = [rng.randrange(vocab) for _ in range(rng.randint(1, 12))]
        assert b"".join(tb[i] for i in ids).decode("utf-8", "replace") == tokenizer.decode(ids)
    # Random slices of real text, cut anywhere (mid-character too): the bytes are exact.
    for _ in range(300):
        ids = tokenizer(rng.choice(TEXTS))["input_ids"]
        a = rng.randrange(len(ids))
        part = ids[a:a + rng.randint(1, 6)]
        joined = b"".join(tb[i] for i in part)
        assert joined.decode("utf-8", "replace") == tokenizer.decode(part)


def _byte_fallback_tokenizer():
    """A small SentencePiece-style BPE (Llama / Gemma decoder): unknown characters fall back
    to <0xNN> byte tokens and "▁" stands for a space."""
    from tokenizers import Tokenizer, decoders, models, normalizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in ("▁", "a", "b", "c", "é", "▁a", "▁b"):
        vocab[piece] = len(vocab)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[("▁", "a"), ("▁", "b")], unk_token="<unk>", byte_fallback=True))
    tk.normalizer = normalizers.Replace(" ", "▁")
    tk.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def test_sentencepiece_byte_fallback_tokens_give_their_bytes():
    tok = _byte_fallback_tokenizer()
    text = "a 世b é🎉 c"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert "<0xE4>" in tok.convert_ids_to_tokens(ids)  # 世 is spelled in byte tokens
    assert not is_byte_level(tok)
    tb = token_bytes(tok, ids + [tok.eos_token_id, tok.convert_tokens_to_ids("▁a")])
    assert tb[tok.convert_tokens_to_ids("<0xE4>")] == b"\xe4"
    assert tb[tok.convert_tokens_to_ids("▁a")] == b" a"
    assert tb[tok.eos_token_id] == b"</s>"
    assert b"".join(tb[i] for i in ids) == tok.decode(ids).encode("utf-8") == text.encode("utf-8")


def test_the_trace_keeps_token_bytes_and_older_traces_fall_back_to_text():
    from logitspec.core.trace import RunTrace

    tr = RunTrace("vanilla", "m", "p", [1], {}, token_texts={"5": "\ufffd", "6": "é"},
                  token_bytes={"5": "e381", "6": "c3a9"})
    again = RunTrace.from_json(tr.to_json())
    assert again == tr and again.to_json() == tr.to_json()
    assert again.bytes_of(5) == b"\xe3\x81" and again.bytes_of(6) == "é".encode()
    d = tr.to_dict()
    del d["token_bytes"]  # a file written before token bytes were recorded
    old = RunTrace.from_dict(d)
    assert old.token_bytes == {} and old.bytes_of(6) == "é".encode() and old.bytes_of(99) == b"<99>"

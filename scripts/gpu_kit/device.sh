#!/bin/sh
# The GPU kit's device script: one call's share of the checks, every result under $OUT.
#
#   sh scripts/gpu_kit/device.sh 1      # carry artifacts/gpu_kit/call1: GPU, tiny families, c(n) of a 1B Llama
#   sh scripts/gpu_kit/device.sh 2      # carry artifacts/gpu_kit/call2, at once: the bundled model's checks and the bench
#   KIT_DEVICE=cpu sh scripts/gpu_kit/device.sh dry   # both calls' steps on this CPU, small (make test)
#
# Build the kit first: python scripts/gpu_kit/kit.py build. Call 1 leaves the packages and
# part 1 of the model in $STASH; a warm device keeps them for 30 s, so call 2 must follow
# at once. Each step has its own time limit and a failed step does not stop the others: the
# log says which passed. docs/gpu.md has the plan and the figures.
set -u
cd "$(dirname "$0")/../.."
CALL=${1:?call 1, 2 or dry}
DEV=${KIT_DEVICE:-cuda}
PY=${PY:-python3}
OUT=${OUT:-artifacts/gpu_kit/out}
STASH=${STASH:-/tmp/logitspec_kit}
KIT=${KIT:-artifacts/gpu_kit}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
FAILED=0
CURVE_DTYPES=float32,bfloat16
CONTEXT=512  # the cache c(n) is timed over
SHORT=60  # the limit of the short steps; a dry run on a busy CPU takes more
# The kit's tests use no installed pytest plugin (hypothesis, anyio, xdist): not loading them saves a second a step.
PYTEST="env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $PY -m pytest -q -p no:cacheprovider"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$PWD:$STASH/site${PYTHONPATH:+:$PYTHONPATH}"  # the project, then the kit's packages

# step NAME SECONDS COMMAND...: run, log, time, and keep going.
step() {
    name=$1 limit=$2; shift 2
    echo "=== $name (limit ${limit}s): $*" | tee -a "$LOG"
    t0=$(date +%s)
    timeout "$limit" "$@" >>"$LOG" 2>&1
    rc=$?
    echo "=== $name: rc $rc in $(( $(date +%s) - t0 ))s" | tee -a "$LOG"
    [ $rc -eq 0 ] || FAILED=$((FAILED + 1))
    return $rc
}

call1() {
    step stash "$SHORT" $PY scripts/gpu_kit/kit.py stash "$KIT/call1" "$STASH" || return
    [ "$DEV" = cpu ] || step nvidia-smi 30 nvidia-smi
    step versions "$SHORT" $PY -c "import sys, torch, transformers; print('python', sys.version.split()[0], '| torch', torch.__version__, '| transformers', transformers.__version__, transformers.__file__); print('device:', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')"
    step tiny-families-cuda "$1" $PYTEST tests/lossless/test_fixed_shape.py -k "cuda and tiny"
    step curves-llama-1b "$2" $PY scripts/gpu_kit/curves.py --model "$3" --device "$DEV" --max-n "$4" --context "$CONTEXT" --dtypes "$CURVE_DTYPES" --out "$OUT/curves-$3.json"
}

# call2 TESTS_S BENCH_S TOKENS MAX_N "DTYPE:CATEGORIES:METHODS ..." [zerogpu]
call2() {
    step join "$SHORT" $PY scripts/gpu_kit/kit.py join "$KIT/call2" "$STASH" || return
    step bundled-cuda "$1" $PYTEST tests/lossless/test_fixed_shape.py -k "cuda and bundled"
    [ "${6:-}" = zerogpu ] && step zerogpu-lanes "$SHORT" $PYTEST tests/app/test_zerogpu.py -k lanes_from_one_gpu_call
    step curves-bundled "$SHORT" $PY scripts/gpu_kit/curves.py --model bundled --device "$DEV" --max-n "$4" --context "$CONTEXT" --dtypes "$CURVE_DTYPES" --out "$OUT/curves-bundled.json"
    for run in $5; do
        dtype=${run%%:*} rest=${run#*:}
        step "bench-$dtype" "$2" $PY -m logitspec.bench --questions data/spec_bench_subset.jsonl \
            --categories "${rest%%:*}" --limit-per-category 1 --max-new-tokens "$3" --methods "${rest#*:}" \
            --repeats 1 --device "$DEV" --dtype "$dtype" --pass-cost-dtypes "" --out "$OUT/bench-$dtype.json"
    done
}

ALL=vanilla,pld,logitspec,logitspec-static,recycling,logitspec+recycling
SIX=coding,math_reasoning,summarization,rag,extraction,writing
case "$CALL" in
    1) call1 240 90 llama-1b 256 ;;
    2) call2 180 150 128 256 "float32:$SIX:$ALL bfloat16:coding,summarization:vanilla,pld,logitspec,logitspec-static" zerogpu ;;
    # dry: the tiny curve to 16 tokens (its c(16)/c(1) ratio printed), the bundled one to 4 (20 passes, not 80)
    dry) CURVE_DTYPES=float32 CONTEXT=64 SHORT=300; call1 300 300 tiny 16; call2 300 300 8 4 "float32:coding:vanilla,logitspec" ;;
    *) echo "device.sh: the call is 1, 2 or dry, not '$CALL'" >&2; exit 2 ;;
esac
echo "=== call $CALL done: $FAILED step(s) failed" | tee -a "$LOG"
[ $FAILED -eq 0 ]

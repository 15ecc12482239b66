# `make test` and `make demo` each do all their own set-up on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BROWSER_STAMP := $(VENV)/.browser

.PHONY: demo test test-fast bench setup browser clean

$(STAMP): requirements.txt requirements-dev.txt scripts/install.sh
	$(PY) -m venv $(VENV)
	sh scripts/install.sh $(BIN)/pip --dev
	touch $@

setup: $(STAMP)

# Debian's chromium for the real-browser tests (Playwright's own download cannot work offline).
$(BROWSER_STAMP):
	@if [ ! -x /usr/bin/chromium ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi
	touch $@

browser: $(BROWSER_STAMP)

demo: $(STAMP)
	$(BIN)/python app.py

test: $(STAMP) $(BROWSER_STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow and not browser"

bench: $(STAMP)
	$(BIN)/python -m logitspec.bench --questions data/spec_bench_subset.jsonl --limit-per-category 3 \
		--max-new-tokens 128 --methods vanilla,pld,logitspec-static,logitspec --repeats 3 \
		--out artifacts/bench/report.json --plot artifacts/bench

clean:
	rm -rf $(VENV) artifacts .pytest_cache

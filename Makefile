# turngym set-up and entry points. `make train` and `make test` are the two commands of the README;
# both install what is missing first (idempotent: a stamp file remembers a finished install).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.turngym-installed

.PHONY: install train experts test test-fast lint bench

$(STAMP): pyproject.toml
	@{ command -v bwrap && ldconfig -p | grep -q 'libseccomp\.so\.2'; } >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get install -y -q bubblewrap libseccomp2 >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q bubblewrap libseccomp2 >/dev/null; }; }; } || \
		echo "warning: bubblewrap or libseccomp2 is not installed; LocalSandbox needs both (or isolation='none')"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned, so nothing pulls a multi-GB CUDA build on a CPU machine
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[train,dev]'
	@touch $(STAMP)

install: $(STAMP)

train: install
	$(BIN)/python -m trainer.run env=text-game

experts: install
	$(BIN)/python -m envs experts

test: install
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python bench/env_throughput.py
	$(BIN)/python bench/import_time.py
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/rollout_overhead.py

# Two entry points: `make demo` and `make test`. Each builds its own virtual environment.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SHARED ?= ../shared
export TOKENLEAN_TIKTOKEN_DIR ?= $(abspath $(SHARED)/tokenizers)

.PHONY: demo test bench lint typecheck check wheel-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

demo: $(VENV)/.installed
	$(BIN)/tokenlean replay

test: $(VENV)/.installed
	$(BIN)/python -m pytest

# The comparison with peer libraries: they live in their own environment, never in tokenlean's.
BENCH := .venv-bench
$(BENCH)/.installed: pyproject.toml benchmarks/requirements-peers.txt
	$(PYTHON) -m venv $(BENCH)
	$(BENCH)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH)/bin/python -m pip install --quiet -e ".[replay]" -r benchmarks/requirements-peers.txt
	touch $@

bench: $(BENCH)/.installed
	$(BENCH)/bin/python -m benchmarks.compare

# The LiteLLM proxy the plug-in's test starts (tests/proxy/test_litellm.py): heavy, and it pins
# older rich and websockets, so it has its own environment too (TOKENLEAN_LITELLM names its CLI).
LITELLM := .venv-litellm
$(LITELLM)/.installed: pyproject.toml
	$(PYTHON) -m venv $(LITELLM)
	$(LITELLM)/bin/python -m pip install --quiet --upgrade pip
	$(LITELLM)/bin/python -m pip install --quiet -e ".[litellm]"
	touch $@

# tokenlean.litellm's test (tests/litellm) runs mini-swe-agent on the LiteLLM SDK, from a third
# environment (TOKENLEAN_LITELLM_SDK names its python): the SDK's `litellm` command on dev's path
# would pass for the proxy, mini-swe-agent pulls in datasets and pyarrow, and next to the proxy
# extra pip backtracks both to older releases. The `*` .gitignore keeps git out of it.
LITELLM_SDK := .venv-litellm-sdk
$(LITELLM_SDK)/.installed: pyproject.toml
	$(PYTHON) -m venv $(LITELLM_SDK)
	echo '*' > $(LITELLM_SDK)/.gitignore
	$(LITELLM_SDK)/bin/python -m pip install --quiet --upgrade pip
	$(LITELLM_SDK)/bin/python -m pip install --quiet -e ".[litellm-sdk]" "mini-swe-agent>=2.4,<3"
	touch $@

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.installed
	$(BIN)/mypy

check: lint typecheck test

# The wheel, built and installed from the file into a clean environment, runs (CI runs this too).
wheel-check:
	PYTHON=$(PYTHON) .ci/wheel_check

clean:
	rm -rf $(VENV) $(BENCH) $(LITELLM) $(LITELLM_SDK) .pytest_cache .mypy_cache .ruff_cache

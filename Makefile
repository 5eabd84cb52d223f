# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint format clean

# The Python versions pyproject.toml accepts; a newer python3 failed deep inside pip with a resolver error.
PY_OK := import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 13) else \
	f"topicswarm needs Python 3.11 or 3.12, and $(PYTHON) is {sys.version.split()[0]}: run make with PYTHON=python3.11")

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -c '$(PY_OK)'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/topicswarm demo

# One pytest worker a core, at most four: the suite's end-to-end tests start node processes of their own.
PYTEST := $(BIN)/python -m pytest -n auto --maxprocesses 4

test: $(STAMP)
	$(PYTEST)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache

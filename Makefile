# memory_admin — two commands on a fresh machine:
#   make run    set everything up and run the demo on an embedded SQLite memory file
#   make test   set everything up and run every test
# Everything else here is a helper those two use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: run test setup system-deps lint dist bench-store bench-locomo clean screenshots

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,postgres,mcp,browser,semantic,langgraph,pydantic-ai,openai-agents]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

setup: $(STAMP)

system-deps:
	scripts/ensure-system-deps.sh

run: setup
	scripts/run-demo.sh

test: setup system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python manage.py check
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

# every dashboard page at 1366 and 375 px, over the demo data, into docs/screenshots/
screenshots: setup system-deps
	MEMORY_ADMIN_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q -p no:cacheprovider tests/dashboard/test_screenshots.py

# the installable wheel (templates, static files and migrations inside) in dist/
dist: setup
	$(BIN)/pip wheel --no-deps --quiet --wheel-dir dist .

bench-store: setup
	$(BIN)/python -m bench.store --sizes 100000,1000000

clean:
	rm -rf $(VENV) var dist .pytest_cache .mypy_cache .ruff_cache

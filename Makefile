# The book's two commands: `make book` and `make test`. Both set up .venv when it is missing or stale.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: book test clean

book: $(READY)
	$(BIN)/jupyter-book build . -W -n --keep-going --all

test: $(READY)
	$(BIN)/python -m pytest

$(READY): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

clean:
	rm -rf _build

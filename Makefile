# One command per job: `make` builds the whole course, `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all venv test bench lab lint clean

all: $(STAMP)
	$(PY) -m tools.build all

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --quiet -r requirements.txt 2>&1 | { grep -v "WARNING: Location" || true; }
	set -o pipefail; $(PY) -m pip install --quiet --no-deps -e . 2>&1 | { grep -v "WARNING: Location" || true; }
	touch $@

test: all
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m tools.bench

lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=.

lint: $(STAMP)
	$(VENV)/bin/ruff check course tools tests autograder lectures solutions

clean:
	rm -rf build dist jupyter_book/_build jupyter_book/_generated

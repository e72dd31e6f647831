# One command per job: `make` builds the whole course, `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Python caches each module it compiles (__pycache__, ignored by git and by the build's
# fingerprints) unless PYTHONDONTWRITEBYTECODE is set, as it is on the course machines: then
# every process of the build and the suite compiles the course's own modules again, and the
# student flow's kernels all of torch (its installation, like pip's --no-compile, leaves the
# compiling to the first import). The build and the suite run without it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: all venv test test-fast browser slurm system-packages bench checkpoints lab lint clean

all: $(STAMP)
	$(PY) -m tools.build all

venv: $(STAMP)

# pip is brought up to date first: Python 3.11's own (23.2) takes about twice as long to resolve
# the requirements (57 s against 32 s for requirements-dev.txt on a course machine).
# rfc3987-syntax, which jupyter-events pulls in through jsonschema[format-nongpl], compiles 39
# Lark grammars whenever jsonschema is imported: `import nbformat` takes 1.9 s with it and 0.15 s
# without, in each of the build's and the suite's many processes that read notebooks. jsonschema
# goes on without it (its "iri" formats are then not checked), so the team's environment drops
# it; the students' environment keeps what pip installs.
# pip byte-compiles what it installs one file at a time (83 of the 134 s that installing
# requirements-dev.txt took on a course machine); compileall does the same on every core. Like
# pip, it goes on past a file this Python cannot compile (torch ships one in 3.12 syntax, never
# imported here), so its exit status is not the build's. The compiled files are needed: the
# graders' sandboxed kernels cannot write them, and where PYTHONDONTWRITEBYTECODE is set (as on
# the course machines) no process would, and each would compile torch again at every import.
$(STAMP): requirements-student.txt requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --quiet --upgrade pip 2>&1 | { grep -v "WARNING: Location" || true; }
	set -o pipefail; $(PY) -m pip install --quiet --no-compile -r requirements-dev.txt 2>&1 | { grep -v "WARNING: Location" || true; }
	$(PY) -m compileall -q -j 0 $$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") > /dev/null || true
	$(PY) -m pip uninstall --quiet --yes rfc3987-syntax
	set -o pipefail; $(PY) -m pip install --quiet --no-deps -e . 2>&1 | { grep -v "WARNING: Location" || true; }
	touch $@

# The suite in TEST_WORKERS processes (pytest-xdist): much of it waits on kernels and browsers.
# Groups (tools/xdist_groups.py): a module's tests in one worker, each JupyterLab of the student
# flow and each attack batch in its own; the longest first (tests/group_seconds.json).
# TEST_WORKERS=0 runs it in this process alone.
TEST_WORKERS ?= 3
# What the suite needs is made in two make jobs: the build in one; in the other, Chromium and
# Slurm installed from Debian when absent (about 70 s of apt-get on a fresh machine, which would
# otherwise wait for the build to end), one after the other (dpkg allows one apt-get at a time).
test:
	$(MAKE) --no-print-directory -j2 all system-packages
	n=$(call threads_each,$(TEST_WORKERS)); OMP_NUM_THREADS=$$n MKL_NUM_THREADS=$$n \
	  OPENBLAS_NUM_THREADS=$$n $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

# For people who change code: every test that needs no browser, no sandboxed grading and nothing
# that `make` builds (pytest markers browser, sandbox, build; pyproject.toml). Minutes, no build;
# in two processes, one per core of the smallest machine the course supports.
FAST_WORKERS ?= 2
test-fast: $(STAMP)
	n=$(call threads_each,$(FAST_WORKERS)); OMP_NUM_THREADS=$$n MKL_NUM_THREADS=$$n \
	  OPENBLAS_NUM_THREADS=$$n \
	  $(PY) -m pytest -n $(FAST_WORKERS) --dist loadgroup -m "not browser and not sandbox and not build"

# The threads of torch and numpy in each of $(1) test processes: $$OMP_NUM_THREADS where it is
# set, else each process's share of the cores, at least one. More threads than cores only wait
# on each other: `make test-fast` took 179 core-seconds on 2 cores with one thread in each of
# its two processes, 200 with two. (The build shares out the cores among its units the same
# way: tools.build.kernel_threads.)
threads_each = $$([ -n "$$OMP_NUM_THREADS" ] && echo "$$OMP_NUM_THREADS" || \
  $(PY) -c "import os; print(max(1, (os.cpu_count() or 1) // max(1, $(1))))")

# The website tests drive Debian's Chromium (headless, through Playwright). Install it if absent.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "make: installing chromium for the website tests (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The grading's job-array test (tests/grading/test_cluster.py) runs a one-node Slurm cluster:
# Debian's munge, slurmctld and slurmd. Install them if absent.
slurm:
	@command -v slurmd >/dev/null 2>&1 && command -v slurmctld >/dev/null 2>&1 && \
	  command -v munged >/dev/null 2>&1 || { \
	  echo "make: installing slurmd, slurmctld and munge for the Slurm test (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmd slurmctld munge \
	    >/dev/null; }

system-packages:
	@$(MAKE) --no-print-directory browser
	@$(MAKE) --no-print-directory slurm

bench: $(STAMP)
	$(PY) -m tools.bench

# Course-trained checkpoints (course/checkpoints/): fixed seeds and steps, hours of CPU time
# (`DEVICE=cuda make checkpoints` trains on a GPU, `DEVICE=mps` on Apple silicon). Each run
# saves its state every 500 steps in the user's cache folder and, started again, goes on from
# there (tools/resumable.py). Not part of `make`; run it after changing the code of a
# checkpointed model, and commit.
checkpoints: $(STAMP)
	$(PY) -m tools.make_checkpoints $(if $(DEVICE),--device $(DEVICE))

lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=.

lint: $(STAMP)
	$(VENV)/bin/ruff check course tools tests autograder lectures solutions

clean:
	rm -rf build dist jupyter_book/_build jupyter_book/_generated

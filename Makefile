# CLUES human-evaluation platform. Needs only Python 3.11 and make:
#   make run        set up (runtime packages only), create the PostgreSQL database of DATABASE_URL if missing,
#                   import the data, create the local researcher login, serve
#                   on 127.0.0.1:8000 (HOST=... PORT=... to change; CLUES_DATA=path to use a local CLUES zip)
#   make test       set up everything in .venv-test, then run the whole test suite (on SQLite, on 2 processes;
#                   PYTEST_ARGS="-k s1 -x" passes options, TEST_PROCESSES=0 runs it in one); .venv is left alone
#   make lint       ruff check and format check, import contracts, the type checker (mypy) and that every model
#                   change has its migration (makemigrations --check)
#   make bench      run benchmarks/*.py (BENCH=load runs one)
#   make baselines  add torch + transformers for manage.py run_baselines
#   make manage ARGS="import_clues --demo"   any manage.py command, in the virtual environment
# The virtual environments (.venv for run/manage/baselines, .venv-test for test/lint/bench) are created when
# missing; each requirements/*.txt set is installed again only when its file changes.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The suite's own environment: installing the test tools never touches (and reloads) a `make run` server's .venv.
TEST_VENV ?= .venv-test
TPY := $(TEST_VENV)/bin/python
# One stamp per requirements set: a set is installed again only when one of its files changed.
# (STAMP_DIR: tests/newcomer/test_readme_commands.py runs make on a scratch copy with the suite's environment.)
STAMP_DIR ?=
STAMP_RUNTIME := $(or $(STAMP_DIR),$(VENV))/.stamp-runtime
STAMP_BASELINES := $(or $(STAMP_DIR),$(VENV))/.stamp-baselines
STAMP_DEV := $(or $(STAMP_DIR),$(TEST_VENV))/.stamp-dev
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=
# The suite runs on this many processes (pytest-xdist, a test database each); 0 runs it in this process (pytest -s,
# pdb). On PostgreSQL it runs in one: the real Celery worker tests (they skip on SQLite) share the broker's queues.
TEST_PROCESSES ?= $(if $(DATABASE_URL),0,2)

ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help venv run test lint bench baselines manage

# The header above, with the address this make would serve on (make does not expand comments).
help:
	@sed -n '2,/^$$/s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST)) | sed 's/127\.0\.0\.1:8000/$(HOST):$(PORT)/'

$(PY):
	$(PYTHON) -m venv $(VENV)

$(TPY):
	$(PYTHON) -m venv $(TEST_VENV)

$(STAMP_RUNTIME): requirements/runtime.txt | $(PY)
	$(PY) -m pip install -r requirements/runtime.txt
	@touch $@

$(STAMP_BASELINES): requirements/baselines.txt requirements/runtime.txt | $(PY)
	$(PY) -m pip install -r requirements/baselines.txt
	@touch $@ $(STAMP_RUNTIME)

$(STAMP_DEV): requirements.txt requirements/dev.txt requirements/baselines.txt requirements/runtime.txt | $(TPY)
	$(TPY) -m pip install -r requirements.txt
	@touch $@

# Everything, in .venv-test (what CI installs).
venv: $(STAMP_DEV)

baselines: $(STAMP_BASELINES)

manage: $(STAMP_RUNTIME)
	$(PY) manage.py $(ARGS)

# `make run` checks its address before any set-up: a busy one fails at once, in one line (runserver would say so
# only after the set-up and the import). Not under make -n, which runs nothing.
ifneq ($(filter run,$(MAKECMDGOALS)),)
ifeq ($(findstring n,$(firstword -$(MAKEFLAGS))),)
ifneq ($(shell $(PYTHON) -c 'import socket, sys; host = sys.argv[1]; socket.create_server((host, int(sys.argv[2])), family=socket.AF_INET6 if ":" in host else socket.AF_INET).close()' '$(HOST)' '$(PORT)' 2>/dev/null && echo free),free)
$(error make run: $(HOST):$(PORT) is busy (or not an address of this machine); stop what uses it or choose another: PORT=8001 make run)
endif
endif
endif

run: $(STAMP_RUNTIME)
	$(PY) manage.py ensure_database
	$(PY) manage.py migrate --noinput
	$(PY) manage.py import_clues --fallback-demo
	@set -e; \
	login="$$($(PY) manage.py ensure_local_researcher)"; \
	case "$$(tr '[:upper:]' '[:lower:]' <<< "$${DEBUG:-1}")" in \
	  0|false|no|off) $(PY) manage.py collectstatic --noinput -v0 ;; \
	esac; \
	echo; \
	echo "  CLUES human evaluation: http://$(HOST):$(PORT)/dashboard/"; \
	echo "  $$login"; \
	echo "  The admin (/admin/) is for operators, not researchers; create one with: $(PY) manage.py createsuperuser"; \
	echo; \
	exec $(PY) manage.py runserver $(HOST):$(PORT)

test: $(STAMP_DEV)
	$(TPY) -m pytest -n $(TEST_PROCESSES) --dist loadgroup $(PYTEST_ARGS)

lint: $(STAMP_DEV)
	$(TPY) -m ruff check .
	$(TPY) -m ruff format --check .
	$(TEST_VENV)/bin/lint-imports
	$(TPY) -m mypy
	$(TPY) manage.py makemigrations --check --dry-run

# make bench                  every benchmarks/*.py but db_restart.py (it stops PostgreSQL for a few seconds)
# make bench BENCH=load       one script: load, db_restart, fuzz_api, aggregate_study...
BENCH ?=
bench: $(STAMP_DEV)
	@set -e; shopt -s nullglob; \
	if [ -n "$(BENCH)" ]; then scripts=(benchmarks/$(BENCH).py); \
	else scripts=(); for s in benchmarks/*.py; do [ "$$s" = benchmarks/db_restart.py ] || scripts+=("$$s"); done; fi; \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmarks/*.py scripts yet"; fi; \
	for script in "$${scripts[@]}"; do echo "== $$script"; DJANGO_SETTINGS_MODULE=clues_platform.settings $(TPY) "$$script"; done; \
	if [ -z "$(BENCH)" ]; then echo "(benchmarks/db_restart.py stops PostgreSQL: run it with make bench BENCH=db_restart)"; fi

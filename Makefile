# CLUES human-evaluation platform. Needs only Python 3.11 and make:
#   make run    set up, import the data, create the local researcher login, serve on 127.0.0.1:$(PORT)
#   make test   set up, then run the whole test suite (PYTEST_ARGS="-k s1 -x" passes options to pytest)
#   make lint   ruff check
#   make bench  run benchmarks/*.py
# The virtual environment is created when missing and reinstalled only when requirements.txt changes.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-requirements
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help venv run test lint bench

help:
	@sed -n '2,6s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt | $(PY)
	$(PY) -m pip install -r requirements.txt
	@touch $@

venv: $(STAMP)

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py import_clues --fallback-demo
	@set -e; \
	login="$$($(PY) manage.py ensure_local_researcher)"; \
	case "$$(tr '[:upper:]' '[:lower:]' <<< "$${DEBUG:-1}")" in \
	  0|false|no|off) $(PY) manage.py collectstatic --noinput -v0 ;; \
	esac; \
	echo; \
	echo "  CLUES human evaluation: http://$(HOST):$(PORT)/   (admin: http://$(HOST):$(PORT)/admin/)"; \
	echo "  $$login"; \
	echo; \
	exec $(PY) manage.py runserver $(HOST):$(PORT)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .

# make bench                  every benchmarks/*.py but db_restart.py (it stops PostgreSQL for a few seconds)
# make bench BENCH=load       one script: load, db_restart, fuzz_api, aggregate_study...
BENCH ?=
bench: $(STAMP)
	@set -e; shopt -s nullglob; \
	if [ -n "$(BENCH)" ]; then scripts=(benchmarks/$(BENCH).py); \
	else scripts=(); for s in benchmarks/*.py; do [ "$$s" = benchmarks/db_restart.py ] || scripts+=("$$s"); done; fi; \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmarks/*.py scripts yet"; fi; \
	for script in "$${scripts[@]}"; do echo "== $$script"; DJANGO_SETTINGS_MODULE=clues_platform.settings $(PY) "$$script"; done; \
	if [ -z "$(BENCH)" ]; then echo "(benchmarks/db_restart.py stops PostgreSQL: run it with make bench BENCH=db_restart)"; fi

# The two commands a new user needs: `make run` and `make test` (see README).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
WEB_CONCURRENCY ?= 3
# Seconds a gunicorn worker may spend on one request: a usage export streams for as long as its events take to
# read (a million in well under a minute), and gunicorn's default of 30 would cut it short.
WEB_TIMEOUT ?= 300
# Commands that use the database run through this: with DATABASE_URL set they use it; without, the embedded
# PostgreSQL under var/postgres (config/embedded_database.py), started when it is not running and stopped when
# the last command using it ends. The line it prints says which database that is.
EMBEDDED_POSTGRES_DATA ?= var/postgres
WITH_DATABASE = $(BIN)/python -m config.embedded_database --data $(EMBEDDED_POSTGRES_DATA) --
# The inner make of `run`, `worker` and `demo`: the same make program, named through MAKE_COMMAND rather than
# $(MAKE) so that `make -n run` only prints (make runs every recipe line that mentions $(MAKE), even under -n,
# and this one needs the virtualenv).
SUBMAKE = $(MAKE_COMMAND) --no-print-directory

.PHONY: install run serve test worker work migrate catalog demo seed-demo lint litellm-diff

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements/runtime.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

migrate: install
	mkdir -p var
	$(WITH_DATABASE) $(BIN)/python manage.py migrate --noinput

catalog: migrate
	$(WITH_DATABASE) $(BIN)/python manage.py load_catalog

# One database for everything `make run` does: the embedded server starts once and stops with gunicorn.
# Environment variables pass through to the server (docs/operations.md), e.g. `PAYMENTS_LOCAL_CHECKOUT=1 make run`
# for the development "mark as paid" checkout on pay-now pages (off by default; never where customers reach it).
run: install
	@$(BIN)/python -m config.port_free $(HOST) $(PORT)
	@$(WITH_DATABASE) $(SUBMAKE) serve WITH_DATABASE=

serve: catalog
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	PORT=$(PORT) exec $(BIN)/gunicorn config.wsgi:application --bind $(HOST):$(PORT) \
		--workers $(WEB_CONCURRENCY) --timeout $(WEB_TIMEOUT) --graceful-timeout 10 --config python:config.web_server

worker: install
	@$(WITH_DATABASE) $(SUBMAKE) work WITH_DATABASE=

# scripts/worker.sh starts the worker again whenever it exits on its own (a lost broker can end it for good).
work: migrate
	exec scripts/worker.sh

# A demo organization's test book to look at before writing any code (docs/quickstart.md): customers, plans of
# every pricing model, 90 days of usage, invoices in every state. Idempotent; the last line is a new secret test key.
demo: install
	@$(WITH_DATABASE) $(SUBMAKE) seed-demo WITH_DATABASE=

seed-demo: catalog
	$(BIN)/python manage.py seed_demo

# Nothing needs root: Chromium for the browser tests from scripts/services.sh (or a line saying they are skipped and
# how to get it); PostgreSQL (TEST_DATABASE_URL only when set, else the embedded wheel's) and a Redis of the run's
# own from scripts/test.sh.
# The whole suite runs in TEST_WORKERS processes (pytest-xdist), each with a PostgreSQL and a Redis database of its
# own (tests/conftest.py); PYTEST_ARGS chooses tests, run in one process unless it says `-n`.
TEST_WORKERS ?= 2
PYTEST_ARGS ?= -n $(TEST_WORKERS)

test: install
	scripts/services.sh
	scripts/test.sh $(PYTEST_ARGS)

# The import contracts alone (.importlinter: the apps' layers and the pure engines); `make test` runs them too
# (tests/test_layers.py).
lint: install
	$(BIN)/lint-imports --no-cache

# The cost engine against LiteLLM's own cost functions over a grid of cases (docs/decisions/catalog.md): LiteLLM
# in its own virtualenv, pinned to the release catalog/data/litellm_prices.json was reduced from, never a
# dependency of the service. Exits 1 if a difference is not one of the documented deliberate ones.
LITELLM_VERSION = $(shell sed -n 's/^ *"litellm_version": "\(.*\)",*$$/\1/p' catalog/data/litellm_prices.json)
LITELLM_VENV := var/litellm-venv

litellm-diff: install
	test -x $(LITELLM_VENV)/bin/python || $(PYTHON) -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/pip install --quiet --disable-pip-version-check "litellm==$(LITELLM_VERSION)"
	$(BIN)/python bench/litellm_diff.py --litellm-python $(LITELLM_VENV)/bin/python $(DIFF_ARGS)

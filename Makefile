# The two commands a new user needs: `make run` and `make test` (see README).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
WEB_CONCURRENCY ?= 3
# The suite runs on PostgreSQL and Redis; `scripts/services.sh` starts them (installing when missing).
TEST_DATABASE_URL ?= postgres://postgres:postgres@127.0.0.1:5432/billing
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: install run test worker migrate catalog lint

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

migrate: install
	mkdir -p var
	$(BIN)/python manage.py migrate --noinput

catalog: migrate
	$(BIN)/python manage.py load_catalog

# Environment variables pass through to the server (docs/operations.md), e.g. `PAYMENTS_LOCAL_CHECKOUT=1 make run`
# for the development "mark as paid" checkout on pay-now pages (off by default; never where customers reach it).
run: catalog
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	PORT=$(PORT) exec $(BIN)/gunicorn config.wsgi:application --bind $(HOST):$(PORT) \
		--workers $(WEB_CONCURRENCY) --graceful-timeout 10

worker: migrate
	exec $(BIN)/celery -A config worker --beat --loglevel info

test: install
	scripts/services.sh
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) CELERY_TASK_ALWAYS_EAGER=1 \
		EMAIL_FILE_PATH=$(CURDIR)/var/test-mail $(BIN)/python -m pytest $(PYTEST_ARGS)

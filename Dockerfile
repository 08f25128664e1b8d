# The service image, in two stages. `build` installs the runtime dependencies (requirements/runtime.txt: no test
# tools) into a virtualenv; the final stage copies that virtualenv and the code and runs as an unprivileged user.
# gunicorn serves the API (whitenoise the static files collected here); the same image runs the Celery worker and
# beat (docker-compose.yml). Configuration is by environment variables (docs/operations.md): SECRET_KEY and
# ALLOWED_HOSTS are required at run time; with DEBUG off the settings refuse to start without a SECRET_KEY.
FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

COPY requirements/runtime.txt /tmp/requirements/runtime.txt
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install -r /tmp/requirements/runtime.txt

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    DEBUG=0 \
    PORT=8000 \
    WEB_CONCURRENCY=3 \
    WEB_TIMEOUT=300

RUN groupadd --system app && useradd --system --gid app --home-dir /app --shell /usr/sbin/nologin app
WORKDIR /app

COPY --from=build /opt/venv /opt/venv
COPY . .
# The image holds no secret: collectstatic (which signs nothing) runs under a random one made for it alone.
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
        python manage.py collectstatic --noinput --verbosity 0 \
    && mkdir -p var/mail \
    && chown -R app:app var

USER app
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=4)"
CMD exec gunicorn config.wsgi:application --bind 0.0.0.0:${PORT} --workers ${WEB_CONCURRENCY} --timeout ${WEB_TIMEOUT} --graceful-timeout 10 --config python:config.web_server

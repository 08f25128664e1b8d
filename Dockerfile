# The service image: gunicorn serving the API (whitenoise serves the static files collected here).
# The same image runs the Celery worker and beat (docker-compose.yml). Configuration is by environment
# variables (docs/operations.md); SECRET_KEY and ALLOWED_HOSTS are required at run time (DEBUG=0).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DEBUG=0 \
    PORT=8000 \
    WEB_CONCURRENCY=3

RUN groupadd --system app && useradd --system --gid app --home-dir /app --shell /usr/sbin/nologin app
WORKDIR /app

COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# Static files are collected into the image; the settings refuse to load with DEBUG off and no secret,
# so the build uses a throwaway one that never reaches the running container.
RUN SECRET_KEY=build-time-only-not-a-secret python manage.py collectstatic --noinput --verbosity 0 \
    && mkdir -p var/mail \
    && chown -R app:app var

USER app
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=4)"
CMD exec gunicorn config.wsgi:application --bind 0.0.0.0:${PORT} --workers ${WEB_CONCURRENCY} --graceful-timeout 10

"""Settings, read once from the environment with the defaults of contract.md.

Code reads `settings.X`, never `os.environ`.
"""
from pathlib import Path
import os

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config import embedded_database

BASE_DIR = Path(__file__).resolve().parent.parent

INSECURE_SECRET_KEY = "dev-insecure-secret-key-change-me"


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY") or INSECURE_SECRET_KEY
if not DEBUG and SECRET_KEY == INSECURE_SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
# The default serves this machine only, in development too: DEBUG's pages (settings, the URL conf) never reach a
# network unless ALLOWED_HOSTS says so, and then the settings below refuse DEBUG.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")


def public_hosts(hosts: list[str]) -> list[str]:
    """The hosts of ALLOWED_HOSTS beyond this machine (`*` included)."""
    return [host for host in hosts if host not in {"localhost", "127.0.0.1", "[::1]", "::1", ".localhost"}
            and not host.endswith(".localhost")]


def is_placeholder_secret(key: str) -> bool:
    """A SECRET_KEY nobody chose: the development value, one that says it is a placeholder, or one too short to be
    random (Django's deploy check wants 50 characters; 32 is the least this service starts with)."""
    lowered = key.lower()
    return (key == INSECURE_SECRET_KEY or len(key) < 32
            or any(word in lowered for word in ("change-me", "changeme", "replace-me", "replaceme", "placeholder",
                                                "insecure")))


# Refuse to start where a mistake would be public (docs/decisions/reliability.md, Production settings).
if public_hosts(ALLOWED_HOSTS) and DEBUG:
    raise ImproperlyConfigured(f"DEBUG is on while ALLOWED_HOSTS serves {', '.join(public_hosts(ALLOWED_HOSTS))}: "
                               f"set DEBUG=0 (and a SECRET_KEY) to serve beyond this machine")
if public_hosts(ALLOWED_HOSTS) and is_placeholder_secret(SECRET_KEY):
    raise ImproperlyConfigured(f"SECRET_KEY is a placeholder while ALLOWED_HOSTS serves "
                               f"{', '.join(public_hosts(ALLOWED_HOSTS))}: set a random one of 50 characters, e.g. "
                               f"python -c 'import secrets; print(secrets.token_urlsafe(50))'")

PORT = os.environ.get("PORT", "8000")
PUBLIC_BASE_URL = (os.environ.get("PUBLIC_BASE_URL") or f"http://127.0.0.1:{PORT}").rstrip("/")

INSTALLED_APPS = [
    "console.apps.ConsoleAdminConfig",  # django.contrib.admin with the console site (dashboard)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc assets, served locally (no CDN)
    "core",
    "accounts",
    "webhooks",
    "jobs",
    "catalog",
    "customers",
    "matters",
    "billing",
    "analytics",
    "controls",
    "portal",
    "console.apps.ConsoleConfig",  # the top app of the stack: the console's pages, ledger verification, seed_demo
    "config.apps.CompositionRootConfig",  # last: wires the hooks once every app is loaded
]

MIDDLEWARE = [
    "core.middleware.RequestIdMiddleware",  # first: the id and the access line cover everything
    "core.middleware.HealthProbeMiddleware",  # /healthz, /readyz: before host checks and redirects
    "core.middleware.RequestBodyLimitMiddleware",  # 413 past REQUEST_BODY_MAX_BYTES, before a byte is read
    "core.middleware.KeptConnectionCheckMiddleware",  # without an API key: a connection dropped by a restart replaced
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.ContentSecurityPolicyMiddleware",  # HTML pages: scripts from this origin only
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "core.replica.ReplicaReadsMiddleware",  # with DATABASE_REPLICA_URL: which reads may leave the primary
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.middleware.DatabaseUnavailableMiddleware",  # last: sees the views' exceptions first
]

SESSION_ENGINE = "core.sessions"  # a cookie that is not a key this server made is no session
ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# PostgreSQL everywhere, one code path. Unset, the embedded server that `make run` starts under var/postgres
# (config/embedded_database.py): `manage.py` commands run beside it reach it too.
DATABASE_URL = os.environ.get("DATABASE_URL") or embedded_database.default_url()
# DATABASE_URL names a pooler in transaction mode (PgBouncer): each transaction may run on another server
# connection, so nothing may outlive one. No server-side cursors (Django's `.iterator()` holds one open across
# transactions), no startup `options` (PgBouncer refuses the parameters it does not track), and no prepared
# statements unless DB_PREPARED_STATEMENTS=1 says the pooler carries them (PgBouncer 1.21 or later with
# max_prepared_statements set). docs/operations.md, Connection pooling.
DB_TRANSACTION_POOLING = env_bool("DB_TRANSACTION_POOLING", False)
# Only the hot path's fixed statements ask to be prepared (core/database.py prepared_cursor), and with
# generic plans: planning them per call cost more than running them. The ORM's client-bound queries are never
# prepared. DB_PREPARED_STATEMENTS=0 turns it off (a pooler without prepared statements).
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", not DB_TRANSACTION_POOLING)


def database(url: str, name: str) -> dict:
    """A DATABASES entry for a PostgreSQL URL, with the pooling and prepared-statement options above."""
    config = dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
    if config["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(f"{name} must name a PostgreSQL database, not {config['ENGINE']}")
    config["ENGINE"] = "core.postgresql"  # Django's, asking what became of a commit whose answer was lost
    options = config.setdefault("OPTIONS", {})
    if DB_PREPARED_STATEMENTS:
        options["prepare_threshold"] = 5
        if not DB_TRANSACTION_POOLING:  # behind a pooler, set plan_cache_mode on the role instead
            options["options"] = f"{options.get('options', '')} -c plan_cache_mode=force_generic_plan".strip()
    if DB_TRANSACTION_POOLING:
        config["DISABLE_SERVER_SIDE_CURSORS"] = True
    return config


DATABASES = {"default": database(DATABASE_URL, "DATABASE_URL")}
TEST_DATABASE_NAME = os.environ.get("TEST_DATABASE_NAME")
if TEST_DATABASE_NAME:
    DATABASES["default"]["TEST"] = {"NAME": TEST_DATABASE_NAME}

# A streaming replica of DATABASE_URL (optional): GET and HEAD requests to DATABASE_REPLICA_PATHS read from it
# while it trails the primary by less than DATABASE_REPLICA_MAX_LAG_SECONDS, unless their caller wrote within
# that time; every other read and every write stays on the primary (core/replica.py).
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL", "").strip()
DATABASE_REPLICA_MAX_LAG_SECONDS = float(os.environ.get("DATABASE_REPLICA_MAX_LAG_SECONDS") or 5)
DATABASE_REPLICA_PATHS = env_list("DATABASE_REPLICA_PATHS",
                                  "/v1/analytics/*,/v1/customers/*/revenue,/v1/subscriptions/*/revenue,"
                                  "/portal/s/,/portal/s/invoices/*/pdf,/admin/*")
if DATABASE_REPLICA_URL:
    if not os.environ.get("REDIS_URL", "").strip():
        # Each process would remember only its own callers' writes: a caller's next read, served by another
        # process, could read the replica before its write is there.
        raise ImproperlyConfigured("DATABASE_REPLICA_URL needs REDIS_URL: the web processes share who wrote "
                                   "recently (read-your-writes) through it")
    DATABASES["replica"] = database(DATABASE_REPLICA_URL, "DATABASE_REPLICA_URL")
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}  # tests read the test database through it
    DATABASE_ROUTERS = ["core.replica.ReplicaRouter"]
if DATABASE_REPLICA_MAX_LAG_SECONDS < 1:
    raise ImproperlyConfigured("DATABASE_REPLICA_MAX_LAG_SECONDS must be 1 or more (the lag is measured once a "
                               "second)")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
FORMAT_MODULE_PATH = ["config.formats"]  # days and instants as the console writes them (config/formats)
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
# Uploaded files (organizations' invoice logos); read by the PDF renderer, not served publicly.
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "var" / "media"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- Redis: Celery broker and the shared cache. Unset means inline tasks and an in-process cache.
REDIS_URL = os.environ.get("REDIS_URL", "").strip()
# Every wait on Redis is bounded: a Redis that does not answer makes a cache read a miss (core/cache.py)
# and a task hand-over a logged "not published" (core/background.py `publish`) within seconds.
REDIS_TIMEOUT_SECONDS = 2
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "core.cache.ResilientRedisCache", "LOCATION": REDIS_URL,
                          "OPTIONS": {"socket_connect_timeout": REDIS_TIMEOUT_SECONDS,
                                      "socket_timeout": REDIS_TIMEOUT_SECONDS}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "billing"}}
# Whether every web process reads the same cache. A per-process cache must not keep answers that another
# process's write changes (credit balances: a top-up served by one process left the others answering the
# balance before it for 30 seconds, and two reads in a row could go back in time).
CACHE_SHARED = bool(REDIS_URL)

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = "UTC"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING (JSON lines), like the web
# A worker whose broker goes away waits for it to come back (never gives up); `make worker` and the compose file
# also restart a worker that exits (scripts/worker.sh). Publishing gives up within about a second when Redis does
# not answer, and the caller's scheduled sweep does the work (core/background.py `publish`).
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_TIMEOUT = REDIS_TIMEOUT_SECONDS
# Publishing (a request's hand-over after its commit, core/background.py `publish`, which does not retry) waits
# REDIS_TIMEOUT_SECONDS once for a broker that does not answer, as every other wait on Redis; a worker's BRPOP is
# answered within kombu's 1-second poll. The retry policy below is for what else publishes (beat, in the worker).
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": REDIS_TIMEOUT_SECONDS,
                                   "socket_timeout": REDIS_TIMEOUT_SECONDS}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}

# --- Email: the file backend by default, so every message can be read back.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH") or str(BASE_DIR / "var" / "mail")
# The SMTP backend's server, read from the environment as every other setting is.
EMAIL_HOST = os.environ.get("EMAIL_HOST") or "localhost"
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
# Django's SMTP backend waits without end unless this is set: a mail server that took the connection and stopped
# answering held an invoice's send (committed, then mailed) until gunicorn killed the worker, a 502 for a write
# that was stored. Sends are in requests (an invoice, an alert's confirmation), so a short wait.
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT_SECONDS", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL") or "billing@localhost"

# --- Payments
STRIPE_SECRET_KEY = os.environ.get("STRIPE_SECRET_KEY", "").strip()
STRIPE_WEBHOOK_SECRET = os.environ.get("STRIPE_WEBHOOK_SECRET", "").strip()
STRIPE_TIMEOUT_SECONDS = env_int("STRIPE_TIMEOUT_SECONDS", 10)
# A "mark as paid" checkout on the pay-now page when there is no STRIPE_SECRET_KEY: development only, never
# implied by a missing key (contract: Payments without Stripe). Off: the page says online payment is not configured.
PAYMENTS_LOCAL_CHECKOUT = env_bool("PAYMENTS_LOCAL_CHECKOUT", False)

# --- API keys and limits
API_KEY_ENVIRONMENTS = env_list("API_KEY_ENVIRONMENTS", "test,live")
API_RATE_LIMIT_PER_MINUTE = env_int("API_RATE_LIMIT_PER_MINUTE", 12000)
AUTH_FAILURE_LIMIT = env_int("AUTH_FAILURE_LIMIT", 50)
AUTH_FAILURE_WINDOW_SECONDS = env_int("AUTH_FAILURE_WINDOW_SECONDS", 300)
# Pay-now and portal links opened with unknown tokens, per network, before its further unknown tokens get 429 for
# the window (a valid token always opens: the limit counts and refuses only misses).
LINK_TOKEN_FAILURE_LIMIT = env_int("LINK_TOKEN_FAILURE_LIMIT", 20)
LINK_TOKEN_FAILURE_WINDOW_SECONDS = env_int("LINK_TOKEN_FAILURE_WINDOW_SECONDS", 900)
# Failed console sign-ins (/admin/login/) per network before each further failure is a 429 for the window (a valid
# sign-in always works: the limit counts and refuses only failures).
ADMIN_LOGIN_FAILURE_LIMIT = env_int("ADMIN_LOGIN_FAILURE_LIMIT", 10)
ADMIN_LOGIN_FAILURE_WINDOW_SECONDS = env_int("ADMIN_LOGIN_FAILURE_WINDOW_SECONDS", 900)
# Request-log entries are buffered and written in bulk; 0 writes each entry at once (tests).
API_REQUEST_LOG_FLUSH_SECONDS = float(os.environ.get("API_REQUEST_LOG_FLUSH_SECONDS", "1.0"))
# gunicorn's --timeout (`make run` passes WEB_TIMEOUT): how long a request may run, so how long after its instant a
# batch may commit (the ledger verifier's margin for a final invoice's read, billing/verification.py).
WEB_TIMEOUT_SECONDS = float(os.environ.get("WEB_TIMEOUT", "").strip() or 300)
API_REQUEST_LOG_BATCH_SIZE = env_int("API_REQUEST_LOG_BATCH_SIZE", 200)
# Older spelling of TRUSTED_PROXY_COUNT=1 (below): one reverse proxy, whose X-Forwarded-For entry is read.
USE_X_FORWARDED_FOR = env_bool("USE_X_FORWARDED_FOR", False)
# Reverse proxies in front of the service, each appending to X-Forwarded-For: the caller's address is the entry
# the outermost one wrote (counted from the right; entries further left are the client's own and never read).
# 0: REMOTE_ADDR only. USE_X_FORWARDED_FOR=1 is the older spelling of 1.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 1 if USE_X_FORWARDED_FOR else 0)
CUSTOMER_ALERT_LIMIT = env_int("CUSTOMER_ALERT_LIMIT", 100)
# The largest request body, in bytes: 413 past it (core/middleware.py). 10 MiB holds a full usage batch (100
# records) with about 100 KB of metadata each; Django's own limit is the same number.
REQUEST_BODY_MAX_BYTES = env_int("REQUEST_BODY_MAX_BYTES", 10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_BODY_MAX_BYTES
# Up to this many unpriced events are priced inside the map-model request; more go to a Celery task.
MAP_MODEL_INLINE_BACKFILL_LIMIT = env_int("MAP_MODEL_INLINE_BACKFILL_LIMIT", 500)
# Jobs (long work a person can watch, jobs): an unfinished job that has not moved for this long lost its
# runner and is started again, up to this many times; finished jobs are deleted after this many days.
JOBS_STALE_SECONDS = env_int("JOBS_STALE_SECONDS", 600)
JOBS_MAX_ATTEMPTS = env_int("JOBS_MAX_ATTEMPTS", 3)
JOBS_KEEP_DAYS = env_int("JOBS_KEEP_DAYS", 30)
# Outbound webhooks (webhooks, docs/webhooks.md): targets on private, loopback or link-local addresses are
# refused unless this is set (development and tests); an attempt that has no 2xx answer within the timeout is
# retried; events (and their delivery logs) are kept this many days.
WEBHOOKS_ALLOW_PRIVATE_URLS = env_bool("WEBHOOKS_ALLOW_PRIVATE_URLS", False)
WEBHOOKS_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOKS_TIMEOUT_SECONDS", "").strip() or 10)
WEBHOOKS_KEEP_DAYS = env_int("WEBHOOKS_KEEP_DAYS", 30)
# The usage ledger's partitions (customers/partitions.py): rows a client dates in the months from this many before
# the current one to those the scheduled job keeps ahead get partitions of their own month on their own; rows
# dated outside stay in the default partition (an operator names a month to partition it).
LEDGER_PARTITIONS_PAST_MONTHS = env_int("LEDGER_PARTITIONS_PAST_MONTHS", 36)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    # JSON numbers in and out as exact decimals, never through binary floating point (core/api_json.py).
    "DEFAULT_RENDERER_CLASSES": ["core.api_json.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.api_json.JSONParser"],
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    "COERCE_DECIMAL_TO_STRING": False,
    "DEFAULT_SCHEMA_CLASS": "core.openapi.ApiSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Usage billing API",
    "DESCRIPTION": ("Usage-based billing and cost tracking for companies that sell AI agents. Every /v1 "
                    "request carries an API key in the `x-api-key` header; errors are `{message, code?}`."),
    "VERSION": "1.0.0",
    "SCHEMA_PATH_PREFIX": "/v1",
    "PREPROCESSING_HOOKS": ["core.openapi.only_api_routes"],
    "POSTPROCESSING_HOOKS": ["core.openapi.drop_enum_ids", "webhooks.openapi.add_webhooks"],
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Production hardening (only when DEBUG is off).
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # No script reads the CSRF cookie (forms and the API reference embed the token), so scripts get neither.
    SESSION_COOKIE_HTTPONLY = True
    CSRF_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# One JSON object per line on standard error, each with the request id (core/logs.py).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.logs.RequestIdFilter"}},
    "formatters": {"json": {"()": "core.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json", "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # Client errors are in the access line already; server errors still log with their traceback.
        "django.request": {"level": "ERROR"},
        # Inline tasks are part of the command or request that ran them (its own output or access line says
        # what happened); a line per task would drown a command's output. Failures still log.
        "celery.app.trace": {"level": "WARNING" if CELERY_TASK_ALWAYS_EAGER else "INFO"},
    },
}

# --- Matters: POST /v1/matter-rules/apply works through at most this many events per call, in chunks
# (one transaction each), and stops early once the time budget is spent; a second call goes on.
MATTERS_APPLY_EVENTS_PER_CALL = env_int("MATTERS_APPLY_EVENTS_PER_CALL", 5000)
MATTERS_APPLY_CHUNK_SIZE = env_int("MATTERS_APPLY_CHUNK_SIZE", 1000)
MATTERS_APPLY_TIME_BUDGET_SECONDS = float(os.environ.get("MATTERS_APPLY_TIME_BUDGET_SECONDS", "10"))

"""Settings, all from the environment (see README "Configuration").

Embedded defaults let a newcomer run with nothing installed: SQLite when DATABASE_URL is
unset, Celery tasks run eagerly when CELERY_BROKER_URL is unset. DEBUG=0 is production:
SECRET_KEY and ALLOWED_HOSTS must then come from the environment.
"""

import os
import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

import crowd

BASE_DIR = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Where the platform keeps what it writes (the SQLite file, .cache/ with the local researcher's password and
    downloads, collected static files): CLUES_HOME when set; in a source checkout (manage.py beside the packages)
    the checkout, as `make run` has it; installed from a wheel, the user's data folder
    ($XDG_DATA_HOME/clues-platform, by default ~/.local/share/clues-platform), never inside site-packages."""
    if os.environ.get("CLUES_HOME"):
        return Path(os.environ["CLUES_HOME"]).expanduser()
    if (BASE_DIR / "manage.py").is_file():
        return BASE_DIR
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "clues-platform"


DATA_DIR = data_dir()
if DATA_DIR != BASE_DIR:
    try:  # SQLite creates its file, not the folders above it
        DATA_DIR.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # a read-only home: the first write names the folder


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1 or 0)")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

DEVELOPMENT_SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production-0123456789abcdef"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set in the environment when DEBUG=0")
    SECRET_KEY = DEVELOPMENT_SECRET_KEY
elif not DEBUG and (SECRET_KEY == DEVELOPMENT_SECRET_KEY or SECRET_KEY.startswith("django-insecure-")):
    # The development key is public (it is in this file): with it anyone could forge sessions.
    raise ImproperlyConfigured(
        "SECRET_KEY is the public development key: set a secret one in the environment "
        "when DEBUG=0 (e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))')"
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set in the environment when DEBUG=0")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "clues_platform.apps.AdminConfig",  # the admin, for superusers only (clues_platform/admin.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from here (no CDN)
    "csp",
    "django_htmx",
    "tasks_data",
    "annotation",
    "worker_pages",
    "dashboard",
    "api",
    "recruitment",
    "baselines",
    "results",
]

MIDDLEWARE = [
    "clues_platform.middleware.RecentConnectionMiddleware",  # first: before any middleware's query
    "django.middleware.security.SecurityMiddleware",
    "clues_platform.middleware.RequestLimitsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "clues_platform.middleware.NoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "clues_http.ratelimit.LoginRateLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

# benchmarks/load.py compares the platform with one bare INSERT view on the same stack.
if env_bool("CLUES_BENCH_CEILING", False):
    INSTALLED_APPS.append("benchmarks.ceiling")

ROOT_URLCONF = "clues_platform.urls"
WSGI_APPLICATION = "clues_platform.wsgi.application"

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

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{DATA_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),
        # A kept connection is checked (SELECT 1) before a request uses it, so that after a database restart
        # no request fails on a dead connection; CONN_HEALTH_CHECKS=0 saves that round trip per request.
        conn_health_checks=env_bool("CONN_HEALTH_CHECKS", True),
    )
}
# ...unless the previous request used it less than this many seconds ago (RecentConnectionMiddleware): a connection
# in steady use is not checked before every request; 0 checks before every request (Django's own behaviour).
CONN_HEALTH_CHECK_IDLE = float(os.environ.get("CONN_HEALTH_CHECK_IDLE", "5"))
# PostgreSQL: bind parameters on the server and prepare a statement once a connection has run it 5 times, so the
# worker's few hot statements are parsed and planned once per connection (benchmarks/README.md). Turn it off
# (DB_PREPARED_STATEMENTS=0) behind a transaction-pooling proxy such as PgBouncer, which cannot keep them.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DB_PREPARED_STATEMENTS", True):
    DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=5)
# SQLite (the embedded default) must hold a small lab study with several workers at once: WAL lets readers go on
# while one writer writes; IMMEDIATE takes the write lock when a transaction begins, so two writers queue on the
# busy timeout instead of failing with "database is locked" when a read lock cannot be upgraded (a deadlock SQLite
# refuses at once, whatever the timeout); synchronous=NORMAL is durable in WAL mode up to a power cut.
# tests/newcomer/test_sqlite_concurrency.py holds it to 0 errors under 20 concurrent answers.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        transaction_mode="IMMEDIATE",
        timeout=int(os.environ.get("SQLITE_TIMEOUT", "20")),
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The worker's hot-path statements, by registered name (annotation/services/hot_paths.py): "sql", hand-written.
# benchmarks/load.py --hot-path orm chooses the ORM version it is measured against, which its app registers.
CLUES_HOT_PATH = os.environ.get("CLUES_HOT_PATH", "sql")

# The first backend only refuses password logins while LOGIN_RATE_LIMIT is reached (clues_http/ratelimit.py).
AUTHENTICATION_BACKENDS = [
    "clues_http.ratelimit.LoginRateLimitBackend",
    "django.contrib.auth.backends.ModelBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", DATA_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Request bodies: answers are small; refuse anything big before it is parsed.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", str(256 * 1024)))
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200
# A file a researcher uploads (a task of their own, zipped): only views marked clues_http.uploads.takes_upload.
UPLOAD_MAX_SIZE = int(os.environ.get("UPLOAD_MAX_SIZE", str(20 * 2**20)))

# A shared cache (rate limits) is Redis when REDIS_URL / CACHE_URL is set, else per-process memory.
_CACHE_URL = os.environ.get("CACHE_URL") or os.environ.get("REDIS_URL", "")
CACHES = {
    # Django's Redis backend, with its client kept (clues_platform/cache.py).
    "default": {"BACKEND": "clues_platform.cache.RedisCache", "LOCATION": _CACHE_URL}
    if _CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
# Sessions (a worker's only credential) live in the database; with a shared cache they are also cached there, so
# a request reads its session from Redis instead of PostgreSQL. A per-process cache would serve stale sessions
# across gunicorn processes, so without a shared cache sessions are read from the database.
SESSION_ENGINE = "clues_platform.sessions" if _CACHE_URL else "django.contrib.sessions.backends.db"

# Fixed at start-up from DEBUG (pytest-django turns settings.DEBUG off while testing): in development
# WhiteNoise serves from the finders and does not expect a collected STATIC_ROOT.
WHITENOISE_AUTOREFRESH = DEBUG
WHITENOISE_USE_FINDERS = DEBUG

LOGIN_URL = "/accounts/login/"

# Rate limits (clues_http/ratelimit.py), counted in the cache above: "<count>/<window>" (s, m, h, d, with an
# optional multiple: "10/15m"), or "0" for off. On in production, off in development unless set.
_RATE = re.compile(r"\s*(0|\d+\s*/\s*\d*\s*[smhd])\s*")


def env_rate(name: str, production_default: str) -> str:
    value = os.environ.get(name, "0" if DEBUG else production_default)
    if not _RATE.fullmatch(value or "0"):
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate: use e.g. '30/m', '10/15m', or '0' (off)")
    return value


JOIN_RATE_LIMIT = env_rate("JOIN_RATE_LIMIT", "30/m")  # requests to /join/<token>/ per client address
LOGIN_RATE_LIMIT = env_rate("LOGIN_RATE_LIMIT", "10/15m")  # failed logins per client address and per username
LOGIN_RATE_LIMIT_PATHS = ("/accounts/login/", "/admin/login/")
# The client address is REMOTE_ADDR; behind N reverse proxies that append to X-Forwarded-For, set N.
TRUSTED_PROXY_HOPS = int(os.environ.get("TRUSTED_PROXY_HOPS", "0"))
LOGIN_REDIRECT_URL = "/dashboard/"  # who logs in is a researcher (workers use join links)

# The CLUES data: the official CLUES-JSON.zip or its unzipped folder (manage.py import_clues).
CLUES_DATA = os.environ.get("CLUES_DATA", "")

# Celery: with no broker, tasks run in-process so a newcomer needs no Redis.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "CLUES human-evaluation platform API",
    "DESCRIPTION": "Studies, cohorts, the annotation protocol and results.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the installed drf-spectacular-sidecar, never a CDN (clues_platform/urls.py).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No deep links: Swagger puts them inside each operation's toggle button (a link in a button, which
    # screen readers cannot reach); the page is in English and themed (templates/api_docs.html).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
}

# Content-Security-Policy (django-csp), in development too, so that a page that needs more fails in the tests.
# Scripts and styles come only from this site's files: no inline script or style attribute, no eval (htmx's
# allowEval is off, base.html). Forms post here, or to the crowd platforms' completion pages (a form's
# redirect counts as its action). No framing (as X-Frame-Options: DENY), no plugins, no <base> elsewhere.
CROWD_PLATFORM_ORIGINS = crowd.completion_origins()
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],  # data: for the favicon placeholder and Swagger UI's icons
        "connect-src": ["'self'"],
        "form-action": ["'self'", *CROWD_PLATFORM_ORIGINS],
        "frame-ancestors": ["'none'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
    },
}

# Production hardening; `DEBUG=0 manage.py check --deploy` passes with these.
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # X-Forwarded-Proto says "https" only when a trusted reverse proxy set it: from any client it would be a lie
    # that turns off the HTTPS redirect and marks a plain-HTTP request secure.
    if TRUSTED_PROXY_HOPS > 0:
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
    SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS")

# Logs carry no secrets: the redacting filter masks join tokens (/join/<token>/) and the identifiers and secrets a
# query string may hold (PROLIFIC_PID, SESSION_ID, workerId, passwords...), and SQL statements, whose parameters
# hold gold answers and session data, are not logged unless LOG_SQL=1 (and even then only with DEBUG=1). During a
# database outage each 503 is one line, without a traceback.
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact": {"()": "clues_platform.log_filters.RedactFilter"},
        "outage": {"()": "clues_platform.log_filters.DatabaseOutageFilter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["outage", "redact"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Through the redacting console handler only (Django's own handlers would print unfiltered records).
        "django": {"handlers": [], "level": LOG_LEVEL, "propagate": True},
        "django.server": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.db.backends": {"level": "DEBUG" if env_bool("LOG_SQL", False) else "INFO"},
        # The HTTP client's own records are redacted where they are made (Prolific ids in request lines),
        # so that no handler, at any level, ever sees them: a logger's filter applies to its own records only.
        **{
            name: {"filters": ["redact"]}
            for name in ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.proxy")
        },
    },
}

# This platform's address as people reach it, for links written outside a request (launch_study's join links):
# SITE_URL, else the address `make run` serves on (HOST and PORT, as the Makefile reads them).
_SERVED_HOST = os.environ.get("HOST") or "127.0.0.1"
SITE_URL = (
    os.environ.get("SITE_URL")
    or f"http://{'127.0.0.1' if _SERVED_HOST in ('0.0.0.0', '::') else _SERVED_HOST}:{os.environ.get('PORT') or 8000}"
).rstrip("/")

# Prolific (the recruitment app).
PROLIFIC_API_URL = os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
PROLIFIC_API_TOKEN = os.environ.get("PROLIFIC_API_TOKEN", "")  # or per researcher, stored encrypted
PROLIFIC_TOKEN_KEY = os.environ.get("PROLIFIC_TOKEN_KEY", "")  # encrypts researchers' stored tokens
PROLIFIC_WORKSPACE_ID = os.environ.get("PROLIFIC_WORKSPACE_ID", "")  # where participant groups are made
PROLIFIC_SITE_URL = os.environ.get("PROLIFIC_SITE_URL", "")  # this platform's public address, for join URLs
PROLIFIC_TIMEOUT = float(os.environ.get("PROLIFIC_TIMEOUT", "10"))
PROLIFIC_RETRIES = int(os.environ.get("PROLIFIC_RETRIES", "2"))
PROLIFIC_BACKOFF = float(os.environ.get("PROLIFIC_BACKOFF", "0.5"))
# A join admitted while Prolific could not be asked ("unverified") that the sync cannot match to its own
# submission expires after this many minutes, not after the study's whole time limit.
PROLIFIC_UNVERIFIED_GRACE_MINUTES = int(os.environ.get("PROLIFIC_UNVERIFIED_GRACE_MINUTES", "15"))
# A webhook event older (or newer) than this, by its X-Prolific-Request-Timestamp, is refused as a replay.
PROLIFIC_WEBHOOK_WINDOW_SECONDS = int(os.environ.get("PROLIFIC_WEBHOOK_WINDOW_SECONDS", "300"))
PROLIFIC_SYNC_SECONDS = int(os.environ.get("PROLIFIC_SYNC_SECONDS", "300"))
# What Prolific charges on top of what workers are paid, as a share of that pay (its provider's
# ``service_fee``: the results page's planner prices a plan with it). Prolific's service fee for academic
# studies was 33.3% (VAT not included) when this was written; set your account's rate (e.g. 0.428).
PROLIFIC_SERVICE_FEE = float(os.environ.get("PROLIFIC_SERVICE_FEE", "0.333"))
CELERY_BEAT_SCHEDULE = {
    "expire-enrollments": {"task": "annotation.tasks.expire_enrollments", "schedule": 60.0},
    "sync-prolific": {"task": "recruitment.tasks.sync_prolific", "schedule": float(PROLIFIC_SYNC_SECONDS)},
}

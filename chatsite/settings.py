"""Settings come from the environment only; with none set, the site runs on SQLite
with an in-memory channel layer (see README, "Configuration")."""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Any

from chatsite.databases import databases
from chatsite.env import env_bool, env_int, env_list, env_networks, env_token, env_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me"  # noqa: S105 (flagged by check W002)
SECRET_KEY = os.environ.get("SECRET_KEY", DEV_SECRET_KEY)
DEBUG = env_bool("DEBUG", True)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "channels",
    "chat",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "chat.http.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: from Accept-Language (after the session, before
    # CommonMiddleware as Django's docs ask), then the signed-in user's stored
    # choice over it (chat.web.account.languages, once the user is known).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "chat.web.account.languages.StoredLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "chatsite.urls"
ASGI_APPLICATION = "chatsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                # LANGUAGE_CODE: <html lang> and the JavaScript catalog's URL
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # issue 13, selfservice: the user's theme and shown name
                "chat.web.account.views.appearance",
            ],
        },
    },
]

DATABASES = databases(BASE_DIR)

REDIS_URL = os.environ.get("REDIS_URL", "").strip()
if REDIS_URL:
    REDIS_URL = env_url("REDIS_URL", REDIS_URL, schemes=("redis", "rediss", "unix"))
    CHANNEL_LAYERS = {
        "default": {
            # channels-redis with a bounded pool that waits for a connection
            # (redis-py's raises past 100 at once): see
            # chat/live/engine/processes/layer.py.
            "BACKEND": "chat.live.engine.processes.layer.RedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        # redis-py 8 reads with a 5 s socket timeout by default,
                        # the same as channels-redis' blocking BZPOPMIN: every
                        # idle socket would crash after 5 s (channels_redis#422).
                        # Wait longer than the pop.
                        "socket_timeout": 15,
                        "max_connections": env_int("REDIS_POOL_SIZE", 50, minimum=2),
                        # Seconds a call waits for a free connection.
                        "timeout": 10,
                    }
                ],
                "capacity": 2000,
                "expiry": 15,
                # At least Daphne's websocket timeout (24 h by default).
                "group_expiry": 86400,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache holds sign-in failure counts (chat.accounts.throttle): in Redis when
# there is one, so every process counts the same failures.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    if not REDIS_URL
    else {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "chatsite",
    },
    # The images prompts carry, base64 (`Attachment.base64`): in each process,
    # the most recent at most (re-encoded images are a few hundred kB each).
    "prompt_images": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "prompt-images",
        "TIMEOUT": 3600,
        "OPTIONS": {
            "MAX_ENTRIES": env_int("PROMPT_IMAGE_CACHE_ENTRIES", 64, minimum=1)
        },
    },
}

OLLAMA_BASE_URL = env_url(
    "OLLAMA_BASE_URL", "http://127.0.0.1:11434", schemes=("http", "https")
)
# Seconds allowed to open a connection to a model server, and to wait for the
# first byte of an answer (a cold model may take minutes to load).
UPSTREAM_CONNECT_TIMEOUT = env_int("UPSTREAM_CONNECT_TIMEOUT", 5, minimum=1)
UPSTREAM_FIRST_TOKEN_TIMEOUT = env_int("UPSTREAM_FIRST_TOKEN_TIMEOUT", 300, minimum=1)
# Largest accepted user message and WebSocket frame, in characters.
# Conversation pages show this many of the newest messages; older ones load on
# scroll (chat.models.paging).
CONVERSATION_PAGE_SIZE = env_int("CONVERSATION_PAGE_SIZE", 50, minimum=1)

# Tools the model calls mid-answer and their sources (chat.tools, docs/tools.md).
from chatsite.tool_settings import *  # noqa: E402, F403

# The sidebar lists this many conversations, then the next ones as it is
# scrolled (chat.models.sidebar).
SIDEBAR_PAGE_SIZE = env_int("SIDEBAR_PAGE_SIZE", 50, minimum=1)
MESSAGE_MAX_CHARS = env_int("MESSAGE_MAX_CHARS", 100_000, minimum=1)
# Imports of conversations (chat.transfer): the largest file, in bytes
# (uncompressed, for a ZIP); refused before it is read when the request says
# it is larger. Exports read this many conversations at a time.
TRANSFER_IMPORT_MAX_BYTES = env_int(
    "TRANSFER_IMPORT_MAX_BYTES", 200 * 1024 * 1024, minimum=1024
)
TRANSFER_EXPORT_CHUNK = env_int("TRANSFER_EXPORT_CHUNK", 200, minimum=1)
# Reading an import (chat.transfer.detect, in a chat.work process): the wall
# time and the memory (on top of the worker's own) it may take. The file is
# read a conversation at a time, so the memory is about its largest one.
TRANSFER_IMPORT_READ_SECONDS = env_int("TRANSFER_IMPORT_READ_SECONDS", 300, minimum=1)
TRANSFER_IMPORT_READ_MEMORY = env_int(
    "TRANSFER_IMPORT_READ_MEMORY", 512 * 1024 * 1024, minimum=64 * 1024 * 1024
)
# Attachments (chat.files, chat.models.attachments): the largest file in bytes,
# how many may go with one question, and the largest image in pixels (a larger
# one is refused as a decompression bomb before it is decoded).
ATTACHMENT_MAX_BYTES = env_int("ATTACHMENT_MAX_BYTES", 20 * 1024 * 1024, minimum=1024)
ATTACHMENT_MAX_FILES = env_int("ATTACHMENT_MAX_FILES", 10, minimum=1)
ATTACHMENT_MAX_PIXELS = env_int("ATTACHMENT_MAX_PIXELS", 50_000_000, minimum=1)
# Reading an attachment (chat.files.reading): the wall time and the memory
# (on top of the worker's own) a PDF, DOCX, JSON file or picture may take in
# its worker process; the pixels one user's pictures being read at once may
# add up to; how much of a document is read (the rest is left out, with a note).
ATTACHMENT_READ_SECONDS = env_int("ATTACHMENT_READ_SECONDS", 20, minimum=1)
ATTACHMENT_READ_MEMORY = env_int(
    "ATTACHMENT_READ_MEMORY", 768 * 1024 * 1024, minimum=64 * 1024 * 1024
)
ATTACHMENT_USER_PIXELS = env_int("ATTACHMENT_USER_PIXELS", 150_000_000, minimum=1)
ATTACHMENT_PDF_MAX_PAGES = env_int("ATTACHMENT_PDF_MAX_PAGES", 2000, minimum=1)
ATTACHMENT_TEXT_MAX_CHARS = env_int("ATTACHMENT_TEXT_MAX_CHARS", 2_000_000, minimum=1)
# Work on uploaded content (chat.work): worker processes per serving process,
# and how many of them one user's work may hold at once.
WORK_PROCESSES = env_int("WORK_PROCESSES", 2, minimum=1)
WORK_PER_OWNER = env_int("WORK_PER_OWNER", 1, minimum=1)
# Web search and page fetching, tools the model may call (chat.tools.web,
# docs/tools.md): a SearXNG-compatible endpoint (blank: no web search; pages
# can still be fetched), how many results go to the model, and the largest
# answer read from it.
WEB_SEARCH_URL = (
    env_url("CHATSITE_WEB_SEARCH_URL", "", schemes=("http", "https"))
    if os.environ.get("CHATSITE_WEB_SEARCH_URL", "").strip()
    else ""
)
WEB_SEARCH_PROVIDER = os.environ.get("WEB_SEARCH_PROVIDER", "searxng")
WEB_SEARCH_RESULTS = env_int("WEB_SEARCH_RESULTS", 8, minimum=1)
WEB_SEARCH_MAX_BYTES = env_int("WEB_SEARCH_MAX_BYTES", 2 * 1024 * 1024, minimum=1024)
# Sites (domains, with their subdomains) search results and fetches may reach,
# for everyone; teams add their own lists in the admin. Allow: blank for any.
WEB_SITES_ALLOW = env_list("WEB_SITES_ALLOW", [])
WEB_SITES_DENY = env_list("WEB_SITES_DENY", [])
# Hosts (by name) or networks a fetch may reach though they are private,
# loopback or link-local (refused otherwise: chat.tools.web.addresses).
WEB_FETCH_PRIVATE_ALLOW = env_list("WEB_FETCH_PRIVATE_ALLOW", [])
# A fetch: the bytes read of a page (the rest is left, with a note), the
# seconds it may take from the request to the last byte (redirects included),
# and the characters of its text given to the model.
WEB_FETCH_MAX_BYTES = env_int("WEB_FETCH_MAX_BYTES", 5 * 1024 * 1024, minimum=1024)
WEB_FETCH_SECONDS = env_int("WEB_FETCH_SECONDS", 20, minimum=1)
WEB_FETCH_MAX_CHARS = env_int("WEB_FETCH_MAX_CHARS", 20_000, minimum=100)
# Extracting a page's text (trafilatura, in a chat.work process): its wall
# time and memory (on top of the worker's own).
WEB_EXTRACT_SECONDS = env_int("WEB_EXTRACT_SECONDS", 15, minimum=1)
WEB_EXTRACT_MEMORY = env_int(
    "WEB_EXTRACT_MEMORY", 512 * 1024 * 1024, minimum=64 * 1024 * 1024
)
# Client frames per second each socket may send on average, the burst it may
# save up, and how many frames dropped in quick succession close it
# (chat.sockets.ratelimit).
WS_FRAME_RATE = env_int("WS_FRAME_RATE", 20, minimum=1)
WS_FRAME_BURST = env_int("WS_FRAME_BURST", 40, minimum=1)
WS_FLOOD_CLOSE_AFTER = env_int("WS_FLOOD_CLOSE_AFTER", 200, minimum=1)
# Failed sign-ins allowed per username and per client address in the window
# (seconds) before sign-in is refused for the rest of it (chat.accounts.throttle).
SIGNIN_FAILURES_PER_USERNAME = env_int("SIGNIN_FAILURES_PER_USERNAME", 5, minimum=1)

# Sign-in through an identity provider (README, "Sign-in"): accounts made on a
# first sign-in only for these email domains (blank: any).
CHATSITE_ALLOWED_EMAIL_DOMAINS = env_list("CHATSITE_ALLOWED_EMAIL_DOMAINS", [])
# Whether local usernames and passwords sign in on the site's sign-in page (off:
# only the providers' buttons are shown; staff still sign in to /admin/).
CHATSITE_LOCAL_SIGNIN = env_bool("CHATSITE_LOCAL_SIGNIN", True)
SIGNIN_FAILURES_PER_ADDRESS = env_int("SIGNIN_FAILURES_PER_ADDRESS", 20, minimum=1)
SIGNIN_LOCKOUT_SECONDS = env_int("SIGNIN_LOCKOUT_SECONDS", 900, minimum=1)
# Requests one API key may make a minute (chat.api.auth); 0: no limit. Answers
# wait in the fair queue either way: this only turns away a runaway script.
API_REQUESTS_PER_MINUTE = env_int("API_REQUESTS_PER_MINUTE", 600, minimum=0)
# The reverse proxies (addresses or networks) whose X-Forwarded-For names the
# client (chat.http.client_address); empty: the connection's peer is the client.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")
# Callers of /healthz sending "Authorization: Bearer <HEALTH_TOKEN>" get details.
HEALTH_TOKEN = os.environ.get("HEALTH_TOKEN", "").strip()
# Callers of /metrics sending "Authorization: Bearer <METRICS_TOKEN>" get them
# (staff sessions do too); empty: staff only.
METRICS_TOKEN = env_token("METRICS_TOKEN")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
# ---- OpenID Connect sign-in (chat.accounts.oidc; README, "Sign-in with OpenID
# Connect"). Off while OIDC_ISSUER is blank. Endpoints come from the issuer's
# /.well-known/openid-configuration; mozilla-django-oidc reads the OIDC_RP_* names.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").strip()
if OIDC_ISSUER:
    OIDC_ISSUER = env_url("OIDC_ISSUER", OIDC_ISSUER, schemes=("https", "http"))
OIDC_PROVIDER_NAME = (
    os.environ.get("OIDC_PROVIDER_NAME", "").strip() or "single sign-on"
)
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "").strip()
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "").strip()
# Space- or comma-separated.
OIDC_RP_SCOPES = " ".join(
    os.environ.get("OIDC_SCOPES", "openid email profile").replace(",", " ").split()
)
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "").strip() or "RS256"
OIDC_USERNAME_CLAIM = os.environ.get("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_EMAIL_CLAIM = os.environ.get("OIDC_EMAIL_CLAIM", "email")
OIDC_FIRST_NAME_CLAIM = os.environ.get("OIDC_FIRST_NAME_CLAIM", "given_name")
OIDC_LAST_NAME_CLAIM = os.environ.get("OIDC_LAST_NAME_CLAIM", "family_name")
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")
# Seconds to wait for the provider (discovery, token, keys, UserInfo).
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10, minimum=1)
OIDC_VERIFY_SSL = env_bool("OIDC_VERIFY_SSL", True)
# Seconds a started sign-in may take at the provider before its state expires.
OIDC_STATE_MAX_AGE = env_int("OIDC_STATE_MAX_AGE", 600, minimum=1)
OIDC_USE_PKCE = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
AUTHENTICATION_BACKENDS = [
    # Local accounts first, always (CHATSITE_LOCAL_SIGNIN can switch them off).
    "django.contrib.auth.backends.ModelBackend",
    "chat.accounts.oidc.OIDCBackend",
]
# ---- end of OpenID Connect sign-in

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# ---- LDAP / Active Directory sign-in (chat.accounts.ldap; README, "Sign-in with
# LDAP or Active Directory"). Off while CHATSITE_LDAP_URL is empty. The
# CHATSITE_LDAP_* variables become django-python3-ldap's LDAP_AUTH_* settings.
AUTHENTICATION_BACKENDS += ["chat.accounts.ldap.LDAPBackend"]
LDAP_AUTH_URL = env_list("CHATSITE_LDAP_URL", [])  # several: tried in turn
LDAP_AUTH_USE_TLS = env_bool("CHATSITE_LDAP_START_TLS", False)
# ldap3 checks no certificate unless told to: the server's must be valid (for
# the system's CAs, or CHATSITE_LDAP_CA_FILE's).
LDAP_AUTH_TLS_ARGS: dict[str, object] = {"validate": ssl.CERT_REQUIRED}
if os.environ.get("CHATSITE_LDAP_CA_FILE"):
    LDAP_AUTH_TLS_ARGS["ca_certs_file"] = os.environ["CHATSITE_LDAP_CA_FILE"]
LDAP_AUTH_CONNECT_ARGS: dict[str, object] = {}
if any(url.lower().startswith("ldaps://") for url in LDAP_AUTH_URL):
    import ldap3

    # The library applies LDAP_AUTH_TLS_ARGS to StartTLS only; ldaps:// would
    # get ldap3's default, which checks nothing.
    LDAP_AUTH_CONNECT_ARGS = {"tls": ldap3.Tls(**LDAP_AUTH_TLS_ARGS)}
LDAP_AUTH_SEARCH_BASE = os.environ.get("CHATSITE_LDAP_SEARCH_BASE", "")
LDAP_AUTH_OBJECT_CLASS = os.environ.get(
    "CHATSITE_LDAP_USER_OBJECT_CLASS", "inetOrgPerson"
)
LDAP_AUTH_USER_FIELDS = {
    "username": os.environ.get("CHATSITE_LDAP_USERNAME_ATTRIBUTE", "uid"),
    "first_name": os.environ.get("CHATSITE_LDAP_FIRST_NAME_ATTRIBUTE", "givenName"),
    "last_name": os.environ.get("CHATSITE_LDAP_LAST_NAME_ATTRIBUTE", "sn"),
    "email": os.environ.get("CHATSITE_LDAP_EMAIL_ATTRIBUTE", "mail"),
}
LDAP_AUTH_USER_LOOKUP_FIELDS = ("username",)
LDAP_AUTH_FORMAT_USERNAME = "chat.accounts.ldap.format_username"
LDAP_AUTH_FORMAT_SEARCH_FILTERS = "chat.accounts.ldap.format_search_filters"
LDAP_AUTH_ACTIVE_DIRECTORY_DOMAIN = (
    os.environ.get("CHATSITE_LDAP_ACTIVE_DIRECTORY_DOMAIN", "").strip() or None
)
LDAP_AUTH_CONNECTION_USERNAME = os.environ.get("CHATSITE_LDAP_BIND_DN") or None
LDAP_AUTH_CONNECTION_PASSWORD = os.environ.get("CHATSITE_LDAP_BIND_PASSWORD") or None
LDAP_AUTH_CONNECT_TIMEOUT = env_int("CHATSITE_LDAP_TIMEOUT", 5, minimum=1)
LDAP_AUTH_RECEIVE_TIMEOUT = LDAP_AUTH_CONNECT_TIMEOUT
# One round over the servers, then give up: the library's default (True) makes
# ldap3's server pool retry a server that is down forever, and the sign-in page
# with it (etianen/django-python3-ldap#264).
LDAP_AUTH_POOL_ACTIVE = 1
CHATSITE_LDAP_USER_FILTER = os.environ.get("CHATSITE_LDAP_USER_FILTER", "").strip()
# The attribute that names a person for good (usernames get reused): entryUUID
# (OpenLDAP, 389 DS), objectGUID (Active Directory).
CHATSITE_LDAP_ID_ATTRIBUTE = os.environ.get("CHATSITE_LDAP_ID_ATTRIBUTE", "entryUUID")
# Groups: an attribute of the person listing their groups' DNs (memberOf), and/or
# a search for the groups naming them ({dn}, {username} are filled in, escaped).
CHATSITE_LDAP_GROUPS_ATTRIBUTE = os.environ.get("CHATSITE_LDAP_GROUPS_ATTRIBUTE", "")
CHATSITE_LDAP_GROUP_SEARCH_BASE = os.environ.get("CHATSITE_LDAP_GROUP_SEARCH_BASE", "")
CHATSITE_LDAP_GROUP_FILTER = os.environ.get(
    "CHATSITE_LDAP_GROUP_FILTER", "(&(objectClass=groupOfNames)(member={dn}))"
)
# ---- end of LDAP

# The interface's languages (model output and users' text are never translated).
# English is the default, for a browser that asks for neither; the catalogs are
# locale/<lang>/LC_MESSAGES/*.po, compiled to .mo by `make messages`.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Uploaded files (attachments): a folder on disk by default; any S3-compatible
# store when CHATSITE_S3_BUCKET is set (django-storages over boto3). Never served
# from MEDIA_URL: only through chat.web.conversations.attachments, which checks
# the reader.
MEDIA_ROOT = Path(
    os.environ.get("CHATSITE_MEDIA_ROOT", "").strip() or BASE_DIR / "media"
)
S3_BUCKET = os.environ.get("CHATSITE_S3_BUCKET", "").strip()
_FILES: dict[str, Any] = {
    "BACKEND": "django.core.files.storage.FileSystemStorage",
    "OPTIONS": {"location": MEDIA_ROOT, "base_url": None},
}
if S3_BUCKET:
    _FILES = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_BUCKET,
            "endpoint_url": env_url(
                "CHATSITE_S3_ENDPOINT_URL",
                "https://s3.amazonaws.com",
                schemes=("http", "https"),
            ),
            "region_name": os.environ.get("CHATSITE_S3_REGION", "").strip() or None,
            "access_key": os.environ.get("CHATSITE_S3_ACCESS_KEY_ID", "").strip()
            or None,
            "secret_key": os.environ.get("CHATSITE_S3_SECRET_ACCESS_KEY", "").strip()
            or None,
            "location": os.environ.get("CHATSITE_S3_PREFIX", "attachments").strip(),
            # Private objects: the site serves them after checking the reader.
            "default_acl": "private",
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }
STORAGES = {
    "default": _FILES,
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "chatsite.storage.ManifestStaticFilesStorage"
    },
}
# In development WhiteNoise serves straight from the app folders (no collectstatic).
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Behind a TLS-terminating proxy (deploy/nginx.conf). Trust its X-Forwarded-Proto
# only when Daphne is reachable through the proxy alone and the proxy overwrites it.
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https")
    if env_bool("TRUST_X_FORWARDED_PROTO", False)
    else None
)
HTTPS_ONLY = env_bool("HTTPS_ONLY", False)
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS_ONLY
# Load balancers probe each process directly, over plain HTTP (Prometheus too).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
# Only sent with SECURE_HSTS_SECONDS > 0; turn off for a domain whose
# subdomains are not all served over HTTPS.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "chat": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # One INFO line per model-server request (health checks, every answer).
        "httpx": {"level": "WARNING"},
    },
}

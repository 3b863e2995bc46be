"""Settings of the local test IdP.

Everything run-specific comes from the run directory (FINGERSEAL_IDP_DIR) that
serve.py prepares before Django starts: the sqlite database, the generated
SECRET_KEY and the RSA key that signs ID tokens. FINGERSEAL_IDP_PORT is the port
serve.py has already bound on 127.0.0.1.
"""

import os
from pathlib import Path

RUN_DIR = Path(os.environ["FINGERSEAL_IDP_DIR"])
PORT = int(os.environ["FINGERSEAL_IDP_PORT"])
ORIGIN = f"http://127.0.0.1:{PORT}"

SECRET_KEY = (RUN_DIR / "secret-key").read_text().strip()
# Signs ID tokens while /test/switch id-token-alg=ES256 (idp/validators.py); in the JWKS always.
OIDC_EC_PRIVATE_KEY = (RUN_DIR / "oidc-ec-key.pem").read_text()
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
    "idp",
]

MIDDLEWARE = [
    # First, so a misbehaving token endpoint (/test/mode) bypasses everything else.
    "idp.middleware.TokenEndpointMisbehaviour",
    # The /test/switch behaviours of other providers (duplicate parameters, empty errors,
    # revocation only for confidential clients).
    "idp.middleware.StricterProvider",
    # RFC 9449, which DOT does not have: proofs checked, tokens bound (idp/dpop.py).
    "idp.dpop.DPoP",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]

ROOT_URLCONF = "idp.urls"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ]
        },
    }
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(RUN_DIR / "db.sqlite3"),
        # Threads of the WSGI server share the file; wait for a lock instead of failing.
        "OPTIONS": {"timeout": 20},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Fresh database per run: create the tables straight from the models instead of
# replaying ~40 migrations (the schema is the same; start-up is ~1 s faster).
MIGRATION_MODULES = {
    "auth": None,
    "contenttypes": None,
    "sessions": None,
    "oauth2_provider": None,
    "idp": None,
}

# Test users' passwords and the confidential client's secret are hashed with a fast
# hasher: PBKDF2's 1,000,000 rounds cost ~0.4 s per password grant / login.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/o/device/"
SESSION_COOKIE_NAME = "idp_session"

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = False

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": (RUN_DIR / "oidc-key.pem").read_text(),
    "PKCE_REQUIRED": True,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # DOT 3.4.1's name for the RFC 8628 polling interval (returned as "interval").
    "DEVICE_FLOW_INTERVAL": 1,
    "ACCESS_TOKEN_EXPIRE_SECONDS": 300,
    "ID_TOKEN_EXPIRE_SECONDS": 300,
    # The device flow needs absolute verification URIs (DOT passes them to oauthlib).
    "OAUTH_DEVICE_VERIFICATION_URI": f"{ORIGIN}/o/device/",
    "OAUTH_DEVICE_VERIFICATION_URI_COMPLETE": f"{ORIGIN}/o/device/?user_code={{user_code}}",
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Profile",
        "email": "E-mail address",
        "offline_access": "Offline access (refresh tokens)",
    },
    # Without a requested scope, a client gets every scope above.
    "DEFAULT_SCOPES": ["__all__"],
    "OAUTH2_VALIDATOR_CLASS": "idp.validators.TestIdPValidator",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {
        "django.request": {"handlers": ["stderr"], "level": "ERROR"},
        "oauth2_provider": {"handlers": ["stderr"], "level": "WARNING"},
    },
}

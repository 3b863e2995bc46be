from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from . import views

urlpatterns = [
    # Ours first: DOT's discovery document plus device_authorization_endpoint,
    # revocation_endpoint and grant_types_supported (same path DOT uses).
    re_path(r"^o/\.well-known/openid-configuration/?$", views.discovery, name="discovery"),
    # DOT's JWKS plus the ES256 key (/test/switch id-token-alg).
    re_path(r"^o/\.well-known/jwks\.json/?$", views.jwks, name="jwks"),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    # Test-only helpers (this IdP exists only for tests).
    path("test/approve-device", views.approve_device),
    path("test/add-user", views.add_user),
    path("test/deny-device", views.deny_device),
    path("test/expire-device", views.expire_device),
    path("test/revoke-user-tokens", views.revoke_user_tokens),
    path("test/refresh-family-alive", views.refresh_family_alive),
    path("test/mode", views.mode),
    path("test/login", views.login_and_go),
    path("test/switch", views.switch),
    path("test/device-authorizations", views.device_authorizations),
    path("test/dpop", views.dpop_report),
    path("test/dpop-nonce", views.dpop_nonce),
]

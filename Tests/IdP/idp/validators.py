"""DOT's validator with two test-IdP additions (OAUTH2_VALIDATOR_CLASS, DOT's extension point).

1. DOT 3.4.1 gives each Application exactly ONE authorization_grant_type (plus refresh_token).
   The clients listed in MULTI_GRANT_CLIENTS may use every flow fingerseal needs: device code,
   password, authorization code (+PKCE) and refresh. All other clients keep DOT's rule.
2. When a revoked refresh token is presented, record whether it was a reuse of a rotated
   token, so /test/refresh-family-alive can report "reuse_detected".
3. The /test/switch behaviours that live in DOT's validator: exact redirect URIs
   (exact-redirect-port), ES256 ID tokens (id-token-alg), the identity claims
   (preferred_username, email, email_verified, name, groups: always, whatever the scope;
   another user's with claims-user; email_verified false with email-verified), and the ID
   token's auth_time (auth-time).
"""

import hashlib
import json
import time
from functools import lru_cache

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import router, transaction
from django.db.models import F
from jwcrypto import jwk, jwt
from oauth2_provider.models import IDToken, get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator

from . import state


@lru_cache(maxsize=1)
def ec_key():
    """The ES256 signing key (serve.py writes it at start), as a JWK."""
    return jwk.JWK.from_pem(settings.OIDC_EC_PRIVATE_KEY.encode())

MULTI_GRANT_CLIENTS = {"fingerseal-test", "fingerseal-confidential"}
MULTI_GRANTS = {
    "authorization_code",
    "password",
    "refresh_token",
    "urn:ietf:params:oauth:grant-type:device_code",
}


class TestIdPValidator(OAuth2Validator):
    # Identity claims whatever the granted scopes (as many providers do): the default scope
    # fingerseal asks for is "openid offline_access".
    oidc_claim_scope = None

    def validate_redirect_uri(self, client_id, redirect_uri, request, *args, **kwargs):
        port = state.switch("exact-redirect-port")
        if port != "off":
            # A provider that matches exactly: no RFC 8252 §7.3 "any port on loopback".
            return redirect_uri == f"http://127.0.0.1:{port}/callback"
        return super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs)

    def get_additional_claims(self, request):
        user = request.user
        other = state.switch("claims-user")
        if other != "off":
            user = get_user_model().objects.filter(username=other).first() or user
        return {
            "preferred_username": user.username,
            "email": user.email,
            "email_verified": state.switch("email-verified") == "true",
            "name": user.get_full_name() or user.username,
            # Not standard OIDC, but what providers send for membership (issue 22 §2's
            # provision_require=groups:NAME); /test/add-user puts users in groups.
            "groups": sorted(g.name for g in user.groups.all()),
        }

    def get_id_token_dictionary(self, token, token_handler, request):
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        when = state.switch("auth-time")
        if when == "absent":
            del claims["auth_time"]
        elif when == "old":
            claims["auth_time"] = int(time.time()) - 3600
        return claims, expiration_time

    def finalize_id_token(self, id_token, token, token_handler, request):
        if state.switch("id-token-alg") != "ES256":
            return super().finalize_id_token(id_token, token, token_handler, request)
        # DOT's finalize_id_token, signed with the EC P-256 key (DOT knows RS256 and HS256 only).
        claims, expiration_time = self.get_id_token_dictionary(token, token_handler, request)
        id_token.update(**claims)
        if "nonce" not in id_token and request.nonce:
            id_token["nonce"] = request.nonce
        key = ec_key()
        header = {"typ": "JWT", "alg": "ES256", "kid": key.thumbprint()}
        signed = jwt.JWT(header=json.dumps(header, default=str), claims=json.dumps(id_token, default=str))
        signed.make_signed_token(key)
        with transaction.atomic(using=router.db_for_write(IDToken)):
            saved = self._save_id_token(id_token["jti"], request, expiration_time)
        request.access_token = saved
        request.id_token = saved
        return signed.serialize()

    def validate_grant_type(self, client_id, grant_type, client, request, *args, **kwargs):
        if request.client is not None and request.client.client_id in MULTI_GRANT_CLIENTS:
            return grant_type in MULTI_GRANTS
        return super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs)

    def validate_response_type(self, client_id, response_type, client, request, *args, **kwargs):
        if client.client_id in MULTI_GRANT_CLIENTS:
            return response_type == "code"
        return super().validate_response_type(client_id, response_type, client, request, *args, **kwargs)

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        RefreshToken = get_refresh_token_model()
        checksum = hashlib.sha256(refresh_token.encode("utf-8")).hexdigest()
        # Same lookup as DOT's; looked at BEFORE DOT's reuse protection deletes the family's
        # access tokens, which is how a rotated ("superseded") token is told apart.
        rt = (
            RefreshToken.objects.filter(token_checksum=checksum)
            .order_by(F("revoked").desc(nulls_first=True))
            .first()
        )
        superseded = False
        if rt is not None and rt.revoked is not None:
            superseded = get_access_token_model().objects.filter(source_refresh_token=rt).exists()
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        if not valid and rt is not None and rt.revoked is not None:
            state.record_revoked_use(rt.token_family, superseded)
        return valid


"""DOT's validator with two test-IdP additions (OAUTH2_VALIDATOR_CLASS, DOT's extension point).

1. DOT 3.4.1 gives each Application exactly ONE authorization_grant_type (plus refresh_token).
   The clients listed in MULTI_GRANT_CLIENTS may use every flow fingerseal needs: device code,
   password, authorization code (+PKCE) and refresh. All other clients keep DOT's rule.
2. When a revoked refresh token is presented, record whether it was a reuse of a rotated
   token, so /test/refresh-family-alive can report "reuse_detected".
"""

import hashlib

from django.db.models import F
from oauth2_provider.models import get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator

from . import state

MULTI_GRANT_CLIENTS = {"fingerseal-test", "fingerseal-confidential"}
MULTI_GRANTS = {
    "authorization_code",
    "password",
    "refresh_token",
    "urn:ietf:params:oauth:grant-type:device_code",
}


class TestIdPValidator(OAuth2Validator):
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


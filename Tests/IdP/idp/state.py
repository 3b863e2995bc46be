"""In-memory state of the running test IdP (one process, many threads)."""

import threading

MODES = (
    "normal",
    "slow",
    "garbage",
    "empty-error",
    "oversized",
    "down-5xx",
    "nonstandard-error",
    "slow-down",
)

# /test/switch: behaviours of other providers, each off (DOT's own behaviour) until a test
# sets it; they combine, and stay set until changed or the next start.
SWITCHES = {
    # refuse: 400 invalid_request when a form or query parameter appears twice (RFC 6749 §3.2).
    "duplicate-parameters": ("accept", "refuse"),
    # 400, 401 or 403: the token endpoint's error answers get that status and an empty body
    # (for the grant_type given with the switch, or all).
    "empty-errors": ("off", "400", "401", "403"),
    # confidential-only: a revocation without client authentication gets 401, empty body.
    "revocation": ("any-client", "confidential-only"),
    # A port: the code clients' redirect URI is exactly http://127.0.0.1:PORT/callback.
    "exact-redirect-port": ("off", "PORT"),
    # How ID tokens are signed (the JWKS always holds both keys).
    "id-token-alg": ("RS256", "ES256"),
    # A user name: the ID token's and userinfo's preferred_username, email and name are that
    # user's, whoever signed in ("off": the signed-in user's).
    "claims-user": ("off", "USERNAME"),
    # The ID token's auth_time: DOT's (the user's last login: fresh after /test/approve-device,
    # which logs in), an hour before now (a session the phone already had), or none at all.
    "auth-time": ("login", "old", "absent"),
    # The identity claims' email_verified: true (every address here is), or false.
    "email-verified": ("true", "false"),
    # RFC 9449 (idp/dpop.py): on, as providers that support it (discovery lists it, proofs
    # bind tokens); off, as one without it (no listing, proofs ignored).
    "dpop": ("on", "off"),
    # required: every proof carries the server's nonce (use_dpop_nonce, DPoP-Nonce).
    "dpop-nonce": ("off", "required"),
    # bearer: a token response says token_type Bearer although a proof came (not bound).
    "dpop-token-type": ("dpop", "bearer"),
    # Seconds this IdP's clock runs ahead of the machine's (negative: behind), for clock skew.
    "dpop-clock": ("0", "SECONDS"),
}
GRANT_TYPES = ("any", "password", "refresh_token", "authorization_code",
               "urn:ietf:params:oauth:grant-type:device_code")

_lock = threading.Lock()
_switches = {name: values[0] for name, values in SWITCHES.items()}
_switches["empty-errors-grant-type"] = "any"
_mode = {"mode": "normal", "remaining": None, "seconds": 30.0}
# token_family (str) -> {"reuse": n, "revoked_use": n}
_family_events = {}
# The device authorization requests' parameters, oldest first (/test/device-authorizations).
_device_authorizations = []


def set_mode(mode, count=None, seconds=30.0):
    with _lock:
        _mode.update(mode=mode, remaining=count, seconds=seconds)


def get_mode():
    with _lock:
        return dict(_mode)


def take_mode():
    """The mode for one token request; counts it down when the mode was set with count=N."""
    with _lock:
        mode = _mode["mode"]
        if mode == "normal":
            return mode, 0.0
        if _mode["remaining"] is not None:
            _mode["remaining"] -= 1
            if _mode["remaining"] <= 0:
                _mode.update(mode="normal", remaining=None)
        return mode, _mode["seconds"]


def set_switch(name, value, grant_type="any"):
    with _lock:
        _switches[name] = value
        if name == "empty-errors":
            _switches["empty-errors-grant-type"] = grant_type


def switches():
    with _lock:
        return dict(_switches)


def switch(name):
    with _lock:
        return _switches[name]


def record_revoked_use(token_family, superseded):
    """A revoked refresh token was presented: a reuse (it had been rotated) or the use of a
    token revoked through /o/revoke_token/ or /test/revoke-user-tokens."""
    if token_family is None:
        return
    with _lock:
        events = _family_events.setdefault(str(token_family), {"reuse": 0, "revoked_use": 0})
        events["reuse" if superseded else "revoked_use"] += 1


def family_events(token_family):
    with _lock:
        return dict(_family_events.get(str(token_family), {"reuse": 0, "revoked_use": 0}))


def record_device_authorization(parameters):
    with _lock:
        _device_authorizations.append(parameters)


def device_authorizations():
    with _lock:
        return list(_device_authorizations)

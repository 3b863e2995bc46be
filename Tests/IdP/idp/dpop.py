"""RFC 9449 (DPoP) in front of DOT, which has none: proofs checked with jwcrypto (an
independent JOSE library, not fingerseal's), tokens bound to the proof's key.

At the token endpoint a request with a `DPoP` header must carry a valid proof (typ
dpop+jwt, ES256, the public JWK, jti, htm, htu, iat, the server's nonce when one is
required). Its access and refresh tokens are then bound to the key's thumbprint (RFC 7638)
and answered with `token_type: DPoP`; a bound refresh token is refused without a proof by
the same key (public clients, RFC 9449 §5). An authorization code asked for with
`dpop_jkt` is exchanged only with a proof by that key. Userinfo takes a bound access token
only as `Authorization: DPoP` with a proof carrying `ath`. Introspection says `cnf.jkt`.

/test/switch: dpop=on|off (off: discovery does not list DPoP and proofs are ignored, as a
provider without it), dpop-nonce=off|required, dpop-token-type=dpop|bearer (a provider that
answers Bearer although a proof came), dpop-clock=SECONDS (this IdP's clock that far ahead).
/test/dpop: what was bound and refused, for the tests' assertions.
"""

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.parse

from django.http import HttpResponse, JsonResponse
from jwcrypto import jwk, jws

from . import state

TOKEN_PATH = "/o/token/"
AUTHORIZE_PATH = "/o/authorize/"
USERINFO_PATH = "/o/userinfo/"
INTROSPECT_PATH = "/o/introspect/"
DISCOVERY_PATH = "/o/.well-known/openid-configuration"
PROOF_LIFETIME = 60
MAX_PROOF_BYTES = 8192
# Bounded memory: the oldest entries go first.
MAX_ENTRIES = 10000

_lock = threading.Lock()
_bound = {}  # token -> jkt
_codes = {}  # authorization code -> jkt asked for with dpop_jkt
_pending_jkt = {}  # the session's last dpop_jkt, until its code is issued
_seen = {}  # (jkt, jti) -> time first seen
_nonce = {"value": secrets.token_urlsafe(16)}
_counts = {"proofs": 0, "refused": {}, "bound": 0}


def now():
    return time.time() + float(state.switch("dpop-clock"))


def enabled():
    return state.switch("dpop") == "on"


def _refuse(reason, status=400, error="invalid_dpop_proof", description=""):
    with _lock:
        _counts["refused"][reason] = _counts["refused"].get(reason, 0) + 1
    response = JsonResponse({"error": error, "error_description": description or reason}, status=status)
    if error == "use_dpop_nonce":
        response["DPoP-Nonce"] = _nonce["value"]
    return response


def _remember(table, key, value):
    with _lock:
        if len(table) >= MAX_ENTRIES:
            table.pop(next(iter(table)))
        table[key] = value


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _htu(request):
    # The request's URI without query and fragment (RFC 9449 §4.3 item 9).
    return request.build_absolute_uri(request.path)


class ProofError(Exception):
    def __init__(self, reason, error="invalid_dpop_proof"):
        super().__init__(reason)
        self.reason = reason
        self.error = error


def check_proof(request, access_token=None):
    """The proof of `request`'s one DPoP header: its key's thumbprint, or ProofError."""
    headers = [value for name, value in request.headers.items() if name.lower() == "dpop"]
    if len(headers) != 1:
        raise ProofError("one DPoP header is required" if not headers else "more than one DPoP header")
    token = headers[0]
    if len(token) > MAX_PROOF_BYTES or token.count(".") != 2:
        raise ProofError("not a compact JWS")
    try:
        header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    except ValueError:
        raise ProofError("the header is not JSON")
    if header.get("typ") != "dpop+jwt":
        raise ProofError("typ is not dpop+jwt")
    if header.get("alg") != "ES256":
        raise ProofError("alg is not ES256")
    public = header.get("jwk")
    if not isinstance(public, dict) or "d" in public:
        raise ProofError("jwk is missing or holds a private key")
    try:
        key = jwk.JWK(**public)
        proof = jws.JWS()
        proof.deserialize(token)
        proof.allowed_algs = ["ES256"]
        proof.verify(key)
        claims = json.loads(proof.payload)
    except Exception as error:  # jwcrypto raises several kinds
        raise ProofError("the signature does not verify: %s" % type(error).__name__)
    if claims.get("htm") != request.method:
        raise ProofError("htm is not the request's method")
    if claims.get("htu") != _htu(request):
        raise ProofError("htu is not the request's URI")
    iat = claims.get("iat")
    if not isinstance(iat, (int, float)) or abs(now() - iat) > PROOF_LIFETIME:
        raise ProofError("iat is outside the accepted window")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not 8 <= len(jti) <= 256:
        raise ProofError("jti is missing")
    if state.switch("dpop-nonce") == "required" and claims.get("nonce") != _nonce["value"]:
        raise ProofError("a fresh nonce is required", error="use_dpop_nonce")
    if access_token is not None:
        if claims.get("ath") != _b64(hashlib.sha256(access_token.encode()).digest()):
            raise ProofError("ath is not the access token's hash")
    jkt = key.thumbprint()
    with _lock:
        if (jkt, jti) in _seen:
            raise ProofError("jti was used before")
        if len(_seen) >= MAX_ENTRIES:
            _seen.pop(next(iter(_seen)))
        _seen[(jkt, jti)] = now()
        _counts["proofs"] += 1
    return jkt


def _replace_body(response, data):
    # CommonMiddleware (inside this one) has set Content-Length for the old body already.
    response.content = json.dumps(data).encode()
    response["Content-Length"] = str(len(response.content))


def _form(request):
    if request.content_type != "application/x-www-form-urlencoded":
        return {}
    return {name: values[0] for name, values in urllib.parse.parse_qs(request.body.decode("utf-8", "replace")).items()}


class DPoP:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not enabled():
            return self.get_response(request)
        if request.path == TOKEN_PATH and request.method == "POST":
            return self.token(request)
        if request.path == AUTHORIZE_PATH and request.GET.get("dpop_jkt"):
            return self.authorize(request)
        if request.path == USERINFO_PATH:
            return self.userinfo(request)
        if request.path == INTROSPECT_PATH:
            return self.introspect(request)
        if request.path.rstrip("/") == DISCOVERY_PATH:
            return self.discovery(request)
        return self.get_response(request)

    def discovery(self, request):
        response = self.get_response(request)
        if response.status_code == 200:
            data = json.loads(response.content)
            data["dpop_signing_alg_values_supported"] = ["ES256"]
            _replace_body(response, data)
        return response

    def authorize(self, request):
        response = self.get_response(request)
        location = response.get("Location", "") if response.status_code in (301, 302) else ""
        code = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query).get("code", [None])[0]
        if code:
            _remember(_codes, code, request.GET["dpop_jkt"])
        return response

    def token(self, request):
        form = _form(request)
        grant = form.get("grant_type", "")
        has_proof = any(name.lower() == "dpop" for name in request.headers)
        jkt = None
        if has_proof:
            try:
                jkt = check_proof(request)
            except ProofError as error:
                return _refuse(error.reason, error=error.error)
        with _lock:
            wanted = _bound.get(form.get("refresh_token", "")) if grant == "refresh_token" else None
            if grant == "authorization_code":
                wanted = _codes.pop(form.get("code", ""), None)
        if wanted is not None and jkt != wanted:
            # A bound refresh token (or code) without its key's proof: the copy is worthless.
            return _refuse("the token is bound to another key" if jkt else "the token is bound to a key; a proof is required",
                           error="invalid_grant")
        response = self.get_response(request)
        if jkt is None or response.status_code != 200:
            return response
        data = json.loads(response.content)
        for name in ("access_token", "refresh_token"):
            if data.get(name):
                _remember(_bound, data[name], jkt)
        with _lock:
            _counts["bound"] += 1
        if state.switch("dpop-token-type") == "dpop":
            data["token_type"] = "DPoP"
        out = JsonResponse(data, status=200)
        for name in ("Cache-Control", "Pragma"):
            if response.has_header(name):
                out[name] = response[name]
        if state.switch("dpop-nonce") == "required":
            out["DPoP-Nonce"] = _nonce["value"]
        return out

    def userinfo(self, request):
        authorization = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = authorization.partition(" ")
        with _lock:
            bound = _bound.get(token)
        if bound is None:
            return self.get_response(request)
        if scheme != "DPoP":
            response = _refuse("a bound token used as a bearer token", status=401, error="invalid_token")
            response["WWW-Authenticate"] = 'DPoP algs="ES256", error="invalid_token"'
            return response
        try:
            jkt = check_proof(request, access_token=token)
        except ProofError as error:
            response = _refuse(error.reason, status=401, error=error.error)
            response["WWW-Authenticate"] = 'DPoP algs="ES256", error="%s"' % error.error
            return response
        if jkt != bound:
            return _refuse("the token is bound to another key", status=401, error="invalid_token")
        request.META["HTTP_AUTHORIZATION"] = "Bearer " + token
        return self.get_response(request)

    def introspect(self, request):
        response = self.get_response(request)
        token = _form(request).get("token") or request.GET.get("token", "")
        with _lock:
            bound = _bound.get(token)
        if response.status_code == 200 and bound:
            data = json.loads(response.content)
            if data.get("active"):
                data["cnf"] = {"jkt": bound}
                _replace_body(response, data)
        return response


def report():
    """/test/dpop: the counts the tests assert on."""
    with _lock:
        return {"proofs": _counts["proofs"], "bound": _counts["bound"], "refused": dict(_counts["refused"]),
                "nonce": _nonce["value"]}


def rotate_nonce():
    with _lock:
        _nonce["value"] = secrets.token_urlsafe(16)
        return _nonce["value"]


def bound_key(token):
    with _lock:
        return _bound.get(token)

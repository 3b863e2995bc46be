"""Discovery view and the /test/ helpers of the local test IdP."""

import http.client
import json
import re
import urllib.parse
from datetime import datetime, timedelta, timezone

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model, login
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from oauth2_provider.models import get_device_grant_model, get_refresh_token_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import ConnectDiscoveryInfoView, JwksInfoView

from . import dpop, state, validators


def _error(status, error, description=""):
    return JsonResponse({"error": error, "error_description": description}, status=status)


# --- discovery ---------------------------------------------------------------------------


@require_GET
def discovery(request):
    """DOT's OpenID discovery document plus the endpoints DOT 3.4.1 leaves out of it."""
    response = ConnectDiscoveryInfoView.as_view()(request)
    if response.status_code != 200:
        return response
    data = json.loads(response.content)
    data["device_authorization_endpoint"] = request.build_absolute_uri(
        reverse("oauth2_provider:device-authorization")
    )
    data["revocation_endpoint"] = request.build_absolute_uri(reverse("oauth2_provider:revoke-token"))
    # As DOT's own RFC 8414 document (/o/.well-known/oauth-authorization-server) says.
    data.setdefault("grant_types_supported", list(oauth2_settings.OAUTH2_GRANT_TYPES_SUPPORTED))
    # ES256 too (/test/switch id-token-alg); the JWKS holds both keys.
    algorithms = data.setdefault("id_token_signing_alg_values_supported", [])
    if "ES256" not in algorithms:
        algorithms.append("ES256")
    out = JsonResponse(data)
    out["Access-Control-Allow-Origin"] = "*"
    return out


@require_GET
def jwks(request):
    """DOT's JWKS (the RS256 key) plus the ES256 key (EC P-256) of /test/switch id-token-alg."""
    response = JwksInfoView.as_view()(request)
    data = json.loads(response.content)
    key = validators.ec_key()
    data["keys"].append({"alg": "ES256", "use": "sig", "kid": key.thumbprint(), **json.loads(key.export_public())})
    out = JsonResponse(data)
    for header in ("Access-Control-Allow-Origin", "Cache-Control"):
        if header in response:
            out[header] = response[header]
    return out


# --- sessions ------------------------------------------------------------------------------


def _user(username):
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        return None


def _session_for(user):
    """A logged-in session for user, made the way django.test.Client.force_login makes one."""
    request = HttpRequest()
    request.session = SessionStore()
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    assert request.session[BACKEND_SESSION_KEY]
    request.session.save()
    return request.session.session_key


class _Browser:
    """A tiny cookie-keeping HTTP client that talks to this very server over 127.0.0.1."""

    def __init__(self, cookies):
        self.cookies = dict(cookies)

    def request(self, method, path, form=None):
        conn = http.client.HTTPConnection("127.0.0.1", settings.PORT, timeout=10)
        headers = {
            "Host": f"127.0.0.1:{settings.PORT}",
            "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()),
        }
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
        location = response.getheader("Location")
        conn.close()
        return response.status, location, text


_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _drive_device_pages(user, user_code, action):
    """Approve or deny through DOT's own device pages (/o/device/, /o/device-confirm/...)
    with a logged-in session of user, exactly as a person in a browser would."""
    browser = _Browser({settings.SESSION_COOKIE_NAME: _session_for(user)})
    query = urllib.parse.urlencode({"user_code": user_code})
    status, _, page = browser.request("GET", f"/o/device/?{query}")
    match = _CSRF.search(page)
    if status != 200 or not match:
        return False, f"GET /o/device/ answered {status}"
    status, location, page = browser.request(
        "POST", "/o/device/", {"user_code": user_code, "csrfmiddlewaretoken": match.group(1)}
    )
    if status != 302 or not location:
        return False, f"POST /o/device/ answered {status}: {re.sub(r'<[^>]+>', ' ', page)[:300]}"
    confirm_path = urllib.parse.urlsplit(location).path
    status, _, page = browser.request("GET", confirm_path)
    match = _CSRF.search(page)
    if status != 200 or not match:
        return False, f"GET {confirm_path} answered {status}"
    status, location, _ = browser.request(
        "POST", confirm_path, {"action": action, "csrfmiddlewaretoken": match.group(1)}
    )
    if status != 302:
        return False, f"POST {confirm_path} answered {status}"
    return True, confirm_path


def _device_decision(request, action):
    user_code = request.POST.get("user_code", "").strip()
    username = request.POST.get("username", "alice").strip()
    if not user_code:
        return _error(400, "invalid_request", "user_code is required")
    user = _user(username)
    if user is None:
        return _error(404, "unknown_user", username)
    model = get_device_grant_model()
    grant = model.objects.filter(user_code=user_code).first()
    if grant is None:
        return _error(404, "unknown_user_code", user_code)
    if grant.is_expired():
        return _error(409, "expired_user_code", user_code)
    if grant.status != model.AUTHORIZATION_PENDING:
        return _error(409, "user_code_already_used", grant.status)
    ok, detail = _drive_device_pages(user, user_code, action)
    if not ok:
        return _error(500, "device_page_failed", detail)
    grant.refresh_from_db()
    return JsonResponse(
        {"status": grant.status, "user_code": user_code, "client_id": grant.client_id, "username": username,
         "via": detail}
    )


@csrf_exempt
@require_POST
def approve_device(request):
    return _device_decision(request, "accept")


@csrf_exempt
@require_POST
def deny_device(request):
    return _device_decision(request, "deny")


@csrf_exempt
@require_POST
def expire_device(request):
    """DOT 3.4.1 never expires a pending device code on its own while it is polled
    (the token view reads the stored status without calling is_expired()); this moves the
    code's deadline into the past so the next poll answers expired_token."""
    user_code = request.POST.get("user_code", "").strip()
    model = get_device_grant_model()
    grant = model.objects.filter(user_code=user_code).first()
    if grant is None:
        return _error(404, "unknown_user_code", user_code)
    grant.expires = datetime.now(tz=timezone.utc) - timedelta(seconds=1)
    grant.save(update_fields=["expires"])
    grant.is_expired()
    return JsonResponse({"status": grant.status, "user_code": user_code})


@require_GET
def login_and_go(request):
    """GET /test/login?username=alice&next=/o/authorize/?... : signs the browser in (session
    cookie) and redirects to next, so a cookie-keeping client that follows redirects lands
    on the loopback redirect_uri with ?code=... without filling in a form."""
    user = _user(request.GET.get("username", "alice"))
    if user is None:
        return _error(404, "unknown_user", request.GET.get("username", ""))
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    target = request.GET.get("next", "/")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/"
    return HttpResponseRedirect(target)


# --- users ---------------------------------------------------------------------------------


@csrf_exempt
@require_POST
def add_user(request):
    """A new user (password "pw-USERNAME", email USERNAME@example.test or the one given), or
    one that exists, put in the comma-separated groups (made when missing): the groups claim
    fingerseal's provisioning rule reads."""
    from django.contrib.auth.models import Group

    username = request.POST.get("username", "")
    if not username:
        return _error(400, "no_username", username)
    email = request.POST.get("email") or f"{username}@example.test"
    user = _user(username) or get_user_model().objects.create_user(username, email, "pw-" + username)
    for name in filter(None, request.POST.get("groups", "").split(",")):
        group, _ = Group.objects.get_or_create(name=name)
        user.groups.add(group)
    return JsonResponse({"username": username, "groups": sorted(g.name for g in user.groups.all())})


# --- refresh-token families ----------------------------------------------------------------


@csrf_exempt
@require_POST
def revoke_user_tokens(request):
    username = request.POST.get("username", "")
    user = _user(username)
    if user is None:
        return _error(404, "unknown_user", username)
    RefreshToken = get_refresh_token_model()
    count = 0
    for rt in RefreshToken.objects.filter(user=user, revoked__isnull=True):
        rt.revoke()  # DOT's own revocation: marks it revoked, deletes its access token
        count += 1
    return JsonResponse({"username": username, "revoked": count})


@require_GET
def refresh_family_alive(request):
    username = request.GET.get("username", "")
    user = _user(username)
    if user is None:
        return _error(404, "unknown_user", username)
    RefreshToken = get_refresh_token_model()
    tokens = RefreshToken.objects.filter(user=user)
    client_id = request.GET.get("client_id")
    if client_id:
        tokens = tokens.filter(application__client_id=client_id)
    latest = tokens.order_by("-created", "-id").first()
    if latest is None:
        return JsonResponse(
            {"alive": False, "revoked_count": 0, "reuse_detected": False, "family": None,
             "family_size": 0, "live": 0, "rotations": 0, "client_id": client_id}
        )
    members = RefreshToken.objects.filter(token_family=latest.token_family).order_by("id")
    size = members.count()
    live = members.filter(revoked__isnull=True, access_token__isnull=False).count()
    newest = members.last()
    events = state.family_events(latest.token_family)
    # A rotated token is revoked too, but has a successor in the family; revoked_count
    # counts the members revoked WITHOUT one (reuse protection, RFC 7009 revocation,
    # /test/revoke-user-tokens): 0 while the family is healthy.
    revoked_count = 1 if newest.revoked is not None else 0
    reuse = events["reuse"] > 0
    return JsonResponse(
        {
            "alive": live > 0 and not reuse,
            "revoked_count": revoked_count,
            "reuse_detected": reuse,
            "reuse_attempts": events["reuse"],
            "revoked_token_uses": events["revoked_use"],
            "family": str(latest.token_family),
            "family_size": size,
            "rotations": size - 1,
            "live": live,
            "client_id": latest.application.client_id,
        }
    )


@require_GET
def device_authorizations(request):
    """The device authorization requests' parameters so far, oldest first: each a map of
    name -> list of values (the client secret left out)."""
    return JsonResponse({"requests": state.device_authorizations()})


# --- token endpoint misbehaviour -----------------------------------------------------------


@csrf_exempt
def mode(request):
    if request.method == "GET":
        return JsonResponse(state.get_mode())
    if request.method != "POST":
        return _error(405, "method_not_allowed")
    wanted = request.POST.get("mode", "")
    if wanted not in state.MODES:
        return _error(400, "invalid_mode", "one of: " + ", ".join(state.MODES))
    count = request.POST.get("count")
    seconds = request.POST.get("seconds", "30")
    try:
        count = int(count) if count else None
        seconds = float(seconds)
    except ValueError:
        return _error(400, "invalid_request", "count must be an integer, seconds a number")
    state.set_mode(wanted, count=count, seconds=seconds)
    return JsonResponse(state.get_mode())


# --- other providers' behaviours ----------------------------------------------------------


@csrf_exempt
def switch(request):
    """GET: every switch and its value. POST name=..&value=..[&grant_type=..]: sets one
    (grant_type only with empty-errors). See state.SWITCHES."""
    if request.method == "GET":
        return JsonResponse(state.switches())
    if request.method != "POST":
        return _error(405, "method_not_allowed")
    name = request.POST.get("name", "")
    value = request.POST.get("value", "")
    if name not in state.SWITCHES:
        return _error(400, "invalid_switch", "one of: " + ", ".join(state.SWITCHES))
    allowed = state.SWITCHES[name]
    if name == "exact-redirect-port":
        valid = value == "off" or (value.isdigit() and 1 <= int(value) <= 65535)
    elif name == "claims-user":
        valid = value == "off" or _user(value) is not None
    elif name == "dpop-clock":
        valid = value.lstrip("-").isdigit() and abs(int(value)) <= 86400
    else:
        valid = value in allowed
    if not valid:
        return _error(400, "invalid_value", f"{name} takes one of: " + ", ".join(allowed))
    grant_type = request.POST.get("grant_type", "any")
    if grant_type not in state.GRANT_TYPES:
        return _error(400, "invalid_grant_type", "one of: " + ", ".join(state.GRANT_TYPES))
    state.set_switch(name, value, grant_type)
    return JsonResponse(state.switches())


@require_GET
def dpop_report(request):
    """What RFC 9449 bound and refused (idp/dpop.py), for the tests' assertions."""
    return JsonResponse(dpop.report())


@csrf_exempt
@require_POST
def dpop_nonce(request):
    """A new server nonce: proofs with the old one get use_dpop_nonce."""
    return JsonResponse({"nonce": dpop.rotate_nonce()})

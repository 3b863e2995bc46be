"""Makes DOT's token endpoint misbehave on demand (POST /test/mode), and makes the provider
stricter or terser the way other providers are (POST /test/switch)."""

import json
import time
import urllib.parse

from django.http import HttpResponse

from . import state

TOKEN_PATH = "/o/token/"
REVOKE_PATH = "/o/revoke_token/"
DEVICE_AUTHORIZATION_PATH = "/o/device-authorization/"
OVERSIZED_BYTES = 5 * 1024 * 1024


def _oversized_body():
    head = b'{"access_token":"'
    tail = b'","token_type":"Bearer","expires_in":300}'
    return head + b"A" * (OVERSIZED_BYTES - len(head) - len(tail)) + tail


class TokenEndpointMisbehaviour:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path != TOKEN_PATH or request.method != "POST":
            return self.get_response(request)
        mode, seconds = state.take_mode()
        if mode == "normal":
            return self.get_response(request)
        if mode == "slow":
            time.sleep(seconds)
            return self.get_response(request)
        if mode == "garbage":
            return HttpResponse(
                b"<html><body>502 Bad Gateway? not JSON {{{", status=200, content_type="text/html"
            )
        if mode == "empty-error":
            return HttpResponse(b"", status=400, content_type="application/json")
        if mode == "oversized":
            return HttpResponse(_oversized_body(), status=200, content_type="application/json")
        if mode == "down-5xx":
            return HttpResponse(b"service unavailable\n", status=503, content_type="text/plain")
        if mode == "nonstandard-error":
            body = json.dumps({"error": "token_expired_custom", "error_description": "x"})
            return HttpResponse(body, status=400, content_type="application/json")
        if mode == "slow-down":
            body = json.dumps({"error": "slow_down"})
            return HttpResponse(body, status=400, content_type="application/json")
        return self.get_response(request)


class StricterProvider:
    """The /test/switch behaviours that sit in front of DOT's views:

    duplicate-parameters=refuse  any POST under /o/ with a parameter twice (in the form, the
                                 query, or across both) -> 400 invalid_request, as RFC 6749
                                 §3.2 allows ("MUST NOT be included more than once");
    revocation=confidential-only a revocation without client authentication (no HTTP Basic,
                                 no client_secret) -> 401 with an empty body;
    empty-errors=400|401|403     the token endpoint's error answers (4xx) for the chosen
                                 grant_type -> that status with an empty body.

    It also keeps every device authorization request's parameters for
    /test/device-authorizations (what a provider would see: max_age, prompt, a device name).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method != "POST" or not request.path.startswith("/o/"):
            return self.get_response(request)
        if state.switch("duplicate-parameters") == "refuse":
            repeated = _repeated_parameters(request)
            if repeated:
                body = json.dumps(
                    {"error": "invalid_request", "error_description": "repeated parameter: " + ", ".join(repeated)}
                )
                return HttpResponse(body, status=400, content_type="application/json")
        if request.path == DEVICE_AUTHORIZATION_PATH:
            # What the client asked for (/test/device-authorizations); never a client secret.
            state.record_device_authorization(
                {name: values for name, values in _form(request).items() if name != "client_secret"}
            )
        if request.path == REVOKE_PATH and state.switch("revocation") == "confidential-only":
            if not request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("basic ") and not _form(request).get(
                "client_secret"
            ):
                return HttpResponse(b"", status=401, content_type="application/json")
        response = self.get_response(request)
        if request.path == TOKEN_PATH and 400 <= response.status_code < 500:
            status = state.switch("empty-errors")
            wanted = state.switch("empty-errors-grant-type")
            grant = _form(request).get("grant_type", [""])[0]
            if status != "off" and wanted in ("any", grant):
                return HttpResponse(b"", status=int(status), content_type="application/json")
        return response


def _form(request):
    """The form body's parameters, every value kept (request.body stays readable for DOT)."""
    if request.content_type != "application/x-www-form-urlencoded":
        return {}
    return urllib.parse.parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)


def _repeated_parameters(request):
    names = [name for name, _ in urllib.parse.parse_qsl(request.META.get("QUERY_STRING", ""), keep_blank_values=True)]
    if request.content_type == "application/x-www-form-urlencoded":
        names += [name for name, _ in urllib.parse.parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True)]
    return sorted({name for name in names if names.count(name) > 1})

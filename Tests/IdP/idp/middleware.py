"""Makes DOT's token endpoint misbehave on demand (POST /test/mode)."""

import json
import time

from django.http import HttpResponse

from . import state

TOKEN_PATH = "/o/token/"
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

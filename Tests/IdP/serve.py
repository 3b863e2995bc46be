#!/usr/bin/env python3
"""Start-up script of the local test IdP: python serve.py RUN_DIR

Run by scripts/local-idp (use that). In order:
  1. becomes its own process group (scripts/local-idp stop kills the group);
  2. binds 127.0.0.1:0 and KEEPS the socket, so the kernel-chosen free port can never be
     taken by someone else between choosing it and serving on it;
  3. writes a fresh SECRET_KEY and the ID-token signing keys (RSA-2048 for RS256, EC P-256
     for ES256) into RUN_DIR;
  4. creates a fresh sqlite database RUN_DIR/db.sqlite3 (schema straight from the models);
  5. creates the users and OAuth clients, writes the confidential client's secret to
     RUN_DIR/client-secret;
  6. writes RUN_DIR/port and serves (Django's threaded WSGI server) until SIGTERM.
"""

import os
import secrets
import signal
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# fs-alice: named like the Linux test account, for the identity binding (user_claim=).
USERS = {"alice": "wonderland-7", "bob": "builder-3", "fs-alice": "looking-glass-5"}
LOOPBACK_REDIRECT = "http://127.0.0.1/callback"


def log(message):
    print(f"local-idp: {message}", file=sys.stderr, flush=True)


def bind_server():
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    class Server(ThreadedWSGIServer):
        request_queue_size = 64

    last = None
    for _ in range(20):
        try:
            # allow_reuse_address=False: never share a port someone else is bound to.
            return Server(("127.0.0.1", 0), WSGIRequestHandler, allow_reuse_address=False)
        except OSError as error:  # e.g. EADDRINUSE/EADDRNOTAVAIL under heavy port churn
            last = error
            time.sleep(0.05)
    raise SystemExit(f"local-idp: cannot bind 127.0.0.1: {last}")


def write_secret(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def write_keys(run_dir):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    write_secret(run_dir / "secret-key", secrets.token_urlsafe(50))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    write_secret(run_dir / "oidc-key.pem", pem.decode())
    # ES256 (/test/switch id-token-alg=ES256): DOT signs only RS256/HS256 itself.
    ec_key = ec.generate_private_key(ec.SECP256R1())
    pem = ec_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    write_secret(run_dir / "oidc-ec-key.pem", pem.decode())


def seed(run_dir):
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import get_application_model

    User = get_user_model()
    for username, password in USERS.items():
        User.objects.create_user(username, f"{username}@example.test", password, first_name=username.title())

    Application = get_application_model()
    A = Application

    def public(client_id, grant, name, redirect=""):
        Application.objects.create(
            client_id=client_id,
            name=name,
            client_type=A.CLIENT_PUBLIC,
            authorization_grant_type=grant,
            client_secret="",
            hash_client_secret=False,
            redirect_uris=redirect,
            skip_authorization=True,
            algorithm=A.RS256_ALGORITHM,
        )

    # Every flow fingerseal uses, one client (see idp/validators.py MULTI_GRANT_CLIENTS).
    public("fingerseal-test", A.GRANT_AUTHORIZATION_CODE, "fingerseal (all flows)", LOOPBACK_REDIRECT)
    # Plain DOT: one grant type per client (+ refresh_token).
    public("fingerseal-device", A.GRANT_DEVICE_CODE, "fingerseal (device flow)")
    public("fingerseal-password", A.GRANT_PASSWORD, "fingerseal (password grant)")
    public("fingerseal-browser", A.GRANT_AUTHORIZATION_CODE, "fingerseal (browser)", LOOPBACK_REDIRECT)

    secret = secrets.token_urlsafe(32)
    Application.objects.create(
        client_id="fingerseal-confidential",
        name="fingerseal (confidential, all flows)",
        client_type=A.CLIENT_CONFIDENTIAL,
        authorization_grant_type=A.GRANT_AUTHORIZATION_CODE,
        client_secret=secret,  # hashed when saved; the clear text only goes to the file
        hash_client_secret=True,
        redirect_uris=LOOPBACK_REDIRECT,
        skip_authorization=True,
        algorithm=A.RS256_ALGORITHM,
    )
    write_secret(run_dir / "client-secret", secret)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: serve.py RUN_DIR")
    started = time.monotonic()
    if not sys.argv[1] or not Path(sys.argv[1]).is_dir():
        raise SystemExit(f"local-idp: not a directory: {sys.argv[1]!r}")
    run_dir = Path(sys.argv[1]).resolve()
    try:
        os.setsid()
    except PermissionError:
        pass  # already a group leader
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    server = bind_server()
    port = server.server_address[1]
    write_keys(run_dir)

    os.environ["FINGERSEAL_IDP_DIR"] = str(run_dir)
    os.environ["FINGERSEAL_IDP_PORT"] = str(port)
    os.environ["DJANGO_SETTINGS_MODULE"] = "idp.settings"
    sys.path.insert(0, str(HERE))

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", run_syncdb=True, verbosity=0, interactive=False)
    seed(run_dir)

    from django.core.wsgi import get_wsgi_application

    server.set_app(get_wsgi_application())
    (run_dir / "port").write_text(f"{port}\n")
    log(f"serving on http://127.0.0.1:{port} (pid {os.getpid()}, ready in {time.monotonic() - started:.2f} s)")
    server.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A real OAuth 2.0 provider for mirror's authentication tests: django-oauth-toolkit (DOT)
in one file, with a protected paged JSON API, an RFC 7523 JWT-bearer token endpoint and a
GitHub-App-style installation token endpoint. Run it with the venv from setup.sh:

    python oauth_server.py [--port 0] [--access-token-seconds 3600]
                           [--rotate-refresh-tokens yes|no] [--reuse-protection yes|no]
                           [--refresh-grace-seconds 0] [--rotation-answer-delay 0]
                           [--jwt-public-key FILE]...
                           [--jwt-issuer mirror-tests] [--app-id 12345] [--verbose]

When ready it prints one JSON line to stdout (then flushes):

    {"port": P, "token_url": "http://127.0.0.1:P/o/token/",
     "client_credentials": {"client_id", "client_secret"},
     "refresh": {"client_id", "client_secret", "refresh_token"},
     "api_url", "stats_url", "jwt": {"token_url", "audience", "issuer"},
     "github_app": {"app_id", "installation_id", "access_tokens_url"}}

It exits when its standard input reaches end of file (unless --ignore-stdin) or on
SIGTERM/SIGINT, and removes its temporary database.

Endpoints:
  POST /o/token/            DOT's token endpoint: client_credentials, refresh_token
                            (password and authorization_code are DOT's too, unused here).
                            Client authentication: HTTP Basic (client_secret_basic) or
                            client_id + client_secret in the form body (client_secret_post).
  POST /o/revoke_token/     DOT's RFC 7009 revocation endpoint.
  POST /o/introspect/       DOT's RFC 7662 introspection endpoint.
  GET  /api/items?page=N    {"data":[10 x {"id","name"}],"page":N} for N = 1..5 (--pages), an empty
                            list after; needs "Authorization: Bearer <access token>", else
                            401 with WWW-Authenticate: Bearer error="invalid_token",...
  POST /jwt/token           RFC 7523: grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer
                            &assertion=<JWT>; the JWT is verified against --jwt-public-key
                            (RS256 for an RSA key, ES256 for a P-256 key), iss must be
                            --jwt-issuer, aud this endpoint's URL, exp and iat present.
  POST /app/installations/42/access_tokens
                            "Authorization: Bearer <JWT>" with iss = --app-id (string or
                            number), exp at most 10 minutes after iat; 201
                            {"token":"ghs_...","expires_at":"...Z"}.
  GET  /stats               counters (see stats_view), and the refresh token handed out last
                            (refresh_tokens.latest).
  POST /control/expire-access-tokens   makes every issued access token expired now.
  POST /control/refresh-token          mints another refresh token for the refresh client.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from stopping import stop_event

T0 = time.monotonic()

ITEMS_PER_PAGE = 10
ITEM_PAGES = 5
# --pages and --expire-at-page, set by main.
OPTIONS = {"pages": ITEM_PAGES, "expire_at_page": 0}
INSTALLATION_ID = 42
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GITHUB_GRANT = "github_app_installation"  # the /stats key of the GitHub-style endpoint


def yes_no(value):
    if value.lower() in ("yes", "true", "on", "1"):
        return True
    if value.lower() in ("no", "false", "off", "0"):
        return False
    raise argparse.ArgumentTypeError("expected yes or no, got %r" % value)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--access-token-seconds", type=int, default=3600,
                   help="ACCESS_TOKEN_EXPIRE_SECONDS; also the lifetime of JWT-exchanged tokens")
    p.add_argument("--rotate-refresh-tokens", type=yes_no, default=True,
                   help="ROTATE_REFRESH_TOKEN (default yes): each refresh answers a new refresh "
                        "token and revokes the one used")
    p.add_argument("--reuse-protection", type=yes_no, default=False,
                   help="REFRESH_TOKEN_REUSE_PROTECTION (default no): presenting a revoked "
                        "refresh token also revokes every token of its family")
    p.add_argument("--refresh-grace-seconds", type=int, default=0,
                   help="REFRESH_TOKEN_GRACE_PERIOD_SECONDS (default 0)")
    p.add_argument("--rotation-answer-delay", type=float, default=0, metavar="SECONDS",
                   help="answer a refresh this long after it was granted: the refresh token is "
                        "already rotated (the old one revoked) while the answer waits")
    p.add_argument("--pages", type=int, default=ITEM_PAGES, help="pages of the API with records")
    p.add_argument("--expire-at-page", type=int, default=0,
                   help="once this page has been served, every access token expires (once)")
    p.add_argument("--jwt-public-key", action="append", default=[], metavar="FILE",
                   help="PEM public key (RSA or EC P-256; a certificate or private key also "
                        "does) that JWT assertions are verified with; may be repeated")
    p.add_argument("--jwt-issuer", default="mirror-tests", help="the iss /jwt/token expects")
    p.add_argument("--jwt-leeway", type=int, default=5, help="seconds of clock skew allowed")
    p.add_argument("--app-id", default="12345", help="the iss the GitHub-style endpoint expects")
    p.add_argument("--cc-client-id", default="mirror-cc-client")
    p.add_argument("--cc-client-secret", default="mirror-cc-secret")
    p.add_argument("--refresh-client-id", default="mirror-refresh-client")
    p.add_argument("--refresh-client-secret", default="mirror-refresh-secret")
    p.add_argument("--ignore-stdin", action="store_true",
                   help="do not exit when standard input closes")
    p.add_argument("--verbose", action="store_true", help="log requests to stderr")
    return p.parse_args(argv)


ARGS = parse_args(sys.argv[1:]) if __name__ == "__main__" else None
TMPDIR = tempfile.TemporaryDirectory(prefix="mirror-oauth-")

# ---------------------------------------------------------------------------------------
# Django settings, configured in code. No migrations run: the tables are made straight
# from the models (MIGRATION_MODULES None = syncdb), which is ~10x faster than applying
# DOT's 22 migrations plus auth's and contenttypes'.

import django  # noqa: E402
from django.conf import settings  # noqa: E402

settings.configure(
    DEBUG=False,
    SECRET_KEY=uuid.uuid4().hex,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    USE_TZ=True,
    TIME_ZONE="UTC",
    INSTALLED_APPS=[
        "django.contrib.contenttypes",
        "django.contrib.auth",
        "oauth2_provider",
    ],
    MIGRATION_MODULES={"contenttypes": None, "auth": None, "oauth2_provider": None},
    MIDDLEWARE=[__name__ + ".StatsMiddleware"],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.path.join(TMPDIR.name, "oauth.sqlite3"),
            # the server is threaded: wait for a writer instead of failing, and take the
            # write lock at BEGIN so two refreshes cannot deadlock upgrading their locks
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE",
                        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"},
        }
    },
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    LOGGING_CONFIG=None,
    OAUTH2_PROVIDER={
        "ACCESS_TOKEN_EXPIRE_SECONDS": ARGS.access_token_seconds if ARGS else 3600,
        "ROTATE_REFRESH_TOKEN": ARGS.rotate_refresh_tokens if ARGS else True,
        "REFRESH_TOKEN_REUSE_PROTECTION": ARGS.reuse_protection if ARGS else False,
        "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": ARGS.refresh_grace_seconds if ARGS else 0,
        "SCOPES": {"read": "Read", "write": "Write"},
    },
)
django.setup()

import logging  # noqa: E402
import warnings  # noqa: E402

# DOT warns (RFC 9700 gates) through both warnings and logging; keep stderr for errors
warnings.simplefilter("ignore", DeprecationWarning)
logging.basicConfig(level=logging.ERROR, stream=sys.stderr)

import jwt  # noqa: E402  (PyJWT)
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db.models.signals import post_save  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path, re_path  # noqa: E402
from django.utils import timezone  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402
from oauthlib.common import generate_token  # noqa: E402
from oauth2_provider import views as dot_views  # noqa: E402
from oauth2_provider.models import (AccessToken, Application, RefreshToken,  # noqa: E402
                                    set_token_value)
from oauth2_provider.oauth2_backends import get_oauthlib_core  # noqa: E402
from oauth2_provider.www_authenticate import build_bearer_challenge  # noqa: E402

# ---------------------------------------------------------------------------------------
# Counters


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.token_requests = {}  # grant type -> count
        self.token_responses = {}  # grant type -> {status -> count}
        self.api_requests = {}  # status -> count
        self.access_tokens_issued = 0
        self.refresh_tokens_issued = 0
        self.latest_refresh_token = None  # the last one a token answer handed out

    def token(self, grant, status):
        with self.lock:
            self.token_requests[grant] = self.token_requests.get(grant, 0) + 1
            by = self.token_responses.setdefault(grant, {})
            by[str(status)] = by.get(str(status), 0) + 1

    def api(self, status):
        with self.lock:
            self.api_requests[str(status)] = self.api_requests.get(str(status), 0) + 1

    def issued(self, kind):
        with self.lock:
            setattr(self, kind, getattr(self, kind) + 1)


STATS = Stats()


def _on_access_token(sender, instance, created, **kwargs):
    if created:
        STATS.issued("access_tokens_issued")


def _on_refresh_token(sender, instance, created, **kwargs):
    if created:
        STATS.issued("refresh_tokens_issued")


post_save.connect(_on_access_token, sender=AccessToken, dispatch_uid="mirror-at")
post_save.connect(_on_refresh_token, sender=RefreshToken, dispatch_uid="mirror-rt")


class StatsMiddleware:
    """Counts token requests by grant type and API requests by status."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not response.streaming and not response.has_header("Content-Length"):
            # without it Django's server closes the connection after every response
            response["Content-Length"] = str(len(response.content))
        p = request.path
        if p == "/o/token/" or p == "/jwt/token":
            grant = request.POST.get("grant_type", "") if request.method == "POST" else ""
            STATS.token(grant or "(none)", response.status_code)
            if response.status_code == 200 and not response.streaming:
                rotated = json.loads(response.content).get("refresh_token")
                if rotated:
                    with STATS.lock:
                        STATS.latest_refresh_token = rotated
                if grant == "refresh_token" and ARGS is not None and ARGS.rotation_answer_delay > 0:
                    # rotated and committed: the client's old refresh token is dead already
                    time.sleep(ARGS.rotation_answer_delay)
        elif p.startswith("/app/installations/"):
            STATS.token(GITHUB_GRANT, response.status_code)
        elif p.startswith("/api/"):
            STATS.api(response.status_code)
        if ARGS is not None and ARGS.verbose:
            sys.stderr.write("%s %s -> %d\n" % (request.method, request.get_full_path(),
                                                response.status_code))
        return response


# ---------------------------------------------------------------------------------------
# State made at start

APPS = {}  # role -> Application
PUBLIC_KEYS = []  # (algorithm, key)


def make_refresh_token():
    """A refresh token for the authorization-code client, made as DOT's token endpoint
    makes one: an access token (already expired, never handed out) plus a refresh token
    bound to it in a new token family. DOT rejects a refresh token with no access token."""
    app = APPS["refresh"]
    at = AccessToken(user=app.user, application=app, scope="read write",
                     expires=timezone.now() - datetime.timedelta(seconds=1))
    set_token_value(at, generate_token())
    at.save()
    value = generate_token()
    rt = RefreshToken(user=app.user, application=app, access_token=at, token_family=uuid.uuid4())
    set_token_value(rt, value)
    rt.save()
    return value


def prepare_database():
    from django.contrib.auth import get_user_model
    call_command("migrate", run_syncdb=True, verbosity=0, interactive=False, skip_checks=True)
    user = get_user_model().objects.create(username="mirror-user")
    user.set_password("mirror-password")
    user.save()
    # hash_client_secret=False: DOT otherwise stores the secret through Django's password
    # hasher and checks it on every token request (PBKDF2, ~0.3 s each).
    APPS["cc"] = Application.objects.create(
        name="mirror client credentials", client_id=ARGS.cc_client_id,
        client_secret=ARGS.cc_client_secret, hash_client_secret=False,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS)
    APPS["refresh"] = Application.objects.create(
        name="mirror authorization code", client_id=ARGS.refresh_client_id,
        client_secret=ARGS.refresh_client_secret, hash_client_secret=False,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/callback", user=user)
    APPS["jwt"] = Application.objects.create(
        name="mirror jwt bearer", client_id="mirror-jwt-" + uuid.uuid4().hex[:8],
        client_secret=generate_token(), hash_client_secret=False,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS)
    APPS["github"] = Application.objects.create(
        name="mirror github app", client_id="mirror-gh-" + uuid.uuid4().hex[:8],
        client_secret=generate_token(), hash_client_secret=False,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS)
    return make_refresh_token()


def load_public_key(file_name):
    data = open(file_name, "rb").read()
    if b"BEGIN CERTIFICATE" in data:
        key = x509.load_pem_x509_certificate(data).public_key()
    elif b"PRIVATE KEY" in data:
        key = serialization.load_pem_private_key(data, password=None).public_key()
    else:
        key = serialization.load_pem_public_key(data)
    if isinstance(key, rsa.RSAPublicKey):
        return ("RS256", key)
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return ("ES256", key)
    raise SystemExit("%s: only RSA and EC P-256 keys are supported" % file_name)


# ---------------------------------------------------------------------------------------
# Views


def page_of_items(page):
    if page < 1 or page > OPTIONS["pages"]:
        return {"data": [], "page": page}
    first = (page - 1) * ITEMS_PER_PAGE + 1
    return {"data": [{"id": i, "name": "item %d" % i} for i in range(first, first + ITEMS_PER_PAGE)],
            "page": page}


def bearer_401(request, error):
    error = dict(error or {})
    if "error" not in error:  # no token at all: oauthlib gives no error
        error = {"error": "invalid_token", "error_description": "No access token was provided."}
    response = JsonResponse(error, status=401)
    response["WWW-Authenticate"] = build_bearer_challenge(request, error, resource_metadata_url=None)
    return response


def items_view(request):
    if request.method != "GET":
        return JsonResponse({"error": "method not allowed"}, status=405)
    valid, oauth_request = get_oauthlib_core().verify_request(request, scopes=[])
    if not valid:
        return bearer_401(request, getattr(oauth_request, "oauth2_error", None))
    try:
        page = int(request.GET.get("page", "1"))
    except ValueError:
        return JsonResponse({"error": "page must be an integer"}, status=400)
    response = JsonResponse(page_of_items(page))
    with STATS.lock:
        expire = page == OPTIONS["expire_at_page"]
        if expire:
            OPTIONS["expire_at_page"] = 0
    if expire:
        AccessToken.objects.update(expires=timezone.now() - datetime.timedelta(seconds=1))
    return response


def this_url(request, path_):
    return "http://%s%s" % (request.get_host(), path_)


def decode_assertion(token, audience, issuer, max_lifetime=None):
    """Verifies a JWT against the configured keys; returns (claims, None) or (None, why)."""
    if not PUBLIC_KEYS:
        return None, "no public key is configured (--jwt-public-key)"
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as e:
        return None, "malformed JWT: %s" % e
    alg = header.get("alg")
    keys = [key for a, key in PUBLIC_KEYS if a == alg]
    if not keys:
        return None, "unsupported alg %r (keys configured: %s)" % (
            alg, ", ".join(sorted({a for a, _ in PUBLIC_KEYS})))
    why = None
    for key in keys:
        try:
            claims = jwt.decode(
                token, key, algorithms=[alg], audience=audience,
                options={"require": ["exp", "iat", "iss"] + (["aud"] if audience else []),
                         "verify_aud": audience is not None, "verify_iss": False},
                leeway=ARGS.jwt_leeway)
        except jwt.InvalidSignatureError as e:
            why = str(e)
            continue
        except jwt.PyJWTError as e:
            return None, "%s: %s" % (type(e).__name__, e)
        if str(claims.get("iss")) != str(issuer):
            return None, "InvalidIssuerError: iss is %r, expected %r" % (claims.get("iss"), issuer)
        if max_lifetime is not None and claims["exp"] - claims["iat"] > max_lifetime:
            return None, "'Expiration time' claim ('exp') is too far in the future"
        return claims, None
    return None, "InvalidSignatureError: %s" % why


def issue_access_token(app, prefix=""):
    value = prefix + generate_token(36 if prefix else 30)
    expires = timezone.now() + datetime.timedelta(seconds=ARGS.access_token_seconds)
    at = AccessToken(user=None, application=app, scope="read write", expires=expires)
    set_token_value(at, value)
    at.save()
    return value, expires


@csrf_exempt
def jwt_token_view(request):
    def error(code, description, status=400):
        response = JsonResponse({"error": code, "error_description": description}, status=status)
        response["Cache-Control"] = "no-store"
        return response

    if request.method != "POST":
        return error("invalid_request", "use POST", 405)
    if request.POST.get("grant_type") != JWT_BEARER:
        return error("unsupported_grant_type", "grant_type must be " + JWT_BEARER)
    assertion = request.POST.get("assertion")
    if not assertion:
        return error("invalid_request", "assertion is missing")
    claims, why = decode_assertion(assertion, this_url(request, "/jwt/token"), ARGS.jwt_issuer)
    if claims is None:
        return error("invalid_grant", why)
    value, _ = issue_access_token(APPS["jwt"])
    response = JsonResponse({"access_token": value, "token_type": "Bearer",
                             "expires_in": ARGS.access_token_seconds})
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt
def github_access_tokens_view(request, installation_id):
    def error(message, status):
        return JsonResponse({"message": message}, status=status)

    if request.method != "POST":
        return error("Not Found", 404)
    auth = request.headers.get("Authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return error("A JSON web token could not be decoded", 401)
    claims, why = decode_assertion(token.strip(), None, ARGS.app_id, max_lifetime=600)
    if claims is None:
        return error("A JSON web token could not be decoded: " + why, 401)
    if int(installation_id) != INSTALLATION_ID:
        return error("Not Found", 404)
    value, expires = issue_access_token(APPS["github"], prefix="ghs_")
    return JsonResponse({"token": value,
                         "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "permissions": {"contents": "read", "metadata": "read"},
                         "repository_selection": "all"}, status=201)


def stats_view(request):
    with STATS.lock:
        body = {
            "token_requests": dict(STATS.token_requests),
            "token_responses": {g: dict(s) for g, s in STATS.token_responses.items()},
            "api_requests": dict(STATS.api_requests),
            "access_tokens": {"issued": STATS.access_tokens_issued},
            "refresh_tokens": {"issued": STATS.refresh_tokens_issued,
                               "latest": STATS.latest_refresh_token},
        }
    body["access_tokens"]["live"] = AccessToken.objects.filter(expires__gt=timezone.now()).count()
    body["refresh_tokens"]["revoked"] = RefreshToken.objects.filter(revoked__isnull=False).count()
    body["refresh_tokens"]["active"] = RefreshToken.objects.filter(revoked__isnull=True).count()
    return JsonResponse(body)


@csrf_exempt
def expire_view(request):
    if request.method != "POST":
        return JsonResponse({"error": "use POST"}, status=405)
    n = AccessToken.objects.update(expires=timezone.now() - datetime.timedelta(seconds=1))
    return JsonResponse({"expired": n})


@csrf_exempt
def new_refresh_token_view(request):
    if request.method != "POST":
        return JsonResponse({"error": "use POST"}, status=405)
    return JsonResponse({"refresh_token": make_refresh_token()})


urlpatterns = [
    path("o/token/", dot_views.TokenView.as_view()),
    path("o/revoke_token/", dot_views.RevokeTokenView.as_view()),
    path("o/introspect/", dot_views.IntrospectTokenView.as_view()),
    path("api/items", items_view),
    path("jwt/token", jwt_token_view),
    re_path(r"^app/installations/(?P<installation_id>[0-9]+)/access_tokens$",
            github_access_tokens_view),
    path("stats", stats_view),
    path("control/expire-access-tokens", expire_view),
    path("control/refresh-token", new_refresh_token_view),
]


# ---------------------------------------------------------------------------------------
# Serving


def main():
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    class Handler(WSGIRequestHandler):
        def log_message(self, *args):  # the middleware logs with --verbose
            pass

    for file_name in ARGS.jwt_public_key:
        PUBLIC_KEYS.append(load_public_key(file_name))
    OPTIONS.update(pages=ARGS.pages, expire_at_page=ARGS.expire_at_page)
    refresh_token = prepare_database()

    server = ThreadedWSGIServer((ARGS.host, ARGS.port), Handler, ipv6=":" in ARGS.host)
    server.daemon_threads = True
    server.set_app(WSGIHandler())
    port = server.server_address[1]
    base = "http://%s:%d" % (ARGS.host if ":" not in ARGS.host else "[%s]" % ARGS.host, port)

    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = stop_event(watch_stdin=not ARGS.ignore_stdin)

    ready = {
        "port": port,
        "token_url": base + "/o/token/",
        "client_credentials": {"client_id": ARGS.cc_client_id,
                               "client_secret": ARGS.cc_client_secret},
        "refresh": {"client_id": ARGS.refresh_client_id,
                    "client_secret": ARGS.refresh_client_secret,
                    "refresh_token": refresh_token},
        "api_url": base + "/api/items",
        "stats_url": base + "/stats",
        "jwt": {"token_url": base + "/jwt/token", "audience": base + "/jwt/token",
                "issuer": ARGS.jwt_issuer},
        "github_app": {"app_id": ARGS.app_id, "installation_id": INSTALLATION_ID,
                       "access_tokens_url": "%s/app/installations/%d/access_tokens"
                                            % (base, INSTALLATION_ID)},
        "startup_seconds": round(time.monotonic() - T0, 3),
    }
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()

    while not stop.wait(3600):
        pass
    # no graceful drain: the tests that started this server are done with it
    server.server_close()
    TMPDIR.cleanup()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())

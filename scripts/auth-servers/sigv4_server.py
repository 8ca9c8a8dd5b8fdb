#!/usr/bin/env python3
"""An HTTP server that checks AWS Signature Version 4 on every request with botocore's own
signer, for mirror's authentication tests. Run it with the venv from setup.sh:

    python sigv4_server.py --access-key AKID --secret-key SECRET [--session-token TOKEN]
                           [--region us-east-1] [--service execute-api] [--port 0]
                           [--max-skew-seconds 900] [--ignore-stdin] [--verbose]

When ready it prints one JSON line to stdout (then flushes):

    {"port": P, "url": "http://127.0.0.1:P", "region", "service", "access_key"}

It exits when its standard input reaches end of file (unless --ignore-stdin) or on
SIGTERM/SIGINT.

How a request is checked: the server rebuilds it as botocore would see it on the client
(method, http://<Host header><path as sent>, the query decoded and handed to botocore as
params so it re-encodes it canonically, exactly the headers named in SignedHeaders with
the values received, the body) and has botocore.auth.SigV4Auth (S3SigV4Auth when the
service is s3) sign it with the credentials given here at the client's X-Amz-Date. The
Authorization header it gets must match the client's in Credential, SignedHeaders and
Signature. A signed X-Amz-Content-SHA256 must also be the body's SHA-256 (or
UNSIGNED-PAYLOAD).

  GET  /items?page=N   {"data":[10 x {"id","name"}],"page":N} for N = 1..5, [] after
  POST /search         JSON body {"page":N} -> the same page
  GET  /stats          (unsigned) {"verified":n,"rejected":n,"rejected_by_reason":{...},
                       "requests_by_status":{...}}

Refusals are JSON, as AWS's: 403 {"__type":"...","message":"..."}; a signature mismatch
also carries "canonical_request" and "string_to_sign" as the server computed them.
"""
import time

T0 = time.monotonic()  # before botocore's import, most of the start-up

import argparse  # noqa: E402
import datetime
import hashlib
import hmac
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit
from stopping import stop_event

import botocore.auth
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

ITEMS_PER_PAGE = 10
ITEM_PAGES = 5
SIGV4_TIMESTAMP = "%Y%m%dT%H%M%SZ"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
MISMATCH = ("The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method. "
            "Consult the service documentation for details.")
AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256\s+(.*)$", re.S)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--access-key", required=True)
    p.add_argument("--secret-key", required=True)
    p.add_argument("--session-token", default=None,
                   help="when given, requests must carry it in a signed X-Amz-Security-Token")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--service", default="execute-api")
    p.add_argument("--max-skew-seconds", type=int, default=900,
                   help="how far X-Amz-Date may be from now (AWS: 15 minutes)")
    p.add_argument("--ignore-stdin", action="store_true",
                   help="do not exit when standard input closes")
    p.add_argument("--verbose", action="store_true", help="log requests to stderr")
    return p.parse_args(argv)


ARGS = None


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.verified = 0
        self.rejected = 0
        self.rejected_by_reason = {}
        self.requests_by_status = {}

    def count(self, status, reason=None):
        with self.lock:
            self.requests_by_status[str(status)] = self.requests_by_status.get(str(status), 0) + 1
            if reason is None:
                self.verified += 1
            else:
                self.rejected += 1
                self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1

    def snapshot(self):
        with self.lock:
            return {"verified": self.verified, "rejected": self.rejected,
                    "rejected_by_reason": dict(self.rejected_by_reason),
                    "requests_by_status": dict(self.requests_by_status)}


STATS = Stats()

# botocore's signer reads the clock through botocore.auth.get_current_datetime; to sign at
# the client's X-Amz-Date it is replaced for the duration of one add_auth call.
_CLOCK_LOCK = threading.Lock()


def sign_at(auth, request, when):
    with _CLOCK_LOCK:
        saved = botocore.auth.get_current_datetime
        botocore.auth.get_current_datetime = lambda *args, **kwargs: when
        try:
            auth.add_auth(request)
        finally:
            botocore.auth.get_current_datetime = saved


class Refusal(Exception):
    def __init__(self, status, reason, error_type, message, **extra):
        super().__init__(message)
        self.status, self.reason, self.error_type, self.message = status, reason, error_type, message
        self.extra = extra


def parse_authorization(value):
    m = AUTH_RE.match(value.strip())
    if not m:
        raise Refusal(403, "bad_authorization", "IncompleteSignatureException",
                      "Authorization header requires the AWS4-HMAC-SHA256 scheme.")
    parts = {}
    for item in m.group(1).split(","):
        k, _, v = item.strip().partition("=")
        parts[k.strip()] = v.strip()
    missing = [k for k in ("Credential", "SignedHeaders", "Signature") if not parts.get(k)]
    if missing:
        raise Refusal(403, "bad_authorization", "IncompleteSignatureException",
                      "Authorization header requires '%s' parameter." % missing[0])
    return parts


def verify(method, raw_path, headers, body):
    """Raises Refusal unless the request is signed by the configured credentials."""
    auth_value = headers.get("Authorization")
    if not auth_value:
        raise Refusal(403, "missing_authorization", "MissingAuthenticationTokenException",
                      "Missing Authentication Token")
    client = parse_authorization(auth_value)
    scope = client["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise Refusal(403, "bad_credential", "IncompleteSignatureException",
                      "Credential should be of the form AKID/date/region/service/aws4_request, "
                      "got '%s'." % client["Credential"])
    if scope[0] != ARGS.access_key:
        raise Refusal(403, "unknown_access_key", "UnrecognizedClientException",
                      "The security token included in the request is invalid.")
    signed_names = [n.strip().lower() for n in client["SignedHeaders"].split(";") if n.strip()]
    if "host" not in signed_names:
        raise Refusal(403, "host_not_signed", "IncompleteSignatureException",
                      "'Host' must be a 'SignedHeader' in the AWS Authorization.")
    amz_date = headers.get("X-Amz-Date")
    if not amz_date or "x-amz-date" not in signed_names:
        raise Refusal(403, "date_not_signed", "IncompleteSignatureException",
                      "Authorization header requires existence of a signed 'X-Amz-Date' header.")
    try:
        when = datetime.datetime.strptime(amz_date, SIGV4_TIMESTAMP)
    except ValueError:
        raise Refusal(403, "bad_date", "IncompleteSignatureException",
                      "X-Amz-Date must be in the ISO8601 basic format YYYYMMDD'T'HHMMSS'Z'.")
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if abs((now - when).total_seconds()) > ARGS.max_skew_seconds:
        raise Refusal(403, "signature_expired", "InvalidSignatureException",
                      "Signature expired: %s is now earlier than %s (%s - %d min.)"
                      % (amz_date, (now - datetime.timedelta(seconds=ARGS.max_skew_seconds))
                         .strftime(SIGV4_TIMESTAMP), now.strftime(SIGV4_TIMESTAMP),
                         ARGS.max_skew_seconds // 60)
                      if when < now else
                      "Signature not yet current: %s is still later than %s (%s + %d min.)"
                      % (amz_date, (now + datetime.timedelta(seconds=ARGS.max_skew_seconds))
                         .strftime(SIGV4_TIMESTAMP), now.strftime(SIGV4_TIMESTAMP),
                         ARGS.max_skew_seconds // 60))
    if scope[2] != ARGS.region or scope[3] != ARGS.service:
        raise Refusal(403, "bad_scope", "InvalidSignatureException",
                      "Credential should be scoped to a valid region and service: expected "
                      "'%s/%s', got '%s/%s'." % (ARGS.region, ARGS.service, scope[2], scope[3]))
    if scope[1] != amz_date[:8]:
        raise Refusal(403, "bad_scope", "InvalidSignatureException",
                      "Credential should be scoped to the date of X-Amz-Date: expected '%s', "
                      "got '%s'." % (amz_date[:8], scope[1]))
    if ARGS.session_token is not None:
        if headers.get("X-Amz-Security-Token") != ARGS.session_token \
                or "x-amz-security-token" not in signed_names:
            raise Refusal(403, "bad_session_token", "UnrecognizedClientException",
                          "The security token included in the request is invalid.")
    content_sha = headers.get("X-Amz-Content-SHA256")
    if content_sha is not None and content_sha != UNSIGNED_PAYLOAD \
            and not content_sha.startswith("STREAMING-") \
            and content_sha.lower() != hashlib.sha256(body).hexdigest():
        raise Refusal(400, "content_sha256_mismatch", "XAmzContentSHA256Mismatch",
                      "The provided 'x-amz-content-sha256' header does not match what was "
                      "computed.")

    # The request as botocore saw it on the client's side.
    split = urlsplit(raw_path)
    url = "http://%s%s" % (headers.get("Host", ""), split.path)
    request = AWSRequest(method=method, url=url, data=body)
    # decoded pairs, in the order sent; botocore encodes and sorts them canonically
    request.params = parse_qsl(split.query, keep_blank_values=True)
    for name in signed_names:
        for value in headers.get_all(name) or []:
            request.headers[name] = value  # an email.message.Message: this appends
    credentials = Credentials(ARGS.access_key, ARGS.secret_key, ARGS.session_token)
    if ARGS.service == "s3":
        signer = S3SigV4Auth(credentials, ARGS.service, ARGS.region)
        # S3SigV4Auth sets X-Amz-Content-SHA256 itself: the body's hash unless told not to
        if content_sha == UNSIGNED_PAYLOAD and "x-amz-content-sha256" in signed_names:
            request.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    else:
        # a signed X-Amz-Content-SHA256 (UNSIGNED-PAYLOAD too) stands for the body's hash
        signer = SigV4Auth(credentials, ARGS.service, ARGS.region)
    sign_at(signer, request, when)
    ours = parse_authorization(request.headers["Authorization"])
    if ours["SignedHeaders"] != client["SignedHeaders"].lower() \
            or not hmac.compare_digest(ours["Signature"], client["Signature"].lower()):
        del request.headers["Authorization"]  # as it was while botocore signed
        canonical = signer.canonical_request(request)
        raise Refusal(403, "signature_mismatch", "InvalidSignatureException", MISMATCH,
                      canonical_request=canonical,
                      string_to_sign=signer.string_to_sign(request, canonical),
                      signed_headers=ours["SignedHeaders"])


def page_of_items(page):
    if page < 1 or page > ITEM_PAGES:
        return {"data": [], "page": page}
    first = (page - 1) * ITEMS_PER_PAGE + 1
    return {"data": [{"id": i, "name": "item %d" % i} for i in range(first, first + ITEMS_PER_PAGE)],
            "page": page}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mirror-sigv4"

    def log_message(self, fmt, *args):
        if ARGS.verbose:
            sys.stderr.write("sigv4 %s\n" % (fmt % args))

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def handle_any(self):
        body = self.read_body()
        path = urlsplit(self.path).path
        if path == "/stats" and self.command == "GET":
            return self.send_json(200, STATS.snapshot())
        try:
            verify(self.command, self.path, self.headers, body)
        except Refusal as r:
            STATS.count(r.status, r.reason)
            return self.send_json(r.status, dict({"__type": r.error_type, "message": r.message},
                                                 **r.extra))
        status, answer = self.route(path, body)
        STATS.count(status)
        self.send_json(status, answer)

    def route(self, path, body):
        if path == "/items" and self.command == "GET":
            query = dict(parse_qsl(urlsplit(self.path).query))
            try:
                return 200, page_of_items(int(query.get("page", "1")))
            except ValueError:
                return 400, {"message": "page must be an integer"}
        if path == "/search" and self.command == "POST":
            try:
                page = json.loads(body or b"{}").get("page", 1)
                if not isinstance(page, int):
                    raise ValueError
            except (ValueError, AttributeError):
                return 400, {"message": 'the body must be JSON {"page": N}'}
            return 200, page_of_items(page)
        return 404, {"message": "Not Found"}

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


def main():
    global ARGS
    ARGS = parse_args(sys.argv[1:])
    server = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = stop_event(watch_stdin=not ARGS.ignore_stdin)
    sys.stdout.write(json.dumps({
        "port": port, "url": "http://%s:%d" % (ARGS.host, port), "region": ARGS.region,
        "service": ARGS.service, "access_key": ARGS.access_key,
        "startup_seconds": round(time.monotonic() - T0, 3)}) + "\n")
    sys.stdout.flush()
    while not stop.wait(3600):
        pass
    server.server_close()
    os._exit(0)


if __name__ == "__main__":
    main()

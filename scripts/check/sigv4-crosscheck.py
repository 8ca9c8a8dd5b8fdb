#!/usr/bin/env python3
"""Signs a fixed set of varied requests with botocore's AWS Signature Version 4 signer and
prints them as JSON: the request as it goes on the wire (URL, the caller's headers, body),
and what botocore made of it (canonical request, string to sign, the headers it added).

Tests/MirrorHTTPTests/Fixtures/sigv4-botocore.json is this script's output; the test
"each request botocore signed is signed the same, stage by stage" (SigV4SignerTests) signs
every request again with SigV4Signer and compares each stage. To write it again:

    python3 -m venv /tmp/v && /tmp/v/bin/pip install botocore
    /tmp/v/bin/python scripts/check/sigv4-crosscheck.py > Tests/MirrorHTTPTests/Fixtures/sigv4-botocore.json

The requests cover query strings with spaces, reserved characters, Unicode and repeated or
empty keys (given as botocore's params, so that the wire URL is the one botocore sends,
spaces as `+`); S3 (path neither normalised nor encoded again, body hash in
x-amz-content-sha256) and other services (path normalised and encoded twice); session
tokens; POST bodies; ports; given Host, duplicate, padded and unsigned headers. The clock
is fixed per request, so the output is the same on every run.
"""
import datetime
import json
import sys
from unittest import mock
from urllib.parse import quote

import botocore
import botocore.auth
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

KEY = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
TOKEN = "FQoGZXIvYXdzEXAMPLE//////////wEaDMuIn+token/with=signs"
WHEN = datetime.datetime(2026, 11, 20, 8, 0, 0)
LATER = datetime.datetime(2027, 2, 28, 23, 59, 59)

# name, service, region, method, url, params, headers (pairs; a name may repeat), body,
# session token, time.
CASES = [
    ("query-spaces", "execute-api", "eu-west-1", "GET", "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/items",
     {"q": "hello world", "sort": "a  b"}, [], None, None, WHEN),
    ("query-unicode", "execute-api", "eu-west-1", "GET", "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/items",
     {"naïve": "ሴ café", "emoji": "😀"}, [], None, None, WHEN),
    ("query-repeated-keys", "service", "us-east-1", "GET", "https://example.amazonaws.com/",
     [("k", "2"), ("k", "10"), ("K", "1"), ("a", ""), ("k", "1")], [], None, None, WHEN),
    ("query-reserved", "service", "us-east-1", "GET", "https://example.amazonaws.com/",
     {"filter": "a=b&c/d?e#f+g~h*i", "list": "x,y;z", "pct": "100%"}, [], None, None, WHEN),
    ("query-in-url", "service", "us-east-1", "GET", "https://example.amazonaws.com/?b=2&a=1&c=", None, [], None, None, WHEN),
    ("path-dot-segments", "service", "us-east-1", "GET", "https://example.amazonaws.com/a/./b/../c//d/", None, [], None, None, WHEN),
    ("path-encoded-twice", "execute-api", "us-east-1", "GET",
     "https://abc123.execute-api.us-east-1.amazonaws.com/prod/foo%20bar/caf%C3%A9", None, [], None, None, WHEN),
    ("s3-key-space-unicode", "s3", "eu-central-1", "GET",
     "https://bucket.s3.eu-central-1.amazonaws.com" + quote("/my folder/ሴ file+x=y.txt", safe="/~"), None, [], None, None, WHEN),
    ("s3-put-body", "s3", "us-east-1", "PUT", "https://bucket.s3.amazonaws.com/data/2026/report.json", None,
     [("Content-Type", "application/json")], '{"id": 1, "name": "caf\u00e9"}', None, WHEN),
    ("s3-put-session-token", "s3", "us-west-2", "PUT", "https://bucket.s3.us-west-2.amazonaws.com/upload.bin", None,
     [("Content-Type", "application/octet-stream")], "binary-ish body\n", TOKEN, WHEN),
    ("s3-list-prefix", "s3", "eu-west-1", "GET", "https://bucket.s3.eu-west-1.amazonaws.com/",
     {"list-type": "2", "prefix": "photos/2026 summer/", "delimiter": "/", "max-keys": "1000"}, [], None, None, WHEN),
    ("s3-path-not-normalised", "s3", "us-east-1", "GET", "https://s3.amazonaws.com/bucket/a/../b//c/./d", None, [], None, None, WHEN),
    ("s3-local-port", "s3", "us-east-1", "GET", "http://127.0.0.1:9000/bucket/key.txt", None, [], None, None, WHEN),
    ("s3-uploads-empty-value", "s3", "us-east-1", "POST", "https://bucket.s3.amazonaws.com/big.iso",
     {"uploads": ""}, [], None, None, WHEN),
    ("s3-delete", "s3", "ap-southeast-2", "DELETE", "https://bucket.s3.ap-southeast-2.amazonaws.com/old%2Bfile.txt",
     {"versionId": "3/L4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo"}, [], None, TOKEN, LATER),
    ("post-json-session-token", "lambda", "us-east-1", "POST",
     "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/my-function/invocations", None,
     [("Content-Type", "application/json"), ("X-Amz-Invocation-Type", "RequestResponse")],
     '{"key": "value", "n": [1, 2, 3]}', TOKEN, WHEN),
    ("post-form", "sqs", "eu-west-1", "POST", "https://sqs.eu-west-1.amazonaws.com/", None,
     [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")],
     "Action=SendMessage&MessageBody=hello+world+%26+more&QueueUrl=https%3A%2F%2Fsqs.eu-west-1.amazonaws.com%2F123%2Fq",
     None, WHEN),
    ("headers-padded-duplicate-unsigned", "service", "us-east-1", "GET", "https://example.amazonaws.com/", None,
     [("X-Custom", "  a   b  c "), ("X-Multi", "one"), ("X-Multi", "two"), ("User-Agent", "mirror/1.0"),
      ("Accept", "application/json"), ("Connection", "keep-alive")], None, None, WHEN),
    ("host-given", "service", "us-east-1", "GET", "https://127.0.0.1:8443/v1/things", {"page": "2"},
     [("Host", "example.amazonaws.com")], None, None, WHEN),
    ("non-default-port", "es", "eu-north-1", "GET", "https://localhost:8443/_search", {"q": "title:mirror"}, [], None, None, LATER),
    ("given-payload-hash", "service", "us-east-1", "PUT", "https://example.amazonaws.com/stream", None,
     [("X-Amz-Content-SHA256", "UNSIGNED-PAYLOAD")], "not hashed", None, WHEN),
    ("sts-get-caller-identity", "sts", "us-east-1", "GET", "https://sts.amazonaws.com/",
     {"Action": "GetCallerIdentity", "Version": "2011-06-15"}, [], None, TOKEN, LATER),
]


def sign(case):
    name, service, region, method, url, params, headers, body, token, when = case
    request = AWSRequest(method=method, url=url, params=params or {}, data=body.encode() if body is not None else None)
    for header, value in headers:
        request.headers[header] = value  # a repeated name is added, not replaced
    auth_class = S3SigV4Auth if service == "s3" else SigV4Auth
    auth = auth_class(Credentials(KEY[0], KEY[1], token), service, region)
    stages = {}
    canonical_request, string_to_sign = auth.canonical_request, auth.string_to_sign

    def keep_canonical_request(r):
        stages["canonical_request"] = canonical_request(r)
        return stages["canonical_request"]

    def keep_string_to_sign(r, c):
        stages["string_to_sign"] = string_to_sign(r, c)
        return stages["string_to_sign"]

    auth.canonical_request, auth.string_to_sign = keep_canonical_request, keep_string_to_sign
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
        auth.add_auth(request)
    given = {h.lower() for h, _ in headers}
    signed = {
        h.lower(): v for h, v in request.headers.items()
        if h.lower() in ("x-amz-date", "x-amz-security-token", "x-amz-content-sha256", "authorization")
        and h.lower() not in given
    }
    return {
        "name": name,
        "access_key": KEY[0],
        "secret_key": KEY[1],
        "session_token": token,
        "region": region,
        "service": service,
        "method": method,
        "url": request.prepare().url,
        "headers": [[h, v] for h, v in headers],
        "body": body,
        "timestamp": when.replace(tzinfo=datetime.timezone.utc).timestamp(),
        "canonical_request": stages["canonical_request"],
        "string_to_sign": stages["string_to_sign"],
        "signed": signed,
    }


def main():
    cases = [sign(case) for case in CASES]
    json.dump(cases, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    print(f"{len(cases)} requests signed with botocore {botocore.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""moto's S3 in server mode, checking SigV4 signatures, for mirror's S3 client tests. Run it
with the venv from setup.sh:

    python s3_server.py [--port 0] [--region us-east-1] [--put-delay 0] [--request-log FILE]
                        [--ignore-stdin] [--verbose]

When ready it prints one JSON line to stdout (then flushes):

    {"port": P, "url": "http://127.0.0.1:P", "region", "access_key", "secret_key",
     "role_arn", "startup_seconds"}

Before printing it makes an IAM user with a policy allowing every S3 action and an access
key for it, then turns moto's request authentication on (moto's /moto-api/reset-auth with
0, the INITIAL_NO_AUTH_ACTION_COUNT setting): from then on every S3 request must be signed
with that key (botocore's S3SigV4Auth checks it), or moto answers 403
SignatureDoesNotMatch (a wrong secret) or InvalidAccessKeyId (an unknown key).

It also makes a role, ROLE_ARN, allowed every S3 action, for STS's AssumeRoleWithWebIdentity
(what a Kubernetes service account on EKS uses): its temporary keys and session token sign
S3 requests as the user's key does, and moto checks the token. AWS takes that one action
unsigned (the web identity token is the credential); moto's authentication would ask it for
a signature too, so that one action is let through unsigned, as AWS lets it (moto does not
check the token itself).

An unsigned GET or HEAD of an object (a public URL, as a device or a CDN reads one) is
judged as AWS judges it, by the bucket's policy and the object's ACL: moto's authentication
would ask it for a signature (and fail with a 500 on the missing Authorization header), so
it is passed on unsigned to moto's own check, which answers 403 unless a policy or ACL lets
everyone read it. Every other unsigned request still goes to moto's authentication.

--request-log FILE appends one line per request answered, `METHOD TARGET STATUS RANGE`
(`-` without a Range header), as a web server's access log does (in place of --verbose's
lines).

--put-delay S makes every PUT wait S seconds before it is handled: a distant bucket, for
scripts/check/chaos-state.py.

It exits when its standard input reaches end of file (unless --ignore-stdin) or on
SIGTERM/SIGINT.
"""
import time

T0 = time.monotonic()  # before moto's import, most of the start-up

import argparse  # noqa: E402
import json
import logging
import os
import sys
import urllib.request
from stopping import stop_event

import boto3
from moto.core.responses import BaseResponse
from moto.s3.responses import S3Response
from moto.server import ThreadedMotoServer

_authenticate = BaseResponse._authenticate_and_authorize_normal_action
_authenticate_s3 = S3Response._authenticate_and_authorize_s3_action


def _unsigned_web_identity(self, resource="*"):
    """AWS takes AssumeRoleWithWebIdentity unsigned; every other action is checked."""
    if self._get_action() == "AssumeRoleWithWebIdentity":
        return None
    return _authenticate(self, resource)


BaseResponse._authenticate_and_authorize_normal_action = _unsigned_web_identity


def _anonymous_object_reads(self, bucket_name=None, key_name=None):
    """An unsigned read of an object is left to the bucket's policy and the object's ACL."""
    unsigned = "Authorization" not in self.headers and "Signature=" not in self.uri
    if unsigned and key_name is not None and self.method in ("GET", "HEAD"):
        return None
    return _authenticate_s3(self, bucket_name=bucket_name, key_name=key_name)


S3Response._authenticate_and_authorize_s3_action = _anonymous_object_reads

ROLE_TRUST = json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity",
                   "Principal": {"Federated": "arn:aws:iam::123456789012:oidc-provider/oidc.example"}}],
})
POLICY = json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
})


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--put-delay", type=float, default=0.0,
                   help="seconds every PUT waits before it is handled")
    p.add_argument("--request-log", help="a file to append `METHOD TARGET STATUS RANGE` to, per request")
    p.add_argument("--ignore-stdin", action="store_true",
                   help="do not exit when standard input closes")
    p.add_argument("--verbose", action="store_true", help="log requests to stderr")
    return p.parse_args(argv)


def log_requests(path):
    """Appends each request werkzeug answers to `path`, one line each, as it is answered."""
    import threading
    from werkzeug.serving import WSGIRequestHandler
    lock = threading.Lock()

    def log_request(self, code="-", size="-"):
        line = "%s %s %s %s\n" % (self.command, self.path, getattr(code, "value", code), self.headers.get("Range") or "-")
        with lock, open(path, "a") as log:
            log.write(line)

    WSGIRequestHandler.log_request = log_request


def main():
    args = parse_args(sys.argv[1:])
    if not args.verbose:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
    if args.put_delay > 0:
        from werkzeug.serving import WSGIRequestHandler
        handle = WSGIRequestHandler.run_wsgi

        def slow_put(self):
            if self.command == "PUT":
                time.sleep(args.put_delay)
            return handle(self)

        WSGIRequestHandler.run_wsgi = slow_put
    if args.request_log:
        log_requests(args.request_log)
    server = ThreadedMotoServer(ip_address=args.host, port=args.port, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    url = "http://%s:%d" % (args.host, port)

    # Authentication is still off: the user, its policy and its key are made unsigned.
    iam = boto3.client("iam", endpoint_url=url, region_name=args.region,
                       aws_access_key_id="setup", aws_secret_access_key="setup")
    iam.create_user(UserName="mirror")
    iam.put_user_policy(UserName="mirror", PolicyName="s3", PolicyDocument=POLICY)
    key = iam.create_access_key(UserName="mirror")["AccessKey"]
    role = iam.create_role(RoleName="mirror-state", AssumeRolePolicyDocument=ROLE_TRUST)["Role"]["Arn"]
    iam.put_role_policy(RoleName="mirror-state", PolicyName="s3", PolicyDocument=POLICY)
    request = urllib.request.Request(url + "/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request).read()

    stop = stop_event(watch_stdin=not args.ignore_stdin)
    sys.stdout.write(json.dumps({
        "port": port, "url": url, "region": args.region,
        "access_key": key["AccessKeyId"], "secret_key": key["SecretAccessKey"], "role_arn": role,
        "startup_seconds": round(time.monotonic() - T0, 3)}) + "\n")
    sys.stdout.flush()
    while not stop.wait(3600):
        pass
    os._exit(0)


if __name__ == "__main__":
    main()

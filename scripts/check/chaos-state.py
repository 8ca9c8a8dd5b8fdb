#!/usr/bin/env python3
"""A pushed state under kill -9: does a run resumed from it end with every record?

    scripts/check/chaos-state.py [--kills 20] [--put-delay 0.5] [--seed N]

Runs the built binary (MIRROR, default .build/debug/mirror) against an API of 60 posts,
each with 6 comments on 2 pages (`posts`, then `post_comments` with `parent: posts`:
360 comments), with `--state s3://…` in moto's S3 (scripts/auth-servers/s3_server.py)
slowed to --put-delay seconds a PUT, as a distant bucket is, and `--push-every 1s`.

First an unbroken run. Then, --kills times, each in a bucket of its own: a run killed
with SIGKILL at a random moment, and a run from an empty folder once the killed run's
lease has lapsed, which pulls what the killed run pushed and goes on. Each resumed run
must end with exactly the records of the unbroken run (ids, parents and records of both
tables). The last line is the figure:

    chaos-state: 20 of 20 resumed runs ended with exactly 360 of 360 comments

It exits 1 when any resumed run differs. Needs the venv of scripts/auth-servers/setup.sh
(MIRROR_TEST_PYTHON runs it, as scripts/test.sh sets it); the API is this script's own.
"""
import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POSTS = 60
POSTS_A_PAGE = 10
COMMENTS = 6
COMMENTS_A_PAGE = 3
LEASE = 3


class API(BaseHTTPRequestHandler):
    """`/posts?page=N`, 10 posts a page; `/posts/<id>/comments?page=N`, 3 a page. Each
    answer waits a little, so that a walk lasts a few seconds and a kill lands inside it."""

    def do_GET(self):
        url = urlsplit(self.path)
        page = int(parse_qs(url.query).get("page", ["1"])[0])
        parts = url.path.strip("/").split("/")
        time.sleep(0.01)
        if parts == ["posts"]:
            first = (page - 1) * POSTS_A_PAGE + 1
            ids = range(first, min(first + POSTS_A_PAGE, POSTS + 1))
            body = {"posts": [{"id": i, "title": "post %d" % i} for i in ids]}
        elif len(parts) == 3 and parts[0] == "posts" and parts[2] == "comments":
            post = int(parts[1])
            first = (page - 1) * COMMENTS_A_PAGE + 1
            numbers = range(first, min(first + COMMENTS_A_PAGE, COMMENTS + 1))
            body = {"comments": [{"id": "%d-%d" % (post, n), "text": "comment %d of post %d" % (n, post)}
                                 for n in numbers]}
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a killed run's connections break mid-answer


JOBS = """version: 1
jobs:
  - name: posts
    url: "{base}/posts?page={{page}}"
    records: posts
    id: id
    table: t_post
  - name: post_comments
    parent: posts
    url: "{base}/posts/{{parent.id}}/comments?page={{page}}"
    records: comments
    id: id
    table: t_comment
    concurrency: 2
"""


def rows(folder, table):
    path = os.path.join(folder, table + ".sqlite")
    if not os.path.exists(path):
        return []
    with sqlite3.connect(path) as db:
        columns = "id, parent_id, record" if table == "t_comment" else "id, record"
        return db.execute("SELECT %s FROM %s ORDER BY id" % (columns, table)).fetchall()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--put-delay", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    chance = random.Random(seed)
    mirror = os.environ.get("MIRROR", os.path.join(ROOT, ".build/debug/mirror"))
    python = os.environ.get("MIRROR_TEST_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="mirror-chaos-state.")
    api = Server(("127.0.0.1", 0), API)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    s3 = subprocess.Popen([python, os.path.join(ROOT, "scripts/auth-servers/s3_server.py"),
                           "--put-delay", str(args.put_delay)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(s3.stdout.readline())
        environment = dict(os.environ, AWS_ACCESS_KEY_ID=ready["access_key"], AWS_SECRET_ACCESS_KEY=ready["secret_key"],
                           AWS_ENDPOINT_URL_S3=ready["url"], AWS_REGION=ready["region"])
        import boto3
        bucket_maker = boto3.client("s3", endpoint_url=ready["url"], region_name=ready["region"],
                                    aws_access_key_id=ready["access_key"], aws_secret_access_key=ready["secret_key"])
        with open(os.path.join(work, "jobs.yaml"), "w") as f:
            f.write(JOBS.format(base="http://127.0.0.1:%d" % api.server_address[1]))

        def command(bucket, output):
            return [mirror, "run", "jobs.yaml", "--output", output, "--state", "s3://%s/state" % bucket,
                    "--push-every", "1s", "--lease-time", "%ds" % LEASE, "--quiet"]

        def run(bucket, output):
            started = time.monotonic()
            done = subprocess.run(command(bucket, output), cwd=work, env=environment,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            return done, time.monotonic() - started

        bucket_maker.create_bucket(Bucket="chaos-unbroken")
        done, seconds = run("chaos-unbroken", "unbroken")
        if done.returncode != 0:
            sys.exit("chaos-state: the unbroken run exited %d: %s" % (done.returncode, done.stderr.strip()))
        want_posts = rows(os.path.join(work, "unbroken"), "t_post")
        want = rows(os.path.join(work, "unbroken"), "t_comment")
        print("chaos-state: seed %d; the unbroken run took %.1f s: %d posts, %d comments"
              % (seed, seconds, len(want_posts), len(want)), flush=True)
        whole = 0
        for kill in range(1, args.kills + 1):
            bucket = "chaos-%d" % kill
            bucket_maker.create_bucket(Bucket=bucket)
            at = chance.uniform(0.5, seconds)
            killed = subprocess.Popen(command(bucket, "%d-a" % kill), cwd=work, env=environment,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                killed.wait(timeout=at)
                ended = "ended by itself"
            except subprocess.TimeoutExpired:
                killed.send_signal(signal.SIGKILL)
                killed.wait()
                ended = "killed at %.2f s" % at
            time.sleep(LEASE + 0.5)  # the killed run's lease lapses
            done, _ = run(bucket, "%d-b" % kill)
            folder = os.path.join(work, "%d-b" % kill)
            got_posts, got = rows(folder, "t_post"), rows(folder, "t_comment")
            exact = done.returncode == 0 and got == want and got_posts == want_posts
            whole += exact
            print("chaos-state: run %2d %s; resumed: exit %d, %d of %d comments, %d of %d posts%s"
                  % (kill, ended, done.returncode, len(got), len(want), len(got_posts), len(want_posts),
                     "" if exact else "  <- differs"), flush=True)
        print("chaos-state: %d of %d resumed runs ended with exactly %d of %d comments"
              % (whole, args.kills, len(want), len(want)))
        sys.exit(0 if whole == args.kills else 1)
    finally:
        s3.terminate()
        s3.wait()
        api.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Serve a folder over HTTP/1.1, delaying every response (Python 3 standard library only).

usage: delay_server.py ROOT [--host 127.0.0.1] [--port 0] [--delay 0.02] [--port-file FILE]

The latency fixture of bench.sh: GET (or HEAD) /PATH answers ROOT/PATH after sleeping
--delay seconds, with Content-Length and keep-alive (HTTP/1.1 default; `Connection: close`
and HTTP/1.0 without `Connection: keep-alive` close after the response). One asyncio
event loop: the sleeps of concurrent requests overlap, so N connections in flight see the
delay once each, not N times in a row. A file is read once and then served from memory
(the files asked for at most: 85 MB for the 1,000-page workload, 200 MB for the 2,000
downloads), so that the server's own work per request stays small beside the delay.
Content-Type follows the extension (.json, .ndjson, .txt, .jpg, .png, .gif, .webp, .pdf;
anything else application/octet-stream); bodies are sent as they are, binary or not.

GET /_stats answers at once (no delay) with JSON counters since the start or the last
/_stats?reset=1: {"requests": requests served or refused, "max_in_flight": the most
requests being delayed or answered at the same time, "connections": connections that
asked for at least one thing, "folders": {"/FOLDER": {"requests": .., "max_in_flight": ..},
...}: the same two counters for the requests under each top-level folder of the target
path ("/" for a file at the top), so that two kinds of traffic sharing the server (pages
and the files they point to) can be told apart}. A request is in flight from the moment
its head has been read until its whole response has been handed to the transport (up to
64 KB of it may still wait in the transport's buffer): the client cannot have the whole
response before then, so the server never counts more in flight than the client has.

--port 0 takes a free port; the port actually bound is written to --port-file (written
whole, then renamed) and printed on stdout. SIGTERM and SIGINT stop the server.
"""
import argparse
import asyncio
import json
import os
import signal
import sys
from urllib.parse import unquote, urlsplit

MAX_HEAD = 16 * 1024
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           431: "Request Header Fields Too Large"}
TYPES = {".json": "application/json", ".ndjson": "application/x-ndjson",
         ".txt": "text/plain; charset=utf-8", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
         ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp",
         ".pdf": "application/pdf"}


def folder_of(target):
    """The top-level folder of a request target's path: /files/1.jpg -> /files."""
    path = urlsplit(target).path
    head, sep, _ = path.lstrip("/").partition("/")
    return "/" + head if sep else "/"


class Stats:
    def __init__(self):
        self.generation = 0
        self.in_flight = 0
        self.folder_in_flight = {}  # folder -> requests in flight under it
        self.reset()

    def reset(self):
        self.generation += 1  # a connection counts once per generation
        self.requests = 0
        self.max_in_flight = self.in_flight  # requests still in flight stay counted
        self.connections = 0
        # folder -> [requests, max in flight]
        self.folders = {f: [0, n] for f, n in self.folder_in_flight.items() if n}

    def begin(self, folder):
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        n = self.folder_in_flight.get(folder, 0) + 1
        self.folder_in_flight[folder] = n
        counters = self.folders.setdefault(folder, [0, 0])
        counters[0] += 1
        counters[1] = max(counters[1], n)

    def end(self, folder):
        self.in_flight -= 1
        self.folder_in_flight[folder] -= 1

    def as_json(self):
        return json.dumps({"requests": self.requests, "max_in_flight": self.max_in_flight,
                           "connections": self.connections,
                           "folders": {f: {"requests": r, "max_in_flight": m}
                                       for f, (r, m) in sorted(self.folders.items())}}).encode()


class Server:
    def __init__(self, root, delay):
        self.root = os.path.realpath(root)
        self.delay = delay
        self.stats = Stats()
        self.files = {}  # request path -> (content type, bytes)

    def lookup(self, target):
        """(content type, bytes) of the file a request target names, or None."""
        key = urlsplit(target).path
        found = self.files.get(key)
        if found is None:
            path = self.resolve(target)
            if path is None:
                return None
            with open(path, "rb") as f:
                body = f.read()
            found = (TYPES.get(os.path.splitext(path)[1], "application/octet-stream"), body)
            self.files[key] = found
        return found

    def resolve(self, target):
        """The file under root that a request target names, or None."""
        path = unquote(urlsplit(target).path)
        if not path.startswith("/") or "\0" in path:
            return None
        full = os.path.realpath(os.path.join(self.root, path.lstrip("/")))
        if full != self.root and not full.startswith(self.root + os.sep):
            return None
        return full if os.path.isfile(full) else None

    @staticmethod
    def response(status, body, content_type, keep_alive, head_only=False):
        head = ("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
                "Connection: %s\r\n\r\n" % (status, REASONS[status], content_type, len(body),
                                            "keep-alive" if keep_alive else "close"))
        return head.encode("latin-1") + (b"" if head_only else body)

    async def handle(self, reader, writer):
        counted = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection between requests
                except asyncio.LimitOverrunError:
                    writer.write(self.response(431, b"header too large\n", "text/plain", False))
                    await writer.drain()
                    return
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                    writer.write(self.response(400, b"bad request line\n", "text/plain", False))
                    await writer.drain()
                    return
                method, target, version = parts
                headers = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                connection = headers.get("connection", "").lower()
                if version == "HTTP/1.0":
                    keep_alive = "keep-alive" in connection
                else:
                    keep_alive = "close" not in connection
                length = headers.get("content-length", "0")
                if not length.isdigit() or "transfer-encoding" in headers:
                    writer.write(self.response(400, b"request bodies are not supported\n",
                                               "text/plain", False))
                    await writer.drain()
                    return
                if int(length):
                    await reader.readexactly(int(length))

                if method == "GET" and urlsplit(target).path == "/_stats":
                    body = self.stats.as_json() + b"\n"
                    if urlsplit(target).query == "reset=1":
                        self.stats.reset()
                    writer.write(self.response(200, body, "application/json", keep_alive))
                    await writer.drain()
                    if not keep_alive:
                        return
                    continue

                if counted != self.stats.generation:
                    self.stats.connections += 1
                    counted = self.stats.generation
                folder = folder_of(target)
                self.stats.begin(folder)
                try:
                    await asyncio.sleep(self.delay)
                    if method not in ("GET", "HEAD"):
                        out = self.response(405, b"method not allowed\n", "text/plain", keep_alive)
                    else:
                        found = self.lookup(target)
                        if found is None:
                            out = self.response(404, b"not found\n", "text/plain", keep_alive,
                                                method == "HEAD")
                        else:
                            out = self.response(200, found[1], found[0], keep_alive, method == "HEAD")
                    writer.write(out)
                    await writer.drain()
                finally:
                    self.stats.end(folder)
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass


async def serve(args):
    server = Server(args.root, args.delay)
    srv = await asyncio.start_server(server.handle, args.host, args.port,
                                     limit=MAX_HEAD, backlog=256)
    port = srv.sockets[0].getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".partial"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    print("delay_server: %s on %s:%d, %.0f ms per response" % (
        server.root, args.host, port, args.delay * 1000), flush=True)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set_result, None)
    async with srv:
        await stop


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="folder to serve")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: a free port (default)")
    ap.add_argument("--delay", type=float, default=0.02, help="seconds before each response")
    ap.add_argument("--port-file", help="write the bound port here")
    args = ap.parse_args()
    if not os.path.isdir(args.root):
        sys.exit("delay_server: no folder %s" % args.root)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()

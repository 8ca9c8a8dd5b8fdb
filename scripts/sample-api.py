#!/usr/bin/env python3
"""The bundled sample API for trying `mirror` offline (Python 3 standard library only).

    python3 scripts/sample-api.py [--host 127.0.0.1] [--port 0] [--port-file FILE] [--verbose]

--port 0 picks a free port; --port-file FILE gets that port written to it (atomically)
once the server is listening. Everything it serves is deterministic fake data:

  GET /v1/events?page=N     page paging. {"data":{"list":[...10 events...],"page":N,
                            "total_pages":5}} for N = 1..5, an empty list after that.
                            The last 2 events of each page are the first 2 of the next
                            (as when new events push a list down), so 50 events walked
                            are 42 unique ones. Event ids are 19-digit strings.
  GET /v1/venues[?cursor=C] cursor paging. {"venues":[...4 venues...],"next_cursor":C2}
                            for 3 pages; the last has "next_cursor": null. Venue ids are
                            bare 19-digit JSON numbers (beyond 2**53).
  GET /v1/news[?page=N]     RFC 8288 paging: a top-level JSON array of 3 stories, with a
                            `Link: <...>; rel="next"` header on pages 1 and 2 (3 pages).
  GET /img/<n>.jpg          a small JPEG (the events' cover images).
  GET /                     a short index of the above.

JSON responses carry an ETag and answer If-None-Match with 304. Unknown paths are a
JSON 404, bad parameters a JSON 400. Request logging is off unless --verbose.
"""
import argparse
import base64
import datetime
import hashlib
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

EVENTS_PER_PAGE = 10
EVENTS_OVERLAP = 2
EVENT_PAGES = 5
EVENT_ID_BASE = 9007199254740993001  # 2**53 + 1, times 1000, plus 1: 19 digits
EVENT_COUNT = (EVENT_PAGES - 1) * (EVENTS_PER_PAGE - EVENTS_OVERLAP) + EVENTS_PER_PAGE
CHANGES = 12
VENUE_PAGES = 3
VENUES_PER_PAGE = 4
VENUE_ID_BASE = 1152921504606846977  # 2**60 + 1: a JSON number no double holds exactly
NEWS_PAGES = 3
NEWS_PER_PAGE = 3

CITIES = ["Zürich", "São Paulo", "Kraków", "東京", "Berlin", "Reykjavík", "Montréal",
          "İstanbul", "Lisboa", "Ciudad de México", "Göteborg", "Αθήνα"]
ADJ = ["Late", "Open", "Grand", "Little", "Summer", "Winter", "Secret", "Quiet"]
NOUN = ["Concert", "Market", "Night", "Festival", "Show", "Session", "Tour", "Fair"]
TAGS = ["music", "jazz", "food", "market", "theatre", "family", "outdoor", "free", "art"]
VENUE_KIND = ["Hall", "Club", "Park", "Arena", "Gallery", "Theatre"]

# a 32x20 JPEG; each /img/<n>.jpg gets a comment segment naming n, so files differ
JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAA0JCgsKCA0LCgsODg0PEyAVExISEyccHhcgLikxMC4pLSwz"
    "Oko+MzZGNywtQFdBRkxOUlNSMj5aYVpQYEpRUk//2wBDAQ4ODhMREyYVFSZPNS01T09PT09PT09PT09P"
    "T09PT09PT09PT09PT09PT09PT09PT09PT09PT09PT09PT09PT0//wAARCAAUACADASIAAhEBAxEB/8QA"
    "FwABAQEBAAAAAAAAAAAAAAAAAAUEBv/EACMQAAECAgsAAAAAAAAAAAAAAAAREwVhBhUWI0JEZIKjweH/"
    "xAAYAQEAAwEAAAAAAAAAAAAAAAAAAwQFBv/EAB8RAAEDBAMBAAAAAAAAAAAAAAIAAQQDBRFRIUFhgf/a"
    "AAwDAQACEQMRAD8AxwuG1i7fNtphVVWcjfZrWcXootmtnZfKdwuEilIIALDNjptN4pYsWkdJiJufu1As"
    "1rOL0wRSG1c1fOOLhRESczriBSnK7+hb7hIqyBAyyz56bT+JKi0gpOQtz92oAAOlWQgACL//2Q==")


def jpeg_for(n):
    comment = ("mirror sample cover %d" % n).encode("ascii")
    segment = b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment
    return JPEG[:2] + segment + JPEG[2:]  # right after SOI


def event(n, base):
    starts = (datetime.datetime(2026, 12, 1, 18, 0, tzinfo=datetime.timezone.utc)
              + datetime.timedelta(hours=7 * n))
    return {
        "id": str(EVENT_ID_BASE + n),
        "title": "%s %s #%d" % (ADJ[n % len(ADJ)], NOUN[(n * 3) % len(NOUN)], n + 1),
        "city": CITIES[(n * 5) % len(CITIES)],
        "starts_at": starts.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "price": 0 if n % 4 == 0 else (5 + n * 37 % 120) + (0.5 if n % 2 else 0),
        "tags": [TAGS[(n + k * 4) % len(TAGS)] for k in range(1 + n % 3)],
        "cover": {"url": "%s/img/%d.jpg" % (base, n + 1)},
    }


def events_page(page, base):
    if page < 1 or page > EVENT_PAGES:
        items = []
    else:
        start = (page - 1) * (EVENTS_PER_PAGE - EVENTS_OVERLAP)
        items = [event(n, base) for n in range(start, start + EVENTS_PER_PAGE)]
    return {"data": {"list": items, "page": page, "total_pages": EVENT_PAGES}}


def cursor_for(page):
    return base64.urlsafe_b64encode(("venues:%d" % page).encode()).decode().rstrip("=")


def page_of_cursor(cursor):
    if not cursor:
        return 1
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, page = text.split(":")
        page = int(page)
    except (ValueError, UnicodeDecodeError):
        return None
    if kind != "venues" or not 1 <= page <= VENUE_PAGES:
        return None
    return page


def venues_body(page):
    """JSON text; venue ids are written as bare 19-digit numbers."""
    items = []
    for k in range(VENUES_PER_PAGE):
        n = (page - 1) * VENUES_PER_PAGE + k
        city = CITIES[(n * 7) % len(CITIES)]
        rest = json.dumps({
            "name": "%s %s" % (city, VENUE_KIND[n % len(VENUE_KIND)]),
            "city": city,
            "capacity": 150 + 75 * n,
            "location": {"lat": round(47.3769 + n * 0.01, 4), "lon": round(8.5417 - n * 0.01, 4)},
        }, ensure_ascii=False)
        items.append('{"id": %d, %s' % (VENUE_ID_BASE + n, rest[1:]))
    nxt = json.dumps(cursor_for(page + 1)) if page < VENUE_PAGES else "null"
    return '{"venues": [%s], "next_cursor": %s}' % (", ".join(items), nxt)


def news_page(page):
    items = []
    for k in range(NEWS_PER_PAGE):
        n = (page - 1) * NEWS_PER_PAGE + k
        published = (datetime.datetime(2026, 11, 20, 9, 0, tzinfo=datetime.timezone.utc)
                     - datetime.timedelta(hours=5 * n))
        items.append({
            "id": "news-%04d" % (n + 1),
            "headline": "%s: %s %s announced" % (CITIES[(n * 3) % len(CITIES)],
                                                 ADJ[n % len(ADJ)], NOUN[n % len(NOUN)]),
            "published_at": published.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "author": {"name": ["Ana Souza", "Jürgen Weiß", "Łucja Nowak", "佐藤 花子"][n % 4]},
        })
    return items


def reviews_page(n, page):
    """Event n has n % 4 reviews, two a page."""
    items = [{
        "id": "review-%d-%d" % (n + 1, k + 1),
        "stars": 1 + (n + k) % 5,
        "text": "%s, %s" % (ADJ[(n + k) % len(ADJ)], NOUN[(n * 2 + k) % len(NOUN)]),
    } for k in range(n % 4)]
    return {"reviews": items[(page - 1) * 2:page * 2] if page >= 1 else []}


def changes_since(since):
    """A change feed: what changed at or after `since` (ISO 8601 UTC), oldest first;
    every third change is a deletion (a tombstone)."""
    items = []
    for k in range(CHANGES):
        at = datetime.datetime(2026, 11, 1, 8, 0, tzinfo=datetime.timezone.utc) + datetime.timedelta(hours=9 * k)
        stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        if since and stamp < since:
            continue
        item = {"id": "change-%02d" % (k + 1), "updated_at": stamp, "deleted": k % 3 == 2}
        if not item["deleted"]:
            item["summary"] = "%s %s updated" % (ADJ[k % len(ADJ)], NOUN[(k * 5) % len(NOUN)])
        items.append(item)
    return {"changes": items}


INDEX = {
    "endpoints": {
        "/v1/events/ID/reviews?page=N": "each event's reviews, two a page (a child endpoint)",
        "/v1/changes?updated_since=T": "a change feed since an ISO 8601 time, tombstones included",
        "/v1/events?page=N": "page paging, %d pages of %d events (2 overlap)" % (EVENT_PAGES, EVENTS_PER_PAGE),
        "/v1/venues?cursor=C": "cursor paging, next_cursor in the body, %d pages" % VENUE_PAGES,
        "/v1/news?page=N": "Link rel=\"next\" header paging, %d pages" % NEWS_PAGES,
        "/img/N.jpg": "cover images",
    }
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes; no 40 ms stalls
    server_version = "mirror-sample-api/1"
    verbose = False

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("sample-api: %s\n" % (fmt % args))

    def base_url(self):
        host, port = self.server.server_address[:2]
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if ":" in host:
            host = "[%s]" % host
        return "http://%s:%d" % (host, port)

    def send(self, status, body, ctype="application/json; charset=utf-8", headers=(), etag=True):
        if isinstance(body, str):
            body = body.encode("utf-8")
        tag = '"%s"' % hashlib.sha256(body).hexdigest()[:20] if etag else None
        if tag and status == 200 and self.headers.get("If-None-Match") == tag:
            self.send_response(304)
            self.send_header("ETag", tag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if tag:
            self.send_header("ETag", tag)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status, obj, headers=()):
        self.send(status, json.dumps(obj, ensure_ascii=False), headers=headers,
                  etag=status == 200)

    def error(self, status, message):
        self.send_json(status, {"error": {"status": status, "message": message}})

    def int_param(self, query, name, default):
        values = query.get(name)
        if not values:
            return default
        try:
            return int(values[-1])
        except ValueError:
            self.error(400, "%s must be an integer" % name)
            return None

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        path = url.path.rstrip("/") or "/"
        if path == "/":
            self.send_json(200, INDEX)
        elif path == "/v1/events":
            page = self.int_param(query, "page", 1)
            if page is not None:
                self.send_json(200, events_page(page, self.base_url()))
        elif path.startswith("/v1/events/") and path.endswith("/reviews"):
            try:
                n = int(path[len("/v1/events/"):-len("/reviews")]) - EVENT_ID_BASE
            except ValueError:
                n = -1
            page = self.int_param(query, "page", 1)
            if page is None:
                return
            if not 0 <= n < EVENT_COUNT:
                self.error(404, "no such event")
            else:
                self.send_json(200, reviews_page(n, page))
        elif path == "/v1/changes":
            self.send_json(200, changes_since((query.get("updated_since") or [""])[-1]))
        elif path == "/v1/venues":
            cursor = (query.get("cursor") or [""])[-1]
            page = page_of_cursor(cursor)
            if page is None:
                self.error(400, "unknown cursor")
            else:
                self.send(200, venues_body(page))
        elif path == "/v1/news":
            page = self.int_param(query, "page", 1)
            if page is None:
                return
            if not 1 <= page <= NEWS_PAGES:
                self.send_json(200, [])
                return
            links = []
            if page < NEWS_PAGES:
                links.append('<%s/v1/news?page=%d>; rel="next"' % (self.base_url(), page + 1))
            if page > 1:
                links.append('<%s/v1/news?page=%d>; rel="prev"' % (self.base_url(), page - 1))
            links.append('<%s/v1/news?page=1>; rel="first"' % self.base_url())
            self.send_json(200, news_page(page), headers=[("Link", ", ".join(links))])
        elif path.startswith("/img/") and path.endswith(".jpg"):
            try:
                n = int(path[len("/img/"):-len(".jpg")])
            except ValueError:
                n = -1
            if n < 0:
                self.error(404, "no such image")
            else:
                self.send(200, jpeg_for(n), ctype="image/jpeg")
        else:
            self.error(404, "no such endpoint; try /")


def main():
    ap = argparse.ArgumentParser(description="Serve mirror's sample API (fake, deterministic data).")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8080, help="port; 0 picks a free one (default 8080)")
    ap.add_argument("--port-file", help="write the port to this file once listening")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = ap.parse_args()

    Handler.verbose = args.verbose
    ThreadingHTTPServer.daemon_threads = True
    if ":" in args.host:
        import socket
        ThreadingHTTPServer.address_family = socket.AF_INET6
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    port = server.server_address[1]
    if args.port_file:
        tmp = "%s.tmp%d" % (args.port_file, os.getpid())
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.verbose or not args.port_file:
        sys.stderr.write("sample-api: listening on http://%s:%d/\n" % (args.host, port))
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()

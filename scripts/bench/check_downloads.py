#!/usr/bin/env python3
"""Check the files one `mirror run` of bench.sh's downloads job got (Python 3 standard
library and coreutils' sha256sum).

usage: check_downloads.py OUTPUT_DIR DATABASE SOURCE.sha256 --count N --base URL
           [--table NAME] [--content-type TYPE]

SOURCE.sha256 is gen_files.py's list ("<hex>  <n>.jpg"): the SHA-256 of every file the
server serves. Checks, and exits 1 naming every problem (the first few of each kind):
  - `_mirror_files` of DATABASE holds exactly N rows, one per URL BASE/<n>.jpg for
    n = 1..N, every one with status 'ok', HTTP status 200 and (with --content-type) that
    content type;
  - `sha256sum` of every file on disk (`path`, relative to OUTPUT_DIR) equals the row's
    `sha256` column and the served source's SHA-256, and its size equals `size`;
  - OUTPUT_DIR/files holds exactly those N files and nothing else (no leftover
    `files/.partial/` file);
  - with --table, the table holds N records, and `_mirror_runs` says N files downloaded
    and 0 failed.
Prints one line saying what it checked when all is well.
"""
import argparse
import os
import re
import sqlite3
import subprocess
import sys

SHOW = 5  # problems of one kind shown


def sha256sum(folder, paths):
    """{path: hex} for paths relative to folder, computed by sha256sum."""
    out = {}
    for i in range(0, len(paths), 500):
        chunk = paths[i:i + 500]
        res = subprocess.run(["sha256sum", "--"] + chunk, cwd=folder, check=True,
                             stdout=subprocess.PIPE, text=True)
        for line in res.stdout.splitlines():
            digest, _, name = line.partition("  ")
            out[name.lstrip("*")] = digest
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("database")
    ap.add_argument("sums")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--base", required=True, help="URL of the folder holding <n>.jpg")
    ap.add_argument("--table")
    ap.add_argument("--content-type")
    args = ap.parse_args()

    problems = {}

    def problem(kind, text):
        problems.setdefault(kind, []).append(text)

    source = {}
    with open(args.sums) as f:
        for line in f:
            digest, _, name = line.rstrip("\n").partition("  ")
            source[name] = digest
    url_re = re.compile(re.escape(args.base.rstrip("/")) + r"/([1-9][0-9]*)\.jpg")

    db = sqlite3.connect("file:%s?mode=ro" % args.database, uri=True)
    rows = db.execute("select url, status, path, size, sha256, content_type, http_status, error "
                      "from _mirror_files").fetchall()
    if len(rows) != args.count:
        problem("rows", "_mirror_files holds %d rows, expected %d" % (len(rows), args.count))
    seen = set()
    want = {}  # path -> (url, size, sha256 column, source sha256)
    for url, status, path, size, digest, ctype, http, error in rows:
        m = url_re.fullmatch(url)
        if not m or int(m.group(1)) > args.count:
            problem("url", "unexpected URL %s" % url)
            continue
        n = int(m.group(1))
        if n in seen:
            problem("url", "URL %s twice" % url)
        seen.add(n)
        if status != "ok":
            problem("status", "%s: status %r (HTTP %s, error %r)" % (url, status, http, error))
            continue
        if http != 200:
            problem("http", "%s: HTTP status %r" % (url, http))
        if args.content_type and ctype != args.content_type:
            problem("type", "%s: content_type %r, expected %r" % (url, ctype, args.content_type))
        if not path:
            problem("path", "%s: no path" % url)
            continue
        want[path] = (url, size, digest, source.get("%d.jpg" % n))
    missing = args.count - len(seen)
    if missing > 0:
        problem("url", "%d of the %d URLs have no row" % (missing, args.count))

    on_disk = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(args.output, "files")):
        for name in filenames:
            full = os.path.join(dirpath, name)
            on_disk[os.path.relpath(full, args.output)] = os.path.getsize(full)
    for path in sorted(set(on_disk) - set(want)):
        problem("extra", "file %s on disk that no ok row names" % path)
    present = sorted(p for p in want if p in on_disk)
    for path in sorted(set(want) - set(on_disk)):
        problem("disk", "%s (%s) is not on disk" % (path, want[path][0]))
    sums = sha256sum(args.output, present)
    for path in present:
        url, size, column, src = want[path]
        if on_disk[path] != size:
            problem("size", "%s: %d bytes on disk, size column %r" % (url, on_disk[path], size))
        got = sums.get(path)
        if got != column:
            problem("sha", "%s: sha256sum %s, sha256 column %s" % (url, got, column))
        if got != src:
            problem("sha", "%s: sha256sum %s, served file's %s" % (url, got, src))

    if args.table:
        n = db.execute('select count(*) from "%s"' % args.table).fetchone()[0]
        if n != args.count:
            problem("table", "%s holds %d records, expected %d" % (args.table, n, args.count))
        run = db.execute("select files_downloaded, files_failed from _mirror_runs "
                         "order by run_id desc limit 1").fetchone()
        if run != (args.count, 0):
            problem("run", "_mirror_runs: files_downloaded, files_failed = %r, expected (%d, 0)"
                    % (run, args.count))

    if problems:
        for kind, texts in problems.items():
            for t in texts[:SHOW]:
                print("check_downloads: %s" % t, file=sys.stderr)
            if len(texts) > SHOW:
                print("check_downloads: ... and %d more like it" % (len(texts) - SHOW), file=sys.stderr)
        sys.exit(1)
    print("%d rows in _mirror_files, all 'ok'%s; %d files on disk, nothing else; sha256sum of each"
          " = its sha256 column = the served file's" % (
              len(rows), (", " + args.content_type) if args.content_type else "", len(on_disk)))


if __name__ == "__main__":
    main()

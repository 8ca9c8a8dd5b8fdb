#!/usr/bin/env python3
"""Generate the downloads workload of bench.sh (Python 3 standard library only).

usage: gen_files.py files OUT --count N
       gen_files.py pages OUT --count N --base URL [--curl-config FILE --curl-out DIR]

`files` writes OUT/files/<n>.jpg for n = 1..N: deterministic pseudo-random bytes (a JPEG
start-of-image marker, then noise), 90,000 to 110,000 bytes each (about 100 KB, 200 MB for
2,000 files), and OUT/files.sha256, the SHA-256 of every file in `sha256sum` format
("<hex>  <n>.jpg", one a line, n ascending). Same arguments, same bytes. Prints
"files=N bytes=B".

`pages` writes OUT/<p>.json for p = 1..ceil(N / 100), 100 records a page (the last page
holds the rest), shaped

    {"data":{"list":[{"id":1,"file":{"url":"BASE/1.jpg"}}, ...],"page":P,"total_pages":T}}

so that record n names file n once. The URLs carry the server's real address, so pages
are written once it is known. With --curl-config, also writes a curl -K config fetching
every BASE/<n>.jpg to DIR/<n>.jpg. Prints "pages=T".
"""
import argparse
import hashlib
import os
import random

PER_PAGE = 100
MIN_SIZE = 90_000
MAX_SIZE = 110_000
JPEG_SOI = b"\xff\xd8\xff\xe0"


def file_bytes(n):
    """The content of file n -- a pure function of n."""
    rnd = random.Random(n * 104729 + 7)
    size = rnd.randint(MIN_SIZE, MAX_SIZE)
    return JPEG_SOI + rnd.randbytes(size - len(JPEG_SOI))


def gen_files(out, count):
    folder = os.path.join(out, "files")
    os.makedirs(folder, exist_ok=True)
    total = 0
    with open(os.path.join(out, "files.sha256"), "w") as sums:
        for n in range(1, count + 1):
            data = file_bytes(n)
            total += len(data)
            with open(os.path.join(folder, "%d.jpg" % n), "wb") as f:
                f.write(data)
            sums.write("%s  %d.jpg\n" % (hashlib.sha256(data).hexdigest(), n))
    print("files=%d bytes=%d" % (count, total))


def gen_pages(out, count, base, curl_config, curl_out):
    os.makedirs(out, exist_ok=True)
    base = base.rstrip("/")
    pages = (count + PER_PAGE - 1) // PER_PAGE
    for p in range(1, pages + 1):
        first = (p - 1) * PER_PAGE + 1
        items = ",".join('{"id":%d,"file":{"url":"%s/%d.jpg"}}' % (n, base, n)
                         for n in range(first, min(first + PER_PAGE, count + 1)))
        with open(os.path.join(out, "%d.json" % p), "w") as f:
            f.write('{"data":{"list":[%s],"page":%d,"total_pages":%d}}' % (items, p, pages))
    if curl_config:
        with open(curl_config, "w") as f:
            for n in range(1, count + 1):
                f.write('url = "%s/%d.jpg"\noutput = "%s/%d.jpg"\n' % (base, n, curl_out, n))
    print("pages=%d" % pages)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("files", "pages"))
    ap.add_argument("out", help="output folder (created)")
    ap.add_argument("--count", type=int, required=True, help="number of files")
    ap.add_argument("--base", help="pages: URL of the folder that holds the files")
    ap.add_argument("--curl-config", help="pages: also write a curl -K config here")
    ap.add_argument("--curl-out", help="pages: the folder that curl config writes to")
    args = ap.parse_args()
    if args.count < 1:
        ap.error("--count must be at least 1")
    if args.what == "files":
        gen_files(args.out, args.count)
    else:
        if not args.base:
            ap.error("pages needs --base")
        if bool(args.curl_config) != bool(args.curl_out):
            ap.error("--curl-config and --curl-out go together")
        gen_pages(args.out, args.count, args.base, args.curl_config, args.curl_out)


if __name__ == "__main__":
    main()

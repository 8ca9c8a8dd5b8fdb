#!/usr/bin/env python3
"""Generate the same paged records as JSON, JSON Lines, CSV and XML (Python 3 standard
library only), for scripts/bench/bench-formats.sh.

usage: gen_formats.py --pages N OUT

Writes OUT/P.json ({"data":{"list":[...]}}), OUT/P.ndjson (a record a line), OUT/P.csv (a
header row, then a row a record, RFC 4180 quoting) and OUT/P.xml
(<feed><entry>...</entry>...</feed>) for P = 1..N, each holding the same 100 flat records
of six fields: id (19 digits), title, city, date, price and a 583-character text with
commas, quotes and non-ASCII letters, so every format quotes or escapes. Ids are unique
over all pages: N * 100 records. The output is byte-for-byte deterministic.
"""
import argparse
import csv
import io
import json
import os
import random
from xml.sax.saxutils import escape

PER_PAGE = 100
ID_BASE = 9007199254740993000
CITIES = ["Zürich", "São Paulo", "Kraków", "東京", "Berlin", "New York", "Montréal", "Oslo"]
WORDS = ("lorem ipsum dolor sit amet, consectetur \"adipiscing\" elit sed do eiusmod tempor "
         "incididunt ut labore et dolore <magna> aliqua & café naïve façade crème brûlée").split()
FIELDS = ["id", "title", "city", "date", "price", "body"]


def record(n):
    rnd = random.Random(n * 7919 + 17)
    return {
        "id": str(ID_BASE + n),
        "title": "Event #%d" % n,
        "city": rnd.choice(CITIES),
        "date": "2026-%02d-%02dT%02d:00:00Z" % (1 + rnd.randrange(12), 1 + rnd.randrange(28), rnd.randrange(24)),
        "price": str(rnd.randrange(100000)),
        "body": " ".join(rnd.choices(WORDS, k=130))[:583],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("out")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for page in range(1, args.pages + 1):
        records = [record((page - 1) * PER_PAGE + i) for i in range(PER_PAGE)]
        def write(suffix, text):
            with open(os.path.join(args.out, "%d.%s" % (page, suffix)), "w", encoding="utf-8", newline="") as f:
                f.write(text)
        write("json", json.dumps({"data": {"list": records}}, ensure_ascii=False))
        write("ndjson", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        rows = io.StringIO()
        writer = csv.writer(rows, lineterminator="\r\n")
        writer.writerow(FIELDS)
        writer.writerows([r[f] for f in FIELDS] for r in records)
        write("csv", rows.getvalue())
        entries = "".join("<entry>" + "".join("<%s>%s</%s>" % (f, escape(r[f]), f) for f in FIELDS) + "</entry>\n"
                          for r in records)
        write("xml", '<?xml version="1.0" encoding="UTF-8"?>\n<feed>\n' + entries + "</feed>\n")


if __name__ == "__main__":
    main()

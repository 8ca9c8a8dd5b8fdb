#!/usr/bin/env python3
"""Generate the fixed `mirror` benchmark workload (Python 3 standard library only).

Writes PAGES page files OUT/pages/<P>.json (P = 1..PAGES), each shaped

    {"data":{"list":[...100 records...],"page":P,"total_pages":PAGES}}

and about 85 KB big. On pages 2..PAGES the first 5 records repeat the last 5 of the
previous page, so walking all pages yields PAGES*100 records holding
100 + (PAGES-1)*95 unique ids (95,005 for 1,000 pages).

Also writes OUT/expected.ndjson: one line per unique record, in walk order of each
record's last occurrence (what `mirror export` should return), for checking.

The output is byte-for-byte deterministic: same arguments, same files.
"""
import argparse
import json
import os
import random

PER_PAGE = 100
OVERLAP = 5
ID_BASE = 9007199254740993000  # 2**53 + 1, times 1000: 19 digits, not exact as a double

CITIES = [
    "Zürich", "São Paulo", "Kraków", "東京", "Berlin", "New York", "Reykjavík",
    "Montréal", "İstanbul", "Москва", "Paris", "Lisboa", "Málaga", "서울", "Oslo",
    "Chicago", "Nairobi", "Ciudad de México", "Göteborg", "Αθήνα",
]
TAGS = [
    "music", "jazz", "rock", "food", "market", "theatre", "family", "outdoor",
    "free", "art", "cinema", "sport", "night", "talk", "workshop", "festival",
]
WORDS = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud "
    "exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure "
    "in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint "
    "occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim est "
    "café naïve façade crème brûlée smörgåsbord"
).split()
ADJ = ["Late", "Open", "Grand", "Little", "Summer", "Winter", "Secret", "Big", "Quiet", "Wild"]
NOUN = ["Concert", "Market", "Night", "Festival", "Show", "Session", "Tour", "Fair", "Jam", "Talk"]


def unique_count(pages):
    return PER_PAGE + (pages - 1) * (PER_PAGE - OVERLAP) if pages > 0 else 0


def make_record(n):
    """Record number n (0-based, unique) -- a pure function of n."""
    rnd = random.Random(n * 7919 + 17)
    rid = str(ID_BASE + n)
    body = " ".join(rnd.choices(WORDS, k=130))[:583].rstrip() + "."
    day = 1 + rnd.randrange(28)
    month = 1 + rnd.randrange(12)
    hour = rnd.randrange(24)
    minute = rnd.choice((0, 15, 30, 45))
    title = "%s %s #%d" % (rnd.choice(ADJ), rnd.choice(NOUN), n)
    if n % 17 == 0:
        title += ' "live"'  # something to escape
    return {
        "id": rid,
        "title": title,
        "city": rnd.choice(CITIES),
        "date": "2026-%02d-%02dT%02d:%02d:00Z" % (month, day, hour, minute),
        "price": round(rnd.uniform(0, 250), 2) if n % 10 else 0,
        "tags": rnd.sample(TAGS, 1 + rnd.randrange(4)),
        "cover": {
            "url": "https://img.example.com/covers/%s.jpg" % rid,
            "width": 1200,
            "height": 800,
        },
        "body": body,
    }


def page_range(p):
    """Record numbers listed on page p (1-based)."""
    if p == 1:
        start = 0
    else:
        start = PER_PAGE + (p - 2) * (PER_PAGE - OVERLAP) - OVERLAP
    return range(start, start + PER_PAGE)


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="output folder (created)")
    ap.add_argument("--pages", type=int, default=1000)
    args = ap.parse_args()

    pages_dir = os.path.join(args.out, "pages")
    os.makedirs(pages_dir, exist_ok=True)
    total = unique_count(args.pages)
    cache = {}
    sizes = []
    # expected export: unique records in walk order of their last occurrence, which
    # is the order they are first generated in (record numbers only ever increase)
    expected = open(os.path.join(args.out, "expected.ndjson"), "w", encoding="utf-8")
    for p in range(1, args.pages + 1):
        nums = list(page_range(p))
        items = []
        for n in nums:
            s = cache.get(n)
            if s is None:
                s = dumps(make_record(n))
                cache[n] = s
                expected.write(s)
                expected.write("\n")
            items.append(s)
        text = '{"data":{"list":[%s],"page":%d,"total_pages":%d}}' % (
            ",".join(items), p, args.pages)
        data = text.encode("utf-8")
        sizes.append(len(data))
        with open(os.path.join(pages_dir, "%d.json" % p), "wb") as f:
            f.write(data)
        # drop records that can no longer repeat
        for n in nums[: PER_PAGE - OVERLAP]:
            cache.pop(n, None)

    expected.close()

    print("pages=%d records_walked=%d unique=%d bytes=%d avg_page_bytes=%d"
          % (args.pages, args.pages * PER_PAGE, total, sum(sizes),
             sum(sizes) // max(1, len(sizes))))


if __name__ == "__main__":
    main()

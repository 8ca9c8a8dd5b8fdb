#!/usr/bin/env python3
"""Compare an NDJSON export with the workload's expected.ndjson.

usage: check_export.py EXPECTED.ndjson EXPORT.ndjson

Records are compared by their "id" as parsed JSON, with numbers kept as written
(digit for digit). Prints one line; exits 1 when a record is missing, extra, duplicated
or different. Whether the export is in walk order is reported but not required.
"""
import json
import sys


def load(path):
    recs = {}
    order = []
    dups = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line, parse_int=str, parse_float=str)
            except ValueError as e:
                sys.exit("%s:%d: not JSON: %s" % (path, lineno, e))
            rid = obj.get("id") if isinstance(obj, dict) else None
            if rid is None:
                sys.exit("%s:%d: record without id" % (path, lineno))
            if rid in recs:
                dups += 1
            recs[rid] = obj
            order.append(rid)
    return recs, order, dups


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    exp, exp_order, _ = load(sys.argv[1])
    got, got_order, dups = load(sys.argv[2])
    missing = [k for k in exp if k not in got]
    extra = [k for k in got if k not in exp]
    differ = [k for k in exp if k in got and got[k] != exp[k]]
    walk_order = got_order == exp_order
    ok = not missing and not extra and not differ and not dups
    print("export check: %d lines, %d unique ids; missing %d, extra %d, different %d, "
          "duplicated %d; walk order: %s -> %s"
          % (len(got_order), len(got), len(missing), len(extra), len(differ), dups,
             "yes" if walk_order else "no", "OK" if ok else "MISMATCH"))
    for label, ids in (("missing", missing), ("extra", extra), ("different", differ)):
        for k in ids[:3]:
            print("  %s: id %s" % (label, k))
            if label == "different":
                print("    expected: %s" % json.dumps(exp[k], ensure_ascii=False)[:300])
                print("    exported: %s" % json.dumps(got[k], ensure_ascii=False)[:300])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

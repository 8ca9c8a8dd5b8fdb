#!/usr/bin/env python3
"""Print bench.sh's table from its results file.

usage: report.py RESULTS.tsv WALKED UNIQUE BYTES

RESULTS.tsv lines: NAME <tab> RUN <tab> WALL_S <tab> CPU_S <tab> PEAK_RSS_KB
(warm-up runs are not in it). Names: mirror-run, ref-fetch, ref-load, mirror-export,
ref-export. The reference run i is ref-fetch i followed by ref-load i: wall and CPU
add up, peak RSS is the larger one. Each row shows the run with the median wall time.
"""
import sys
from collections import defaultdict


def median_run(runs):
    s = sorted(runs, key=lambda r: r[0])
    return s[(len(s) - 1) // 2], s[0][0]


def main():
    path, walked, unique, nbytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    data = defaultdict(dict)
    with open(path) as f:
        for line in f:
            name, run, wall, cpu, rss = line.split("\t")
            data[name][int(run)] = (float(wall), float(cpu), int(rss))

    ref = {}
    for i in data.get("ref-fetch", {}):
        if i in data.get("ref-load", {}):
            a, b = data["ref-fetch"][i], data["ref-load"][i]
            ref[i] = (a[0] + b[0], a[1] + b[1], max(a[2], b[2]))
    data["ref-run"] = ref

    rows = {}
    for name, runs in data.items():
        if runs:
            rows[name] = median_run(list(runs.values()))

    mb = nbytes / 1e6
    hdr = "%-36s %8s %8s %8s %9s %12s %8s" % (
        "", "wall s", "best s", "CPU s", "RSS MB", "records/s", "MB/s")
    print(hdr)
    print("-" * len(hdr))

    def line(label, name, records, with_mb=False):
        if name not in rows:
            print("%-36s %8s" % (label, "n/a"))
            return
        (wall, cpu, rss), best = rows[name]
        print("%-36s %8.2f %8.2f %8.2f %9.1f %12s %8s" % (
            label, wall, best, cpu, rss / 1024.0,
            "{:,.0f}".format(records / wall) if records and wall > 0 else "-",
            "%.1f" % (mb / wall) if with_mb and wall > 0 else ""))

    def ratio(label, a, b):
        if a not in rows or b not in rows:
            print("%-36s %8s" % (label, "n/a"))
            return
        (wa, ca, ra), _ = rows[a]
        (wb, cb, rb), _ = rows[b]
        print("%-36s %7.2fx %8s %7.2fx %8.2fx %11.2fx" % (
            label, wa / wb, "", ca / cb if cb else 0, ra / rb if rb else 0, wb / wa))

    print("run: walk %d pages, %d records walked, %d unique" % (walked // 100, walked, unique))
    line("  mirror run", "mirror-run", walked, True)
    line("  reference: curl + sqlite3", "ref-run", walked, True)
    line("    curl --parallel-max 8 (fetch)", "ref-fetch", walked, True)
    line("    sqlite3 json_each (load, 1 tx)", "ref-load", walked, True)
    ratio("  ratio mirror / reference", "mirror-run", "ref-run")
    print()
    print("export: all %d stored records as NDJSON" % unique)
    line("  mirror export", "mirror-export", unique)
    line("  sqlite3 select record (walk order)", "ref-export", unique)
    ratio("  ratio mirror / sqlite3", "mirror-export", "ref-export")
    print()
    print("(wall: median of the measured runs; best: fastest; CPU: user+sys of that median run;")
    print(" RSS: peak resident set; records/s: records / median wall. Ratios are mirror /")
    print(" reference for every column: above 1x mirror takes longer, uses more CPU or memory;")
    print(" in the records/s column below 1x means mirror is slower)")


if __name__ == "__main__":
    main()

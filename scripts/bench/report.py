#!/usr/bin/env python3
"""Print bench.sh's table from its results file.

usage: report.py RESULTS.tsv WALKED UNIQUE BYTES [--snapshot-sizes SNAP,BACKUP,VACUUM,SOURCE]
           [--latency STATS.tsv --latency-pages N --delay-ms MS --concurrency C]
           [--downloads FILES --download-bytes B --download-pages P --download-concurrency D
            --download-page-concurrency C --download-min-ratio R --download-max-rss-mb M
            [--download-latency STATS.tsv --delay-ms MS]]

RESULTS.tsv lines: NAME <tab> RUN <tab> WALL_S <tab> CPU_S <tab> PEAK_RSS_KB
(warm-up runs are not in it; without mirror-run, the walk's sections are left out). Names: mirror-run, ref-fetch, ref-load, mirror-export,
ref-export, mirror-snapshot, ref-backup, ref-backup-sync (.backup, then the copy flushed and
hashed: the floor of a snapshot, which is on disk with its SHA-256 in the manifest when it
returns), ref-vacuum, mirror-changes, and with --latency latency-cC, latency-c1 and latency-ref (curl
--parallel-max C fetching the same pages from the delay server). The reference run i is
ref-fetch i followed by ref-load i: wall and CPU add up, peak RSS is the larger one.
Each row shows the run with the median wall time (the lower one of an even count).
The walk, snapshot and change feed sections end with their targets, met or MISSED: the walk
at most WALK_WALL_MAX x the reference's wall time and WALK_CPU_MAX x its CPU time, and with
mirror-run-1k (the walk of the first 1,000 pages, measured when there are more) a peak RSS at
most RSS_GROWTH_MAX x that one's; the snapshot at most SNAPSHOT_MAX x .backup's wall time, the
whole feed at most CHANGES_MAX x the export's.

With --latency, a latency section follows: mirror run against a server that delays
every response by MS milliseconds, with `concurrency: C` and `concurrency: 1`, the
target for C (1.3 x N x MS / C) and the floor for 1 (N x MS). STATS.tsv lines:
NAME <tab> RUN <tab> REQUESTS <tab> MAX_IN_FLIGHT <tab> CONNECTIONS, as the server
counted them during that run.

With --downloads, a downloads section follows: dl-mirror (mirror run of a job whose
P pages name FILES files, B bytes in all, `download_concurrency: D`) against dl-curl
(curl --parallel-max D fetching the same files to disk), and dl-floor when measured
(scripts/bench/download-floor: SwiftNIO and SHA-256 alone), with files/s = FILES / wall,
the targets (mirror's files/s >= R x curl's; peak RSS <= M MB in every measured run).
With --download-latency, the same job against the delay server (dl-latency) and curl
fetching the files from it (dl-latency-ref), the target 1.3 x FILES x MS / D, and the
server's counters: STATS.tsv lines NAME <tab> RUN <tab> REQUESTS <tab> MAX_IN_FLIGHT
<tab> CONNECTIONS <tab> FILE_REQUESTS <tab> FILE_MAX_IN_FLIGHT <tab> PAGE_REQUESTS <tab>
PAGE_MAX_IN_FLIGHT.
"""
import argparse
from collections import defaultdict

TARGET_FACTOR = 1.3
# The snapshot's wall time against sqlite3's online backup of the same database, and the
# whole change feed's (export --changes-since 0) against a plain export of the same table.
WALK_WALL_MAX = 1.0
WALK_CPU_MAX = 1.25
RSS_GROWTH_MAX = 1.1
SNAPSHOT_MAX = 1.5
CHANGES_MAX = 2.0


def median_run(runs):
    """runs: {run: (wall, cpu, rss)} -> ((wall, cpu, rss) of the median run, best wall, median run)"""
    s = sorted(runs.items(), key=lambda r: r[1][0])
    run, values = s[(len(s) - 1) // 2]
    return values, s[0][1][0], run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("walked", type=int)
    ap.add_argument("unique", type=int)
    ap.add_argument("bytes", type=int)
    ap.add_argument("--snapshot-sizes", metavar="SNAP,BACKUP,VACUUM,SOURCE",
                    help="bytes of the snapshot's database, the .backup copy, the VACUUM INTO copy and the source")
    ap.add_argument("--latency", metavar="STATS.tsv")
    ap.add_argument("--latency-pages", type=int)
    ap.add_argument("--delay-ms", type=float)
    ap.add_argument("--concurrency", type=int)
    ap.add_argument("--downloads", type=int, metavar="FILES")
    ap.add_argument("--download-bytes", type=int)
    ap.add_argument("--download-pages", type=int)
    ap.add_argument("--download-concurrency", type=int)
    ap.add_argument("--download-page-concurrency", type=int)
    ap.add_argument("--download-min-ratio", type=float)
    ap.add_argument("--download-max-rss-mb", type=float)
    ap.add_argument("--download-latency", metavar="STATS.tsv")
    args = ap.parse_args()
    if args.latency and None in (args.latency_pages, args.delay_ms, args.concurrency):
        ap.error("--latency needs --latency-pages, --delay-ms and --concurrency")
    if args.downloads and None in (args.download_bytes, args.download_pages,
                                   args.download_concurrency, args.download_page_concurrency,
                                   args.download_min_ratio, args.download_max_rss_mb):
        ap.error("--downloads needs --download-bytes, --download-pages, --download-concurrency,"
                 " --download-page-concurrency, --download-min-ratio and --download-max-rss-mb")
    if args.download_latency and (not args.downloads or args.delay_ms is None):
        ap.error("--download-latency needs --downloads and --delay-ms")
    walked, unique, nbytes = args.walked, args.unique, args.bytes
    data = defaultdict(dict)
    with open(args.results) as f:
        for line in f:
            name, run, wall, cpu, rss = line.rstrip("\n").split("\t")
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
            rows[name] = median_run(runs)

    mb = nbytes / 1e6
    hdr = "%-36s %8s %8s %8s %9s %12s %8s" % (
        "", "wall s", "best s", "CPU s", "RSS MB", "records/s", "MB/s")
    print(hdr)
    print("-" * len(hdr))

    def line(label, name, records, with_mb=False, megabytes=None):
        if name not in rows:
            print("%-36s %8s" % (label, "n/a"))
            return
        (wall, cpu, rss), best, _ = rows[name]
        size = megabytes if megabytes is not None else mb
        print("%-36s %8.2f %8.2f %8.2f %9.1f %12s %8s" % (
            label, wall, best, cpu, rss / 1024.0,
            "{:,.0f}".format(records / wall) if records and wall > 0 else "-",
            "%.1f" % (size / wall) if with_mb and wall > 0 else ""))

    def median(name, figure):
        """The median (the lower middle of an even count) of one figure over `name`'s runs."""
        values = sorted(run[figure] for run in data[name].values())
        return values[(len(values) - 1) // 2]

    def target(label, a, b, most, figure=0):
        """The median wall (figure 0), CPU (1) or peak RSS (2) of `a`'s runs against `most` x
        that of `b`'s: met or MISSED."""
        if a not in rows or b not in rows:
            return
        wa, wb = median(a, figure), median(b, figure)
        got = wa / wb if wb else float("inf")
        print("  target: %s <= %gx -> %.2fx, %s" % (label, most, got, "met" if got <= most else "MISSED"))

    def ratio(label, a, b):
        if a not in rows or b not in rows:
            print("%-36s %8s" % (label, "n/a"))
            return
        (wa, ca, ra), _, _ = rows[a]
        (wb, cb, rb), _, _ = rows[b]
        def x(num, den, width):  # "1.23x", or "-" when the reference's figure is 0
            return ("%.2fx" % (num / den)).rjust(width) if den else "-".rjust(width)
        print("%-36s %s %8s %s %s %s" % (
            label, x(wa, wb, 8), "", x(ca, cb, 8), x(ra, rb, 9), x(wb, wa, 12)))

    if "mirror-run" in rows:
        print("run: walk %d pages, %d records walked, %d unique" % (walked // 100, walked, unique))
        line("  mirror run", "mirror-run", walked, True)
        line("  reference: curl + sqlite3", "ref-run", walked, True)
        line("    curl --parallel-max 8 (fetch)", "ref-fetch", walked, True)
        line("    sqlite3 json_each (load, 1 tx)", "ref-load", walked, True)
        ratio("  ratio mirror / reference", "mirror-run", "ref-run")
        if "mirror-run-1k" in rows:
            line("  mirror run, its first 1,000 pages", "mirror-run-1k", 100000, True)
        target("mirror run / reference (wall)", "mirror-run", "ref-run", WALK_WALL_MAX)
        target("mirror run / reference (CPU)", "mirror-run", "ref-run", WALK_CPU_MAX, figure=1)
        target("peak RSS, %d pages / 1,000 pages" % (walked // 100), "mirror-run", "mirror-run-1k", RSS_GROWTH_MAX,
               figure=2)
        print()
        print("export: all %d stored records as NDJSON" % unique)
        line("  mirror export", "mirror-export", unique)
        line("  sqlite3 select record (walk order)", "ref-export", unique)
        ratio("  ratio mirror / sqlite3", "mirror-export", "ref-export")
    else:
        print("run, export, snapshot: not measured (BENCH_WALK=0)")
    if "mirror-snapshot" in rows:
        print()
        print("snapshot: a consistent copy of the %d-record table's database" % unique)
        line("  mirror snapshot", "mirror-snapshot", unique)
        line("  sqlite3 .backup", "ref-backup", unique)
        line("  floor: .backup, sync, SHA-256", "ref-backup-sync", unique)
        line("  sqlite3 VACUUM INTO", "ref-vacuum", unique)
        ratio("  ratio mirror / .backup", "mirror-snapshot", "ref-backup")
        ratio("  ratio mirror / VACUUM INTO", "mirror-snapshot", "ref-vacuum")
        ratio("  ratio mirror / floor", "mirror-snapshot", "ref-backup-sync")
        target("mirror snapshot / sqlite3 .backup (wall)", "mirror-snapshot", "ref-backup", SNAPSHOT_MAX)
        if args.snapshot_sizes:
            snap, backup, vacuum, source = (int(x) for x in args.snapshot_sizes.split(","))
            print("  file size: snapshot %.1f MB, .backup %.1f MB, VACUUM INTO %.1f MB (the database: %.1f MB)" % (
                snap / 1e6, backup / 1e6, vacuum / 1e6, source / 1e6))
        print()
        print("change feed: every record as a change since 0, NDJSON")
        line("  mirror export --changes-since 0", "mirror-changes", unique)
        line("  mirror export", "mirror-export", unique)
        ratio("  ratio changes / export", "mirror-changes", "mirror-export")
        target("export --changes-since 0 / export (wall)", "mirror-changes", "mirror-export", CHANGES_MAX)
    if args.latency:
        print()
        latency(args, rows, line)
    if args.downloads:
        print()
        downloads(args, data, rows, line, ratio)
    print()
    print("(wall: median of the measured runs; best: fastest; CPU: user+sys of that median run;")
    print(" RSS: peak resident set; records/s: records / median wall. Ratios are mirror /")
    print(" reference for every column: above 1x mirror takes longer, uses more CPU or memory;")
    print(" in the records/s column below 1x means mirror is slower)")
    if args.downloads:
        print("(downloads: files/s = files / median wall, MB/s = file bytes / median wall; the")
        print(" mirror rows include walking the pages that name the files, curl fetches files only)")


def latency(args, rows, line):
    pages, ms, conc = args.latency_pages, args.delay_ms, args.concurrency
    stats = {}
    with open(args.latency) as f:
        for row in f:
            name, run, requests, in_flight, connections = row.rstrip("\n").split("\t")
            stats[(name, int(run))] = (int(requests), int(in_flight), int(connections))
    fast, slow, ref = "latency-c%d" % conc, "latency-c1", "latency-ref"
    print("latency: walk %d pages, every response %g ms late (delay_server.py: asyncio, HTTP/1.1 keep-alive)"
          % (pages, ms))
    for name, label in ((fast, "  mirror run, concurrency: %d" % conc),
                        (ref, "  curl --parallel-max %d (fetch only)" % conc),
                        (slow, "  mirror run, concurrency: 1")):
        line(label, name, pages * 100)
        if name in rows:
            st = stats.get((name, rows[name][2]))
            if st:
                print("    server: %d requests, at most %d in flight, %d connections" % st)
    target = TARGET_FACTOR * pages * ms / 1000 / conc
    floor = pages * ms / 1000
    if fast in rows:
        wall = rows[fast][0][0]
        print("  target, concurrency %d: <= %.1f x %d x %g ms / %d = %.2f s -> %.2f s, %s (%.2f of the target)"
              % (conc, TARGET_FACTOR, pages, ms, conc, target, wall,
                 "met" if wall <= target else "MISSED", wall / target))
    if slow in rows:
        wall = rows[slow][0][0]
        print("  floor, concurrency 1:  >= %d x %g ms = %.2f s -> %.2f s, %s"
              % (pages, ms, floor, wall, "ok" if wall >= floor else "TOO FAST"))
    if fast in rows and ref in rows:
        print("  mirror / curl, concurrency %d:   %.2fx wall" % (conc, rows[fast][0][0] / rows[ref][0][0]))
    if fast in rows and slow in rows:
        print("  speed-up concurrency %d over 1:  %.2fx (at most %dx)"
              % (conc, rows[slow][0][0] / rows[fast][0][0], conc))


def downloads(args, data, rows, line, ratio):
    files, pages, conc = args.downloads, args.download_pages, args.download_concurrency
    mb = args.download_bytes / 1e6
    print("downloads: %d files, %.1f MB (%.0f KB each on average), named by %d pages x 100 records,"
          " from nginx" % (files, mb, args.download_bytes / 1e3 / files, pages))
    print("  job: download_concurrency: %d, concurrency: %d (pages); curl: --parallel-max %d"
          % (conc, args.download_page_concurrency, conc))
    print("%-36s %8s %8s %8s %9s %12s %8s" % (
        "", "wall s", "best s", "CPU s", "RSS MB", "files/s", "MB/s"))
    line("  mirror run (pages + files)", "dl-mirror", files, True, mb)
    line("  curl, files only, to disk", "dl-curl", files, True, mb)
    ratio("  ratio mirror / curl", "dl-mirror", "dl-curl")
    if "dl-floor" in rows:
        line("  SwiftNIO + SHA-256 alone, files", "dl-floor", files, True, mb)
        ratio("  ratio floor / curl", "dl-floor", "dl-curl")
    if "dl-mirror" in rows and "dl-curl" in rows:
        fm = files / rows["dl-mirror"][0][0]
        fc = files / rows["dl-curl"][0][0]
        want = args.download_min_ratio * fc
        print("  target: files/s >= %g x curl's = %.0f -> %.0f files/s, %s (%.2fx curl)"
              % (args.download_min_ratio, want, fm, "met" if fm >= want else "MISSED", fm / fc))
    if data.get("dl-mirror"):
        peak = max(v[2] for v in data["dl-mirror"].values()) / 1024.0
        print("  target: peak RSS <= %g MB (largest of the measured runs) -> %.1f MB, %s"
              % (args.download_max_rss_mb, peak, "met" if peak <= args.download_max_rss_mb else "MISSED"))
    if not args.download_latency:
        return
    ms = args.delay_ms
    stats = {}
    with open(args.download_latency) as f:
        for row in f:
            name, run, *counts = row.rstrip("\n").split("\t")
            stats[(name, int(run))] = tuple(int(c) for c in counts)
    print("download latency: the same files and pages, every response %g ms late (delay_server.py)" % ms)
    for name, label in (("dl-latency", "  mirror run (pages + files)"),
                        ("dl-latency-ref", "  curl, files only, to /dev/null")):
        line(label, name, files, True, mb)
        if name in rows:
            st = stats.get((name, rows[name][2]))
            if st:
                req, in_flight, conns, freq, fmax, preq, pmax = st
                print("    server: %d file requests (at most %d in flight), %d page requests (at most %d),"
                      " at most %d in flight in all, %d connections" % (freq, fmax, preq, pmax, in_flight, conns))
    target = TARGET_FACTOR * files * ms / 1000 / conc
    if "dl-latency" in rows:
        wall = rows["dl-latency"][0][0]
        print("  target: <= %.1f x %d x %g ms / %d = %.2f s -> %.2f s, %s (%.2f of the target)"
              % (TARGET_FACTOR, files, ms, conc, target, wall,
                 "met" if wall <= target else "MISSED", wall / target))
    if "dl-latency" in rows and "dl-latency-ref" in rows:
        print("  mirror / curl:   %.2fx wall" % (rows["dl-latency"][0][0] / rows["dl-latency-ref"][0][0]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Prints the tests a swift-testing log shows started and never ended: after a run that was
stopped for taking too long, they are the ones it was still waiting for."""
import re
import sys

started = []
ended = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    match = re.match(r"^◇ Test (.+) started\.$", line)
    # A parameterized test's cases end with the test, which says how many there were.
    if match and match.group(1) != "run" and not match.group(1).startswith("case "):
        started.append(match.group(1))
    elif line[:1] in "✔✘━➜" and line[1:].startswith(" Test "):
        ended.append(line[len("✔ Test "):])
end = re.compile(r" (with \d+ test cases? )?(passed|failed|skipped)")
for name in started:
    if not any(rest.startswith(name) and end.match(rest[len(name):]) for rest in ended):
        print(name)

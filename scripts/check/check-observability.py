#!/usr/bin/env python3
"""Checks deploy/observability: the alert rules, their unit tests, the sample Prometheus config
and the Grafana dashboard.

- `promtool check rules alerts.yml`, `promtool test rules alerts.test.yml` and `promtool check
  config prometheus.yml`;
- every `expr` of the dashboard parses: promtool has no parser for one expression, so each is
  written as a recording rule into a temporary rule file, with the dashboard's variables
  (`$job`, `$__rate_interval`) replaced by values, and that file is checked;
- the dashboard is one Grafana imports: a schemaVersion of 38 or more, a `datasource` variable
  of Prometheus data sources and a `job` variable over mirror's jobs, panels with unique ids,
  a gridPos inside the 24 columns, none over another, and targets with a refId and an expr;
- every `mirror_*` metric the dashboard, the rules and their tests name is one of the metrics
  the tables of docs/deploying.md "Watching mirror" name (`_bucket`, `_sum` and `_count` are a
  histogram's).

promtool comes from Debian's `prometheus` package. When it is not on PATH nor in .build/tools,
the package is downloaded (`apt-get download`, no daemon installed nor started) and only
promtool is unpacked into .build/tools.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDER = os.path.join(ROOT, "deploy/observability")
TOOLS = os.path.join(ROOT, ".build/tools")

problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


def promtool_path():
    """promtool on PATH, else in .build/tools, else unpacked there from Debian's package."""
    found = shutil.which("promtool")
    if found:
        return found
    tool = os.path.join(TOOLS, "promtool")
    if os.access(tool, os.X_OK):
        return tool
    started = time.monotonic()
    os.makedirs(TOOLS, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=TOOLS) as folder:
        def download():
            return subprocess.run(["apt-get", "download", "prometheus"], cwd=folder,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        result = download()
        if result.returncode != 0:
            # A fresh machine may have no package lists yet.
            subprocess.run(["apt-get", "update", "-qq"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            result = download()
        packages = [name for name in os.listdir(folder) if name.endswith(".deb")]
        if result.returncode != 0 or not packages:
            sys.exit("check-observability: promtool is not installed and 'apt-get download prometheus' failed: "
                     + result.stderr.strip().replace("\n", " | ")
                     + "; install Debian's prometheus package or put promtool on PATH")
        package = os.path.join(folder, packages[0])
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", package], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", folder, "./usr/bin/promtool"], stdin=tar.stdout, check=True)
        if tar.wait() != 0:
            sys.exit(f"check-observability: 'dpkg-deb --fsys-tarfile {packages[0]}' failed")
        os.replace(os.path.join(folder, "usr/bin/promtool"), tool)
        size = os.path.getsize(package)
    print(f"check-observability: unpacked promtool from {packages[0]} ({size / 1e6:.0f} MB) into .build/tools "
          f"in {time.monotonic() - started:.1f}s", file=sys.stderr)
    return tool


def promtool(tool, arguments, where):
    """Runs promtool in deploy/observability; a failure is a problem with its output."""
    result = subprocess.run([tool] + arguments, cwd=FOLDER, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    if result.returncode != 0:
        lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        problem(where, f"'promtool {' '.join(arguments)}' failed: " + " | ".join(lines[-12:]))
    return result.returncode == 0


def documented_metrics(docs):
    """The metric names in the first column of the tables of docs/deploying.md "Watching mirror"."""
    with open(docs, encoding="utf-8") as file:
        text = file.read()
    section = re.search(r"^## Watching mirror\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not section:
        problem(os.path.relpath(docs, ROOT), "has no section '## Watching mirror'")
        return set()
    return set(re.findall(r"^\|\s*`(mirror_[a-z0-9_]+)`", section.group(1), re.M))


def metric_names(expr):
    # Label values are strings: "mirror-serve" is not a metric name; drop strings first.
    return set(re.findall(r"\bmirror_[a-zA-Z0-9_:]*", re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)))


def check_names(used, documented, docs_label):
    histogram = re.compile(r"_(bucket|sum|count)$")
    said = set()
    for name, where in sorted(used.items()):
        base = histogram.sub("", name)
        if name in documented or base in documented or base in said:
            continue
        said.add(base)
        problem(where, f"'{name}' is not one of the metrics {docs_label} \"Watching mirror\" names")


def dashboard_exprs(dashboard, used):
    """Checks the dashboard's shape; returns (record name, expr) for every target."""
    where = "deploy/observability/mirror-dashboard.json"
    if not isinstance(dashboard.get("schemaVersion"), int) or dashboard["schemaVersion"] < 38:
        problem(where, f"schemaVersion is {dashboard.get('schemaVersion')!r}, not 38 or more")
    variables = {v.get("name"): v for v in (dashboard.get("templating") or {}).get("list") or []}
    source = variables.get("datasource") or {}
    if source.get("type") != "datasource" or source.get("query") != "prometheus":
        problem(where, "needs a template variable 'datasource' of type datasource over prometheus")
    job = variables.get("job") or {}
    query = job.get("query")
    query = query.get("query") if isinstance(query, dict) else query
    if job.get("type") != "query" or query != "label_values(mirror_pages_stored_total, job)":
        problem(where, "needs a template variable 'job' of type query: label_values(mirror_pages_stored_total, job)")
    for name in metric_names(query or ""):
        used.setdefault(name, where + ": variable 'job'")

    records = []
    ids, cells = set(), {}
    for panel in dashboard.get("panels") or []:
        pid = panel.get("id")
        label = f"{where}: panel {pid} '{panel.get('title')}'"
        if not isinstance(pid, int) or pid in ids:
            problem(label, "needs an id of its own (an integer)")
        ids.add(pid)
        grid = panel.get("gridPos") or {}
        if not all(isinstance(grid.get(key), int) for key in "hwxy") or grid["x"] + grid["w"] > 24:
            problem(label, f"gridPos {grid} is not h, w, x, y within 24 columns")
        else:
            for y in range(grid["y"], grid["y"] + grid["h"]):
                for x in range(grid["x"], grid["x"] + grid["w"]):
                    if (x, y) in cells:
                        problem(label, f"lies over panel {cells[(x, y)]}")
                        break
                    cells[(x, y)] = pid
                else:
                    continue
                break
        if panel.get("type") == "row":
            continue
        if (panel.get("datasource") or {}).get("uid") != "${datasource}":
            problem(label, "does not take its data source from the 'datasource' variable")
        targets = panel.get("targets") or []
        if not targets:
            problem(label, "has no targets")
        refs = set()
        for target in targets:
            ref, expr = target.get("refId"), target.get("expr")
            if not ref or ref in refs:
                problem(label, f"target refId {ref!r} is missing or repeated")
            refs.add(ref)
            if not isinstance(expr, str) or not expr.strip():
                problem(label, f"target {ref} has no expr")
                continue
            for name in metric_names(expr):
                used.setdefault(name, f"{label}, target {ref}")
            value = expr.replace("$__rate_interval", "5m").replace("${job}", "events").replace("$job", "events")
            if "$" in value:
                problem(label, f"target {ref} uses a variable the check does not know: {expr}")
            records.append((f"dashboard:panel_{pid}:{ref}", value, f"{label}, target {ref}"))
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=os.path.join(ROOT, "docs/deploying.md"),
                        help="the page whose \"Watching mirror\" tables name the metrics (default docs/deploying.md)")
    arguments = parser.parse_args()
    docs_label = os.path.relpath(arguments.docs, ROOT) if arguments.docs.startswith(ROOT + os.sep) else arguments.docs

    tool = promtool_path()
    version = subprocess.run([tool, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True).stdout.split("\n")[0]
    promtool(tool, ["check", "rules", "alerts.yml"], "deploy/observability/alerts.yml")
    promtool(tool, ["test", "rules", "alerts.test.yml"], "deploy/observability/alerts.test.yml")
    promtool(tool, ["check", "config", "prometheus.yml"], "deploy/observability/prometheus.yml")

    used = {}
    with open(os.path.join(FOLDER, "alerts.yml"), encoding="utf-8") as file:
        rules = yaml.safe_load(file)
    alerts = [rule for group in rules.get("groups") or [] for rule in group.get("rules") or []]
    for rule in alerts:
        for name in metric_names(str(rule.get("expr", ""))):
            used.setdefault(name, f"deploy/observability/alerts.yml: {rule.get('alert') or rule.get('record')}")
    with open(os.path.join(FOLDER, "alerts.test.yml"), encoding="utf-8") as file:
        tests = yaml.safe_load(file)
    for test in tests.get("tests") or []:
        for series in test.get("input_series") or []:
            for name in metric_names(series.get("series", "").split("{")[0]):
                used.setdefault(name, f"deploy/observability/alerts.test.yml: series {series.get('series')}")

    with open(os.path.join(FOLDER, "mirror-dashboard.json"), encoding="utf-8") as file:
        try:
            dashboard = json.load(file)
        except json.JSONDecodeError as error:
            problem("deploy/observability/mirror-dashboard.json", f"is not JSON: {error}")
            dashboard = {}
    records = dashboard_exprs(dashboard, used)
    if records:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "dashboard-exprs.yml")
            with open(path, "w", encoding="utf-8") as file:
                yaml.safe_dump({"groups": [{"name": "dashboard",
                                            "rules": [{"record": r, "expr": e} for r, e, _ in records]}]},
                               file, sort_keys=False, width=1000)
            result = subprocess.run([tool, "check", "rules", path], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            if result.returncode != 0:
                named = False
                for record, expr, where in records:
                    for line in result.stdout.splitlines():
                        if f'"{record}"' in line:
                            problem(where, f"{expr}: " + line.split(f'"{record}": ', 1)[-1].strip())
                            named = True
                if not named:
                    problem("deploy/observability/mirror-dashboard.json",
                            "its expressions do not check: " + " | ".join(result.stdout.split("\n")[-8:]))

    check_names(used, documented_metrics(arguments.docs), docs_label)

    if problems:
        for line in problems:
            print(f"check-observability: {line}", file=sys.stderr)
        print(f"check-observability: {len(problems)} problem(s) in deploy/observability", file=sys.stderr)
        return 1
    print(f"check-observability: {version}: {len(alerts)} alert rules check and pass their unit tests, "
          f"prometheus.yml checks, the dashboard's {len(records)} expressions parse, and the "
          f"{len({re.sub(r'_(bucket|sum|count)$', '', name) for name in used})} mirror metrics they name "
          f"are all in {docs_label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks that Package.swift is exact: each target declares the targets and products it
imports, and nothing more. Reads `swift package dump-package` and every Swift file's
imports. System modules (Foundation, Glibc, Dispatch, Synchronization, ...) are not
declared, so they are not counted. Exits 1 naming each difference.

    python3 scripts/check/check-package.py
"""
import glob
import json
import os
import re
import subprocess
import sys

SYSTEM = {"Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationXML", "Glibc", "Musl", "Darwin",
          "Dispatch", "CDispatch", "Synchronization", "Testing", "XCTest", "_Concurrency"}
IMPORT = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:public |package |internal |private |fileprivate )?"
                    r"import (?:struct |enum |class |func |protocol |typealias |var |let )?(\w+)", re.M)

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
package = json.loads(subprocess.run(["swift", "package", "dump-package"], check=True,
                                    capture_output=True, text=True).stdout)
failures = []
for target in package["targets"]:
    name = target["name"]
    path = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + name
    declared = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                declared.add(dependency[kind][0])
    imported = set()
    for file in glob.glob(os.path.join(path, "**", "*.swift"), recursive=True):
        excluded = any(os.path.relpath(file, path).startswith(e) for e in target.get("exclude", []))
        if not excluded:
            imported.update(IMPORT.findall(open(file, encoding="utf-8").read()))
    imported -= SYSTEM | {name}
    for module in sorted(declared - imported):
        failures.append(f"{name} declares {module} and never imports it")
    for module in sorted(imported - declared):
        failures.append(f"{name} imports {module} and does not declare it")
for failure in failures:
    print(f"check-package: {failure}", file=sys.stderr)
if failures:
    sys.exit(1)
print(f"check-package: {len(package['targets'])} targets declare exactly what they import")

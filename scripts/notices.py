#!/usr/bin/env python3
"""Prints the NOTICES of mirror's binary: every package whose code went into it, with its
version, its license and the full text of its LICENSE and NOTICE files, read from the
package checkouts.

    python3 scripts/notices.py [SCRATCH-PATH [BUILD-DIR]] > NOTICES   # default .build

The packages are those the `mirror` product's targets use, and theirs in turn (packages
only the tests use are left out). With BUILD-DIR (the folder of a build of the `mirror`
product, such as .build/release), only those of them whose sources were compiled there
are listed: a package's manifest may name dependencies for products mirror does not use.
"""
import json
import os
import shutil
import subprocess
import sys

SCRATCH = sys.argv[1] if len(sys.argv) > 1 else ".build"
BUILD_DIR = sys.argv[2] if len(sys.argv) > 2 else None
PRODUCT = "mirror"


def swift_package(*arguments):
    output = subprocess.run(["swift", "package", "--scratch-path", SCRATCH, *arguments],
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output[output.index("{"):])


def product_packages(manifest):
    """Identities of the packages whose products the product's targets use."""
    targets = {target["name"]: target for target in manifest["targets"]}
    product = next(p for p in manifest["products"] if p["name"] == PRODUCT)
    pending, seen, packages = list(product["targets"]), set(), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for dependency in targets[name]["dependencies"]:
            kind, value = next(iter(dependency.items()))
            if kind == "product":
                packages.add(value[1].lower())
            elif value[0] in targets:      # byName or target: a target of this package
                pending.append(value[0])
            else:                          # byName: a product named like its package
                packages.add(value[0].lower())
    return packages


def compiled_checkouts(build_dir):
    """Names of the checkouts whose sources were compiled in build_dir: each module's
    folder there (Module.build) with object files also holds files naming its sources."""
    names = set()
    for folder in os.listdir(build_dir):
        path = os.path.join(build_dir, folder)
        if not folder.endswith(".build") or not os.path.isdir(path):
            continue
        files = os.listdir(path)
        if not any(name.endswith(".o") for name in files):
            continue
        for name in files:
            if name.endswith((".json", ".d")):
                text = open(os.path.join(path, name), encoding="utf-8", errors="replace").read()
                for part in text.split("/checkouts/")[1:]:
                    names.add(part.split("/", 1)[0])
    return names


def license_name(text):
    if "Apache License" in text and "Version 2.0" in text:
        return "Apache License 2.0"
    if "MIT License" in text or "Permission is hereby granted, free of charge" in text:
        return "MIT License"
    if "Redistribution and use in source and binary forms" in text:
        return "BSD License"
    return "see the license text below"


def main():
    manifest = swift_package("dump-package")
    tree = swift_package("show-dependencies", "--format", "json")
    wanted = product_packages(manifest)
    chosen = {}

    def visit(package, included):
        included = included or package["identity"] in wanted
        if included:
            chosen[package["identity"]] = package
        for child in package["dependencies"]:
            visit(child, included)

    for package in tree["dependencies"]:
        visit(package, False)
    if BUILD_DIR:
        compiled = compiled_checkouts(BUILD_DIR)
        chosen = {identity: package for identity, package in chosen.items()
                  if os.path.basename(package["path"]) in compiled}

    print("mirror is built from the following packages, linked into its binary.")
    print("Each one's license and notice files follow the list.\n")
    texts = []
    for identity in sorted(chosen):
        package = chosen[identity]
        files = sorted(name for name in os.listdir(package["path"])
                       if name.upper().startswith(("LICENSE", "LICENCE", "NOTICE", "COPYING")))
        licenses = [open(os.path.join(package["path"], name), encoding="utf-8").read() for name in files
                    if not name.upper().startswith("NOTICE")]
        name = license_name(licenses[0]) if licenses else "no license file found"
        print(f"- {package['name']} {package['version']} ({package['url']}): {name}")
        for file_name in files:
            text = open(os.path.join(package["path"], file_name), encoding="utf-8").read()
            texts.append((f"{package['name']} {package['version']}: {file_name}", text))
    # The Swift runtime and Foundation, linked in by --static-swift-stdlib.
    swift = shutil.which("swift")
    toolchain_license = swift and os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "share", "swift", "LICENSE.txt")
    print("- the Swift standard library, runtime and Foundation (from the Swift toolchain, linked in):"
          " Apache License 2.0 with the Runtime Library Exception; Foundation includes ICU"
          " (swift-foundation-icu), under the Unicode License")
    if toolchain_license and os.path.exists(toolchain_license):
        texts.append(("the Swift toolchain: LICENSE.txt", open(toolchain_license, encoding="utf-8").read()))
    for title, text in texts:
        print("\n" + "=" * 79)
        print(title)
        print("=" * 79 + "\n")
        print(text.rstrip())


if __name__ == "__main__":
    main()

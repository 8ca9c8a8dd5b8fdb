#!/usr/bin/env python3
"""Links the debug build's objects again, with the Swift runtime linked in:

    python3 scripts/lib/link-static.py SCRATCH PRODUCT OUTPUT

SCRATCH is SwiftPM's build folder (.build), PRODUCT the executable (mirror), OUTPUT the
binary to write. The objects are the ones `swift build` compiled for .build/debug, which
the tests run, and are neither compiled again nor touched: a second debug build with
--static-swift-stdlib took about 6½ minutes on 2 cores, this link takes seconds.

The link is SwiftPM's own, read from the build manifest (SCRATCH/debug.yaml), with
-static-stdlib added and the output moved. One thing differs between the objects of a
static build and these: a Swift object names the libraries its imports need (its autolink
entries), and the static Foundation needs more of them (CoreFoundation, _FoundationICU,
...) than the shared one, which loads its own. So an object compiled here with
-static-stdlib from nothing but those imports joins the link and names them: the toolchain
says what a static Foundation needs, not this script.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def fail(message):
    print(f"link-static: {message}", file=sys.stderr)
    sys.exit(1)


def link_command(manifest, binary):
    """The arguments of the manifest's command whose one output is the binary."""
    text = open(manifest, encoding="utf-8").read()
    # Each command is a block of "key: value" lines; outputs and args are JSON arrays.
    for block in re.split(r"\n(?=  \"[^\n]*\":\n)", text):
        outputs = re.search(r"^    outputs: (\[.*\])$", block, re.M)
        args = re.search(r"^    args: (\[.*\])$", block, re.M)
        if outputs and args and json.loads(outputs.group(1)) == [binary]:
            return json.loads(args.group(1))
    fail(f"{manifest} has no command that links {binary}: run `swift build` first")


def autolinked(objects, extract):
    """The -l options the objects' autolink entries name."""
    result = subprocess.run([extract, "-o", "-", *objects], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"swift-autolink-extract failed: {result.stderr.strip()}")
    return set(result.stdout.split())


def main():
    if len(sys.argv) != 4:
        print("usage: python3 scripts/lib/link-static.py SCRATCH PRODUCT OUTPUT", file=sys.stderr)
        sys.exit(2)
    scratch, product, output = sys.argv[1:]
    scratch = os.path.abspath(scratch)
    bin_path = subprocess.run(["swift", "build", "--scratch-path", scratch, "--show-bin-path"],
                              capture_output=True, text=True, check=True).stdout.strip()
    args = link_command(os.path.join(scratch, "debug.yaml"), os.path.join(bin_path, product))
    swiftc = args[0]
    toolchain = os.path.dirname(os.path.dirname(swiftc))
    static_modules = os.path.join(toolchain, "lib", "swift_static", "linux")

    file_list = next((arg[1:] for arg in args if arg.startswith("@")), None)
    if file_list is None:
        fail("the link command has no list of objects (@FILE)")
    objects = shlex.split(open(file_list, encoding="utf-8").read())
    # The modules with a static build of their own whose libraries the objects name
    # (-lFoundation: Foundation.swiftmodule in swift_static).
    libraries = autolinked(objects, os.path.join(toolchain, "bin", "swift-autolink-extract"))
    modules = sorted(
        option[2:] for option in libraries
        if os.path.isdir(os.path.join(static_modules, f"{option[2:]}.swiftmodule"))
    )

    with tempfile.TemporaryDirectory() as folder:
        probe = os.path.join(folder, "imports.swift")
        with open(probe, "w", encoding="utf-8") as source:
            source.writelines(f"import {name}\n" for name in modules)
        probe_object = os.path.join(folder, "imports.o")
        subprocess.run([swiftc, "-static-stdlib", "-parse-as-library", "-module-name", "StaticImports",
                        "-c", probe, "-o", probe_object], check=True)
        command = [swiftc, "-static-stdlib"]
        rest = iter(args[1:])
        for arg in rest:
            if arg == "-o":
                next(rest)
                command += ["-o", output]
            else:
                command.append(arg)
        command.append(probe_object)
        result = subprocess.run(command, capture_output=True, text=True)
        # The static Foundation's own warning (its use of mktemp) is not this link's.
        noise = [line for line in result.stderr.splitlines() if "the use of `mktemp' is dangerous" not in line]
        if noise:
            print("\n".join(noise), file=sys.stderr)
        if result.returncode != 0:
            fail(f"the link failed ({result.returncode})")


if __name__ == "__main__":
    main()

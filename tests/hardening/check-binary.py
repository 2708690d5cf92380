#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The leasekeeper binary carries the hardening of Debian's hardening=+all, as Debian's
hardening-check (package devscripts) sees it. ctest runs it as hardening.binary:

    check-binary.py BINARY --fortify=ON|OFF --cc=COMPILER

Every check of hardening-check must say "yes", with two exceptions that are verified
another way rather than trusted:

* Stack clash protection: hardening-check looks for the probing loop, which the compiler
  emits only around frames larger than a page. "unknown" (no such frame) is accepted only if
  the debug information shows every compilation unit of ours built with
  -fstack-clash-protection.
* Control flow integrity: the linker keeps the IBT/SHSTK property only if every object has
  it, and Debian 12's C start files (Scrt1.o, crti.o) are built without it, so no program
  linked there gets it. "no" is accepted only if every compilation unit of ours was built
  with -fcf-protection and the toolchain's Scrt1.o lacks the property (or this is not x86).

Fortify is required when the build has it (--fortify=ON: not Debug, sanitizer or fuzz
builds). A missing tool fails the test: it is never skipped."""

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys

SOURCE_DIR = os.path.realpath(os.environ.get(
    "LEASEKEEPER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))

# hardening-check's checks, each with what we require of it.
CHECKS = ["Position Independent Executable", "Stack protected", "Fortify Source functions",
          "Read-only relocations", "Immediate binding", "Stack clash protection",
          "Control flow integrity"]


FAILURES = []


def fail(msg):
    """Stop at once: the test cannot go on."""
    print("FAIL: " + msg)
    sys.exit(1)


def bad(msg):
    """A check failed; go on with the others."""
    print("FAIL: " + msg)
    FAILURES.append(msg)


def need(tool, package):
    path = shutil.which(tool)
    if path is None:
        fail("NOT RUN: %s not found: apt-get install %s (scripts/bootstrap installs it)"
             % (tool, package))
    return path


def hardening_check(binary):
    """hardening-check's verdict per check, e.g. {"Stack protected": "yes"}."""
    need("hardening-check", "devscripts")
    p = subprocess.run(["hardening-check", "--verbose", binary], capture_output=True,
                       text=True, check=False)
    print(p.stdout + p.stderr, end="")
    if p.returncode not in (0, 1):
        fail("hardening-check exited with %d" % p.returncode)
    result = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^ (\S[^:]*): (.*)$", line)
        if m:
            result[m.group(1)] = m.group(2)
    return result


def producers(binary):
    """DW_AT_producer of each of our compilation units (by source path): the compiler's
    version and the code generation options it was run with."""
    need("readelf", "binutils")
    out = subprocess.run(["readelf", "--debug-dump=info", "--dwarf-depth=1", binary],
                         capture_output=True, text=True, check=True).stdout
    units, producer = {}, None
    for line in out.splitlines():
        if "DW_TAG_compile_unit" in line:
            producer = None
        m = re.search(r"DW_AT_producer\s*:.*?: (GNU .*|clang .*)$", line)
        if m:
            producer = m.group(1)
        m = re.search(r"DW_AT_name\s*:.*?: (/\S+\.c)$", line)
        if m and producer is not None and m.group(1).startswith(SOURCE_DIR + "/src/"):
            units[m.group(1)] = producer
    return units


def all_units_have(binary, option, why):
    """Fail unless every compilation unit of ours records the option."""
    units = producers(binary)
    if not units:
        bad("%s: cannot verify: %s has no debug information for the sources in %s "
             "(build with -g, e.g. RelWithDebInfo)" % (why, binary, SOURCE_DIR))
        return
    missing = sorted(u for u, p in units.items() if not re.search(r"(^| )%s( |=|$)"
                                                                  % re.escape(option), p))
    if missing:
        more = " and %d more" % (len(missing) - 3) if len(missing) > 3 else ""
        bad("%s: %d of %d compilation units built without %s: %s%s"
            % (why, len(missing), len(units), option, ", ".join(missing[:3]), more))
        return
    print("%s: all %d compilation units of ours were built with %s" % (why, len(units), option))


def start_file_has_cet(cc):
    """Whether the toolchain's PIE start file carries the IBT and SHSTK property."""
    path = subprocess.run([cc, "-print-file-name=Scrt1.o"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if not os.path.isabs(path):
        fail("cannot find Scrt1.o with %s -print-file-name" % cc)
    notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True,
                           check=True).stdout
    return path, re.search(r"x86 feature: IBT, SHSTK", notes) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--fortify", choices=["ON", "OFF"], required=True)
    ap.add_argument("--cc", required=True)
    args = ap.parse_args()

    result = hardening_check(args.binary)
    unknown = sorted(set(result) - set(CHECKS))
    if unknown:
        fail("hardening-check has checks this test does not know: %s (decide what they "
             "require, in tests/hardening/check-binary.py)" % ", ".join(unknown))
    for name in CHECKS:
        if name not in result:
            fail("hardening-check printed no line for %r" % name)

    for name in ["Position Independent Executable", "Stack protected",
                 "Read-only relocations", "Immediate binding"]:
        if not result[name].startswith("yes"):
            bad("%s: %s" % (name, result[name]))

    name = "Fortify Source functions"
    if args.fortify == "ON" and not result[name].startswith("yes"):
        bad("%s: %s (this build defines _FORTIFY_SOURCE)" % (name, result[name]))
    if args.fortify == "OFF":
        print("%s: not required: this build (Debug, sanitizer or fuzz) has no "
              "_FORTIFY_SOURCE (CMakeLists.txt)" % name)

    name = "Stack clash protection"
    if result[name].startswith("unknown"):
        all_units_have(args.binary, "-fstack-clash-protection", name)
    elif not result[name].startswith("yes"):
        bad("%s: %s" % (name, result[name]))

    name = "Control flow integrity"
    if not result[name].startswith("yes"):
        if not result[name].startswith("no"):
            bad("%s: %s" % (name, result[name]))
        if platform.machine() in ("x86_64", "i686", "i386"):
            path, has = start_file_has_cet(args.cc)
            if has:
                bad("%s: %s, although the C start file %s has the IBT/SHSTK property: "
                    "something we link lacks it" % (name, result[name], path))
            print("%s: the C start file %s lacks the IBT/SHSTK property, so no program "
                  "linked with it has it" % (name, path))
        all_units_have(args.binary, "-fcf-protection", name)

    if FAILURES:
        print("hardening.binary: %d check(s) failed" % len(FAILURES))
        sys.exit(1)
    print("hardening.binary: OK")


if __name__ == "__main__":
    main()

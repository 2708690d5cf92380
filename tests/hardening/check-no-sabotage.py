#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The leasekeeper binary holds none of the torture test's sabotage faults, and
leasekeeper-sabotage (the test build of the same program) holds all three. ctest runs it as
hardening.no_sabotage:

    check-no-sabotage.py LEASEKEEPER LEASEKEEPER_SABOTAGE

A fault is compiled in only with LEASEKEEPER_SABOTAGE defined (src/common/sabotage.h), and
each compiled fault reads the environment variable LEASEKEEPER_SABOTAGE and compares it
with the fault's name: those four strings are in a binary exactly when a fault is. The
second binary must have them all, so a check that could never find them fails too. Symbols
named after sabotage are refused in the first binary as well."""

import subprocess
import sys

NEEDLES = [b"LEASEKEEPER_SABOTAGE", b"no-kill", b"no-claim-check", b"late-release"]


def found(path):
    with open(path, "rb") as f:
        data = f.read()
    return [n.decode() for n in NEEDLES if n in data]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check-no-sabotage.py LEASEKEEPER LEASEKEEPER_SABOTAGE")
    normal, sabotage = sys.argv[1], sys.argv[2]
    bad = found(normal)
    symbols = subprocess.run(["nm", "-a", normal], capture_output=True, text=True,
                             check=True).stdout
    bad += [line.split()[-1] for line in symbols.splitlines() if "sabotage" in line.lower()]
    missing = [n.decode() for n in NEEDLES if n.decode() not in found(sabotage)]
    if bad:
        print("FAIL: %s holds sabotage code: %s" % (normal, ", ".join(bad)))
    if missing:
        print("FAIL: %s lacks %s: this check cannot see a fault" % (sabotage, ", ".join(missing)))
    if bad or missing:
        return 1
    print("ok: %s holds no sabotage fault; %s holds all %d strings" % (normal, sabotage,
                                                                      len(NEEDLES)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

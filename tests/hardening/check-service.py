#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""deploy/leasekeeper.service is a valid unit and `systemd-analyze security` rates it 4.0 or
lower. ctest runs it as hardening.service:

    check-service.py UNIT BINARY [--max-exposure=4.0]

`systemd-analyze verify` checks the unit's keys and commands: it runs on a copy whose
/usr/bin/leasekeeper is the BINARY just built (it is not installed here) and must print
nothing (an unknown key is only a warning, but a warning fails this test). Man pages are not
looked for. `security --offline=true` needs no running systemd. A missing systemd-analyze
fails the test: it is never skipped."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("unit")
    ap.add_argument("binary")
    ap.add_argument("--max-exposure", type=float, default=4.0)
    args = ap.parse_args()

    if shutil.which("systemd-analyze") is None:
        fail("NOT RUN: systemd-analyze not found: apt-get install systemd "
             "(scripts/bootstrap installs it; no running systemd is needed)")

    with open(args.unit, encoding="utf-8") as f:
        text = f.read()
    if "/usr/bin/leasekeeper " not in text:
        fail("%s does not run /usr/bin/leasekeeper" % args.unit)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(args.unit))
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text.replace("/usr/bin/leasekeeper ",
                                 os.path.abspath(args.binary) + " "))
        p = subprocess.run(["systemd-analyze", "verify", "--man=no", copy],
                           capture_output=True, text=True, check=False)
        out = (p.stdout + p.stderr).strip()
        if p.returncode != 0 or out:
            fail("systemd-analyze verify (exit status %d):\n%s" % (p.returncode, out))
        print("systemd-analyze verify: OK")

        p = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager",
                            copy], capture_output=True, text=True, check=False)
    out = p.stdout + p.stderr
    m = re.search(r"Overall exposure level for \S+: ([0-9]+\.[0-9]+) (\S+)", out)
    if m is None:
        fail("systemd-analyze security printed no overall exposure level:\n" + out)
    # The settings still exposed, for the reader of a failure.
    print("\n".join(line for line in out.splitlines() if line.startswith("\u2717")))
    print(m.group(0))
    score = float(m.group(1))
    if score > args.max_exposure:
        fail("exposure %.1f is above %.1f: see docs/security.md, \"Hardening of the build "
             "and the service\"" % (score, args.max_exposure))
    print("hardening.service: OK (exposure %.1f, at most %.1f)" % (score, args.max_exposure))


if __name__ == "__main__":
    main()

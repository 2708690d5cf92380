#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=120
"""The worker works inside the sandbox of deploy/leasekeeper.service, as far as it can be
reproduced without systemd: the unit's CapabilityBoundingSet (through setpriv) and UMask.
A job run as nobody starts with the unit's umask and bounding set, and a SIGTERM to the
worker stops it cleanly: signalling another user's process group needs CAP_KILL, setuid
and setgroups need CAP_SETUID and CAP_SETGID. (The system call filter was checked by hand
with strace: docs/security.md.) Needs root, as the worker does; without root it fails."""

import os
import re
import signal

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

UNIT = os.path.join(lktest.source_dir(), "deploy", "leasekeeper.service")
SAFETY = {"safety_margin": "500ms", "kill_grace": "2s"}

# Capability numbers from linux/capability.h, for CapBnd in /proc/PID/status.
CAPS = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
        "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
        "CAP_NET_BIND_SERVICE": 10, "CAP_SYS_ADMIN": 21}


read = lktest.read_text


def unit_settings():
    """The unit's capability bounding set (names) and umask (octal string)."""
    caps, umask = None, None
    for line in read(UNIT).splitlines():
        m = re.match(r"^CapabilityBoundingSet=(.*)$", line)
        if m:
            caps = (caps or []) + m.group(1).split()
        m = re.match(r"^UMask=([0-7]+)$", line)
        if m:
            umask = m.group(1)
    return caps, umask


class ServiceSandboxTest(lktest.TestCase):
    def test_a_job_as_nobody_under_the_units_sandbox(self):
        if os.geteuid() != 0:
            self.fail("NOT RUN: needs root (the worker switches to the job's user)")
        caps, umask = unit_settings()
        self.assertIsNotNone(caps, "%s sets no CapabilityBoundingSet" % UNIT)
        self.assertIsNotNone(umask, "%s sets no UMask" % UNIT)
        unknown = [c for c in caps if c not in CAPS]
        self.assertEqual(unknown, [], "add their numbers to CAPS in this test")

        self.start_zookeeper()
        os.chmod(self.dir, 0o711)  # nobody must reach its workdir
        shared = self.path("shared")
        os.makedirs(shared)
        os.chmod(shared, 0o1777)
        out = os.path.join(shared, "out")
        jobs = {"sandboxed": {
            "command": "(id -un; umask; grep ^CapBnd: /proc/self/status; echo $$) > %s.tmp; "
                       "mv %s.tmp %s; exec sleep 1000" % (out, out, out),
            "user": "nobody", "group": "nogroup", "workdir": shared}}
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "6s"},
                                safety=SAFETY, jobs=jobs)
        bounding = "-all," + ",".join("+" + c[4:].lower() for c in caps)
        argv = ["/bin/sh", "-c", 'umask "$1"; shift; exec "$@"', "sh", umask,
                "setpriv", "--bounding-set=" + bounding, lktest.leasekeeper_bin(),
                "run", "-c", cfg]
        w = self.proc(argv, "alpha")
        w.wait_log(r"registered as", timeout=30)
        self.wait_until(lambda: len(read(out).split()) >= 4, timeout=30)

        name, job_umask, _, capbnd, pid = read(out).split()
        self.assertEqual(name, "nobody")
        self.assertEqual(int(job_umask, 8), int(umask, 8))
        self.assertEqual(int(capbnd, 16), sum(1 << CAPS[c] for c in caps))

        w.signal(signal.SIGTERM)
        self.assertEqual(w.wait(timeout=30), 0)
        log = read(self.path("alpha.log"))
        self.assertNotIn("Operation not permitted", log)
        self.assertRegex(log, r"job sandboxed \(pid %s\) killed by signal 15" % pid)
        self.assertFalse(os.path.exists("/proc/%s" % pid), "the job outlived the worker")


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""A fault that repeats is logged once and counted, not once per occurrence: a job whose
log_file is on a full file system (a 16 KiB tmpfs: every write fails with ENOSPC; /dev/full,
a device, is refused as a log since issue 10) writing thousands of lines, and a ZooKeeper
host name that does not resolve."""

import os
import re
import subprocess

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

LINES = 5000
# A job that writes LINES lines, one write each, then ends; 1h before it runs again.
WRITER = ("i=0; while [ $i -lt %d ]; do echo \"line $i\"; i=$((i+1)); done; "
          "echo done > %s") % (LINES, "{marker}")


class HostileLogTest(lktest.TestCase):
    def test_full_disk_warnings_are_counted_not_repeated(self):
        full = self.path("full")
        os.mkdir(full, 0o755)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0755", "lktest", full],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.fail("NOT RUN: cannot mount a small tmpfs (the test needs root): %s"
                      % r.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", full])
        self.start_zookeeper()
        marker = self.path("wrote")
        cfg = self.write_config(
            worker={"allow_root_jobs": True},
            jobs={"chatty": {"command": WRITER.format(marker=marker),
                             "log_file": os.path.join(full, "chatty.log"),
                             "restart_backoff": "1h"}})
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        self.wait_until(lambda: os.path.exists(marker), timeout=120,
                        msg="the job never finished writing")
        # The run's end flushes the count of what was held back.
        w.wait_log(r"No space left on device \(repeated \d+ times? in the last \d+ s\)",
                   timeout=60)
        text = w.log_text()
        warnings = [l for l in text.splitlines() if "No space left on device" in l]
        # One line when the fault began and one summary when the run ended; the next
        # window could add one more if the run outlived the interval: never thousands.
        self.assertLessEqual(len(warnings), 4, "\n".join(warnings[:10]))
        held = sum(int(m) for m in re.findall(r"\(repeated (\d+) times? in the last", text))
        self.assertGreaterEqual(held, 1)
        self.assertTrue(w.alive())

    def test_session_start_failures_are_counted_not_repeated(self):
        """A host name that does not resolve: the client cannot start a session and retries
        every second, which once wrote a warning each time; now one, then a count when
        exec gives up."""
        r = subprocess.run([lktest.leasekeeper_bin(), "exec", "--zk", "no-such-host.invalid:2181",
                            "--timeout", "6s", "x", "--", "true"], capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 69, r.stderr)  # unreachable, not "no lease" (75)
        tries = [l for l in r.stderr.splitlines() if "cannot start a session" in l]
        self.assertGreaterEqual(len(tries), 2, r.stderr)
        self.assertLessEqual(len(tries), 3, r.stderr)
        self.assertRegex(tries[-1], r"\(repeated \d+ times? in the last \d+ s\)")

    def test_refused_lock_folder_warns_once_per_interval(self):
        """A lock folder the worker may read but not write (someone else's ACL): every
        attempt, 5 s apart, is refused the same way. Each fault warns once in the interval;
        stopping the worker says how many attempts were held back."""
        from kazoo.security import make_acl

        self.start_zookeeper()
        kz = self.kazoo()
        kz.ensure_path("/leasekeeper/mutex")
        kz.create("/leasekeeper/mutex/locked", acl=[make_acl("world", "anyone", read=True)])
        cfg = self.write_config(worker={"allow_root_jobs": True},
                                jobs={"locked": {"command": "sleep 60"}})
        w = self.leasekeeper("run", "-v", "-c", cfg, name="worker")
        w.wait_log(r"registered as", timeout=30)
        # Three attempts, each a CONTENDING state that ends in a refusal.
        self.wait_until(lambda: len(re.findall(r"job locked: \w+ -> CONTENDING",
                                               w.log_text())) >= 3,
                        timeout=120, msg="the job did not try three times")
        w.wait_log(r"could not acquire a lease", timeout=30)
        text = w.log_text()
        refused = [l for l in text.splitlines() if "cannot create a node in" in l]
        failed = [l for l in text.splitlines() if "could not acquire a lease" in l]
        # Within one 30 s interval of the first refusal, one line each (one more per
        # interval if this busy machine made the attempts span longer).
        self.assertLessEqual(len(refused), 2, "\n".join(refused))
        self.assertLessEqual(len(failed), 2, "\n".join(failed))
        w.stop(timeout=30)
        self.assertRegex(w.log_text(), r"could not acquire a lease: .*\(repeated \d+ times? "
                                       r"in the last \d+ s\)")


if __name__ == "__main__":
    lktest.main()

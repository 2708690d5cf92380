#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=180
"""A killed supervisor's replacement says hello only after it has emptied the run cgroups
the dead one left; at its hello every job gives up the lease it held. A run must not start
in between: it would run on after its lease was given up (docs/reliability.md, finding 8,
found by the torture's seed 23: an flock overlap of `share-a` with `share-b`).

The window is made long and certain: a stale run cgroup holds a process frozen with the
cgroup v1 freezer, which SIGKILL cannot end until it is thawed, so the new supervisor waits
in its clean-up (and says no hello) for as long as the test keeps it frozen, while the jobs'
ticks come."""

import os
import signal
import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib/on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
FREEZER_V1 = "/sys/fs/cgroup/freezer"
# The new supervisor kept from its hello this long: b's next tick (2 s after the kill) comes
# in it, and its start request is still young enough at the hello for the supervisor's own
# deadline check (a start older than the lease deadline is refused there) to let it through.
STALL_S = 2.5


class SupervisorHelloTest(lktest.TestCase):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or lktest.cgroup_mount() is None or \
                not os.path.isdir(FREEZER_V1):
            self.skipTest("NOT RUN: needs root, a cgroup v2 hierarchy and the v1 freezer")
        self.freezer = os.path.join(FREEZER_V1, "lktest-%d" % os.getpid())
        os.makedirs(self.freezer, exist_ok=True)
        self.stale = None
        self.addCleanup(self.thaw_and_remove)

    def set_frozen(self, on):
        with open(os.path.join(self.freezer, "freezer.state"), "w") as f:
            f.write("FROZEN" if on else "THAWED")
        want = "FROZEN" if on else "THAWED"
        self.wait_until(lambda: lktest.read_text(
            os.path.join(self.freezer, "freezer.state")).strip() == want, timeout=10,
            msg="freezer not " + want)

    def thaw_and_remove(self):
        try:
            self.set_frozen(False)
        except (OSError, AssertionError):
            pass
        if self.stale is not None:
            self.stale.kill()
            self.stale.wait()
        try:
            os.rmdir(self.freezer)
        except OSError:
            pass

    def test_no_run_starts_before_the_new_supervisor_says_hello(self):
        self.start_zookeeper()
        rec = self.record_file()
        # Two jobs on one lock (and one flock file): b ticks every 5 s and runs 3 s; a never
        # ticks (once a year) and runs only when asked (run-now), 0.2 s.
        cfg = self.write_config(
            name="w1", zookeeper={"session_timeout": "4s"}, safety=SAFETY,
            worker={"allow_root_jobs": True, "cgroups": "auto"},
            jobs={"a": {"schedule": "0 0 1 1 *", "lock": "L",
                        "command": rec.command("w1", hold_ms=200)},
                  "b": {"schedule": "@every 5s", "lock": "L", "start_deadline": "10s",
                        "command": rec.command("w1", hold_ms=3000)}})
        w = self.worker(cfg, name="w1")
        w.wait_log(r"each run gets a cgroup of its own", timeout=30)
        w.wait_log(r"job b: run ended", timeout=30)
        folder = lktest.cgroup_folder("w1", self.path("w1", "state"))
        # A stale run cgroup with a process that SIGKILL cannot end while it is frozen.
        os.makedirs(os.path.join(folder, "run-stale"), exist_ok=True)
        self.stale = subprocess.Popen(["sleep", "600"])
        with open(os.path.join(folder, "run-stale", "cgroup.procs"), "w") as f:
            f.write(str(self.stale.pid))
        with open(os.path.join(self.freezer, "cgroup.procs"), "w") as f:
            f.write(str(self.stale.pid))
        self.set_frozen(True)
        sv = int(w.wait_log(r"supervisor pid (\d+)", since=0).group(1))
        # Killed right after a run of b ended: b holds no lease and has no run, and its
        # next tick (2 s later) contends, claims and starts while the new supervisor is held.
        w.wait_log(r"job b: run ended", timeout=30)
        os.kill(sv, signal.SIGKILL)
        w.wait_log(r"started a new supervisor, pid (\d+)", timeout=30)
        # The new supervisor may log its clean-up before main logs that it started it (two
        # processes, one file): look from the start (the stale cgroup exists only now).
        w.wait_log(r"run-stale holds processes of a previous run: killing them", since=0,
                   timeout=30)
        time.sleep(STALL_S)
        self.assertNotRegex(w.log_text(), r"removed \d+ cgroup\(s\) left by a previous run",
                            "the new supervisor was not held in its clean-up")
        self.set_frozen(False)
        self.stale.wait(timeout=10)
        self.stale = None
        w.wait_log(r"removed \d+ cgroup\(s\) left by a previous run", timeout=30)
        # Every job gave its lease up at the hello: a run of a now takes the lock. A run
        # of b started in the stall would still be running (3 s), lease or not.
        self.leasekeeper("run-now", "-c", cfg, "a", name="run-now").wait(timeout=30)
        rec.wait_for("end", count=1 + sum(1 for r in rec.records() if r.kind == "start"),
                     timeout=30)
        time.sleep(3.5)
        self.assertEqual(rec.count("overlap"), 0, "a run outlived its lease:\n" +
                         lktest.read_text(rec.path)[-3000:])
        report = rec.check(leases=1)
        self.assertEqual(report.total, 0, report.describe())
        # The window was met: b's tick came during the stall and its start was refused (a
        # warning limited to one in 30 s: it may come with the summary).
        w.wait_log(r"job b: could not start: the supervisor is not ready yet", since=0,
                   timeout=40)
        self.assertTrue(w.alive())


if __name__ == "__main__":
    lktest.main()

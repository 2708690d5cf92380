#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 label=controllers
"""Limits: a run's cgroup gets its job's memory_max, cpu_max and tasks_max before it starts,
and a run the OOM killer ends has the outcome oom (docs/safety.md "Containment").

These need the memory, cpu and pids controllers delegated to the cgroup the test runs in.
Where they are not (a host in the hybrid layout, with every controller on cgroup v1), the
test prints NOT RUN and exits 77: ctest counts it as not run (SKIP_RETURN_CODE), never as
passed, and scripts/test reports the label "controllers" as NOT RUN. The code that writes
the limit files is covered on any host by tests/unit/test_cgroup.c.
"""

import json
import os
import re
import subprocess
import sys
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NEEDED = ("memory", "cpu", "pids")


def missing_controllers():
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root"
    mnt = lktest.cgroup_mount()
    if mnt is None:
        return "no cgroup v2 hierarchy"
    own = "/"
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                own = line[3:].strip()
    have = lktest.read_text(os.path.join(mnt + (own if own != "/" else ""),
                                         "cgroup.controllers")).split()
    lacking = [c for c in NEEDED if c not in have]
    if lacking:
        return "the %s controller%s not delegated to %s%s" % (
            ", ".join(lacking), "s are" if len(lacking) > 1 else " is", mnt, own)
    return None


class LimitsTest(lktest.TestCase):
    def setUp(self):
        super().setUp()
        self.start_zookeeper()

    def test_limits_are_written_and_oom_is_an_outcome(self):
        port = lktest.free_port()
        hog = ('/usr/bin/python3 -c "b = bytearray(256 * 1024 * 1024); '
               'import time; time.sleep(60)"')
        cfg = self.write_config(
            name="lim", worker={"allow_root_jobs": True, "cgroups": "required",
                                "memory_max": "32M", "tasks_max": "64"},
            http={"listen": "127.0.0.1:%d" % port},
            jobs={"hog": {"command": hog, "restart_backoff": "5m"},
                  "idle": {"command": "sleep 600", "cpu_max": "20%", "tasks_max": "16",
                           "memory_max": "max"}})
        w = self.worker(cfg, name="lim")
        self.wait_until(lambda: "run ended" in w.log_text(), timeout=60, msg="hog never ended")
        folder = lktest.cgroup_folder("lim", self.path("lim", "state"))
        runs = [d for d in os.listdir(folder) if d.startswith("run-")]
        self.assertEqual(len(runs), 1, "only idle runs: %r" % runs)
        run = os.path.join(folder, runs[0])
        self.assertEqual(lktest.read_text(run + "/cpu.max").split(), ["20000", "100000"])
        self.assertEqual(lktest.read_text(run + "/pids.max").strip(), "16")
        self.assertEqual(lktest.read_text(run + "/memory.max").strip(), "max")
        self.assertRegex(w.log_text(), r"job hog: run ended .*\(oom: the OOM killer ended it")
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as r:
            metrics = r.read().decode()
        self.assertIn('leasekeeper_job_oom_kills_total{job_name="hog"} 1', metrics)
        self.assertRegex(metrics, r'leasekeeper_job_memory_peak_bytes\{job_name="hog"\} \d+')

        rec = self.last_run(cfg, "hog")
        self.assertEqual(rec["reason"], "oom")
        self.assertLessEqual(rec["memory_peak"], 32 * 1024 * 1024)
        self.assertGreater(rec["memory_peak"], 16 * 1024 * 1024)


if __name__ == "__main__":
    why = missing_controllers()
    if why is not None:
        print("test_limits: NOT RUN: %s (see docs/testing.md)" % why)
        sys.exit(77)
    lktest.main()

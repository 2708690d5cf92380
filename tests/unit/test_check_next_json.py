#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=60
"""`check --json` and `next --json` on a configuration written here: one JSON object on stdout,
the exit status of the text form, every lock of a job with its mode (a mutex, a semaphore of
N, a read or write side, several locks as listed), the fire times of a schedule in UTC; an
unknown job is one JSON error on stderr. No ZooKeeper: both read the configuration only."""
import json
import os
import subprocess
import tempfile
import unittest

BUILD = os.environ.get("LEASEKEEPER_BUILD_DIR", "build")
BIN = os.environ.get("LEASEKEEPER_BIN", os.path.join(BUILD, "leasekeeper"))

JOBS = """\
[job daily]
command = true
user = nobody
schedule = 30 2 * * *
timezone = UTC

[job reader]
command = true
user = nobody
lock = db
lock_mode = read

[job several]
command = true
user = nobody
locks = db:write, cache, pool:3
"""


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)


class CheckNextJsonTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="lk-check-json-")
        d = self.tmp.name
        os.mkdir(os.path.join(d, "jobs"))
        with open(os.path.join(d, "jobs", "a.ini"), "w") as f:
            f.write(JOBS)
        self.cfg = os.path.join(d, "worker.ini")
        with open(self.cfg, "w") as f:
            f.write("[zookeeper]\nhosts = 127.0.0.1:2181\n[worker]\nstate_dir = %s\n"
                    "jobs = jobs/*.ini\n" % d)

    def tearDown(self):
        self.tmp.cleanup()

    def test_check_json_names_every_lock_and_mode(self):
        out = run("check", "--json", "-c", self.cfg)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        doc = json.loads(out.stdout)
        self.assertTrue(doc["ok"])
        self.assertEqual(doc["errors"], [])
        jobs = {j["name"]: j for j in doc["jobs"]}
        self.assertEqual(sorted(jobs), ["daily", "reader", "several"])
        self.assertEqual(jobs["daily"]["locks"],
                         [{"path": "/leasekeeper/mutex/daily", "mode": "mutex", "leases": 1}])
        self.assertEqual(jobs["reader"]["locks"],
                         [{"path": "/leasekeeper/rwlock/db", "mode": "read", "leases": 1}])
        self.assertEqual(jobs["several"]["locks"],
                         [{"path": "/leasekeeper/rwlock/db", "mode": "write", "leases": 1},
                          {"path": "/leasekeeper/mutex/cache", "mode": "mutex", "leases": 1},
                          {"path": "/leasekeeper/semaphore/pool", "mode": "semaphore",
                           "leases": 3}])
        self.assertEqual(jobs["several"]["lock"], "/leasekeeper/rwlock/db")
        # The text form says what each lease means.
        text = run("check", "-c", self.cfg).stdout
        self.assertIn("1: the read side of a read-write lock, runs beside other readers, never "
                      "beside a writer", text)
        self.assertIn("3 locks (below), all held for each run or none", text)
        self.assertIn("/leasekeeper/semaphore/pool (semaphore of 3)", text)

    def test_check_json_reports_errors_in_its_object(self):
        with open(os.path.join(self.tmp.name, "jobs", "b.ini"), "w") as f:
            f.write("[job bad]\ncommand = true\nuser = nobody\nlock = db\n")
        out = run("check", "--json", "-c", self.cfg)
        self.assertEqual(out.returncode, 1, out.stderr)
        doc = json.loads(out.stdout)
        self.assertFalse(doc["ok"])
        self.assertEqual(len(doc["errors"]), 1, doc["errors"])
        self.assertRegex(doc["errors"][0], r"jobs/b\.ini:\d+: ")

    def test_next_json(self):
        out = run("next", "--json", "-n", "3", "-c", self.cfg, "daily")
        self.assertEqual(out.returncode, 0, out.stderr)
        doc = json.loads(out.stdout)
        self.assertEqual((doc["job"], doc["schedule"], doc["timezone"], doc["asked"]),
                         ("daily", "30 2 * * *", "UTC", 3))
        self.assertEqual(len(doc["times"]), 3)
        for t in doc["times"]:
            self.assertRegex(t["utc"], r"^\d{4}-\d\d-\d\dT02:30:00Z$")
            self.assertEqual(t["epoch"] % 86400, 2 * 3600 + 30 * 60)
        epochs = [t["epoch"] for t in doc["times"]]
        self.assertEqual([b - a for a, b in zip(epochs, epochs[1:])], [86400, 86400])
        out = run("next", "--json", "-c", self.cfg, "nosuch")
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stdout, "")
        err = json.loads(out.stderr)
        self.assertEqual((err["command"], err["exit_status"]), ("next", 1))
        self.assertIn('no job "nosuch"', err["error"])


if __name__ == "__main__":
    unittest.main()

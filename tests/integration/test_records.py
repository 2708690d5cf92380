#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Runs you can see while they run, under one id: a run in progress is listed from any host
(status --json and text: job, worker, pid, since, fence, run id) from its ephemeral node
<root>/jobs/<job>/running/<run id>; the id is the one in the run's environment
(LEASEKEEPER_RUN_ID), its worker's log lines (run=), and, once it ended, its run record; the
node goes when the run ends."""

import json
import os
import re
import subprocess

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"


class RecordsTest(lktest.TestCase):
    def status(self, cfg, *args):
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg] + list(args),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def running(self, cfg, job):
        st = json.loads(self.status(cfg, "--json"))
        return [x for j in st["jobs"] if j["name"] == job for x in j.get("running", [])]

    def test_a_run_in_progress_is_seen_from_any_host_under_its_one_id(self):
        self.start_zookeeper()
        out = self.path("ids")
        os.makedirs(out)
        jobs = {"cont": {"command": 'echo "$LEASEKEEPER_RUN_ID" > %s/$LEASEKEEPER_NODE; '
                                    'exec sleep 3600' % out, "restart_backoff": "1s"}}
        cfgs, procs = {}, {}
        for n in ("alpha", "beta"):
            cfgs[n] = self.write_config(name=n, zookeeper={"session_timeout": "4s"},
                                        safety=SAFETY, worker={"allow_root_jobs": True},
                                        jobs=jobs)
            procs[n] = self.worker(cfgs[n], name=n)
            procs[n].wait_log(r"registered as", timeout=30)
        run = self.wait_until(lambda: (self.running(cfgs["beta"], "cont") or [None])[0],
                              timeout=30, msg="no run in progress listed")
        holder = run["node"]
        other = "beta" if holder == "alpha" else "alpha"
        # Seen from the host that does not run it, with every fact.
        self.assertRegex(run["run_id"], r"^%s-\d+-\d+$" % holder)
        self.assertRegex(run["since"], RFC3339)
        self.assertIsInstance(run["fence"], int)
        self.assertGreater(run["pid"], 0)
        os.kill(run["pid"], 0)  # the run's process, alive
        self.assertEqual(run["session"][:2], "0x")
        self.assertNotEqual(run["session"], "0x0", "the run's node is ephemeral")
        # One id: the run's environment, the holder's log lines, status.
        self.wait_until(lambda: os.path.exists(os.path.join(out, holder)), timeout=10)
        self.assertEqual(lktest.read_text(os.path.join(out, holder)).strip(), run["run_id"])
        self.assertIn("run=%s " % run["run_id"], procs[holder].log_text())
        text = self.status(cfgs[other])
        self.assertRegex(text, r"\n    running  %s\s+pid %d\s+since %s fence %d run=%s\n" % (
            holder, run["pid"], re.escape(run["since"]), run["fence"], re.escape(run["run_id"])))
        self.assertEqual(len(self.running(cfgs[other], "cont")), 1, "one run of a mutex job")

        # The holder stops: its run ends, its node goes, its record has the same id.
        procs[holder].stop(timeout=30)
        self.wait_until(lambda: all(r["node"] != holder
                                    for r in self.running(cfgs[other], "cont")),
                        timeout=30, msg="the ended run is still listed")
        rec = self.last_run(cfgs[other], "cont")
        self.assertEqual(rec["run_id"], run["run_id"])
        self.assertEqual(rec["outcome"], "stopped")
        # The other worker takes over: its run is listed, under its own id.
        nxt = self.wait_until(lambda: (self.running(cfgs[other], "cont") or [None])[0],
                              timeout=30, msg="the other worker's run is not listed")
        self.assertEqual(nxt["node"], other)
        self.assertNotEqual(nxt["run_id"], run["run_id"])


if __name__ == "__main__":
    lktest.main()

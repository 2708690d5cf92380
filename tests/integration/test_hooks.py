#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Hooks against a real ZooKeeper, two workers: on_failure runs once per failed run, on the
worker that ran it, with the run's facts in LEASEKEEPER_* (its run record's number among
them); a failing hook is logged and counted (leasekeeper_hook_failures_total) and does not
disturb the next ticks; on_success after a run that succeeded; a hook past its hook_timeout
is killed."""

import glob
import json
import os
import subprocess
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def env_file(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            out.setdefault(k, []).append(v)
    return out


def done(path):
    """Whether a hook wrote its file (sort writes it at once, at its end)."""
    return os.path.exists(path) and os.path.getsize(path) > 0


class HooksTest(lktest.TestCase):
    def runs(self, kz, job):
        path = "/leasekeeper/jobs/%s/runs" % job
        if not kz.exists(path):
            return {}
        return {int(c[4:]): json.loads(kz.get(path + "/" + c)[0])
                for c in kz.get_children(path)}

    def test_on_failure_once_per_failed_run(self):
        self.start_zookeeper(tick_ms=200)
        hooks = self.path("hooks")
        os.makedirs(hooks)
        # The hook appends its LEASEKEEPER_* to a file named for the run, then fails.
        record = ("env | grep ^LEASEKEEPER_ | sort >> %s/$LEASEKEEPER_HOOK-$LEASEKEEPER_RUN_RECORD; "
                  "exit 9" % hooks)
        jobs = {"flaky": {"command": "echo about to fail; exit 4", "schedule": "@every 1s",
                          "history": 100, "on_failure": record},
                "good": {"command": "true", "schedule": "@every 1s", "history": 100,
                         "hook_timeout": "2s"},
                "slowhook": {"command": "exit 1", "schedule": "@every 1s", "history": 5,
                             "on_failure": "sleep 60", "hook_timeout": "1s"}}
        ports, procs, configs = {}, {}, {}
        for name in ("alpha", "beta"):
            ports[name] = lktest.free_port()
            configs[name] = self.write_config(
                name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                worker={"allow_root_jobs": True,
                        "on_success": "echo ok >> %s/success-$LEASEKEEPER_RUN_RECORD" % hooks},
                http={"listen": "127.0.0.1:%d" % ports[name]}, jobs=jobs)
            procs[name] = self.worker(configs[name], name=name)
            procs[name].wait_log(r"registered as", timeout=30)
        kz = self.kazoo()
        self.wait_until(lambda: len(self.runs(kz, "flaky")) >= 5, timeout=60)
        snapshot = self.runs(kz, "flaky")
        # Every run recorded so far has had its hook (each takes a few ms).
        self.wait_until(lambda: all(done("%s/on_failure-%d" % (hooks, i)) for i in snapshot),
                        timeout=30)
        self.wait_until(lambda: any("its on_failure failed" in p.log_text() and
                                    "slowhook" in p.log_text() for p in procs.values()),
                        timeout=30)
        metrics = {n: urllib.request.urlopen("http://127.0.0.1:%d/metrics" % ports[n],
                                             timeout=10).read().decode() for n in ports}
        for p in procs.values():
            p.stop(timeout=30)
            self.assertEqual(p.returncode, 0)

        records = self.runs(kz, "flaky")
        self.assertGreaterEqual(len(records), 5)
        ran = 0
        for i, rec in sorted(records.items()):
            self.assertEqual((rec["reason"], rec["status"]), ("failed", 4), rec)
            path = "%s/on_failure-%d" % (hooks, i)
            if not os.path.exists(path) or (i not in snapshot and not os.path.getsize(path)):
                # only a run that ended as the workers stopped (its hook killed with them)
                self.assertNotIn(i, snapshot)
                continue
            ran += 1
            env = env_file(path)
            # Exactly once, with the run's facts.
            self.assertEqual(env["LEASEKEEPER_HOOK"], ["on_failure"], path)
            self.assertEqual(env["LEASEKEEPER_OUTCOME"], ["failed"])
            self.assertEqual(env["LEASEKEEPER_EXIT_STATUS"], ["4"])
            self.assertNotIn("LEASEKEEPER_SIGNAL", env)
            self.assertEqual(env["LEASEKEEPER_RUN_RECORD"], [str(i)])
            # One id per run: the record's, the hook's, and its log lines' run=.
            self.assertRegex(rec["run_id"], r"^%s-\d+-\d+$" % rec["node"])
            self.assertEqual(env["LEASEKEEPER_RUN_ID"], [rec["run_id"]])
            self.assertIn("run=%s " % rec["run_id"], procs[rec["node"]].log_text())
            self.assertRegex(procs[rec["node"]].log_text(),
                             r"supervisor: job flaky started, pid \d+ run=%s\n" % rec["run_id"])
            self.assertEqual(env["LEASEKEEPER_JOB"], ["flaky"])
            self.assertEqual(env["LEASEKEEPER_NODE"], [rec["node"]])
            self.assertEqual(env["LEASEKEEPER_FENCE"], [str(rec["fence"])])
            self.assertEqual(env["LEASEKEEPER_TICK"], [iso(rec["tick"])])
            self.assertEqual(env["LEASEKEEPER_DURATION_MS"], [str(rec["duration_ms"])])
            self.assertEqual(env["LEASEKEEPER_LOG"],
                             [os.path.join(self.dir, rec["node"], "state", "jobs", "flaky.log")])
            self.assertNotIn("LEASEKEEPER_DEADLINE_MS", env)  # a hook holds no lease
        self.assertGreaterEqual(ran, len(snapshot))
        for p in glob.glob(hooks + "/on_failure-*"):
            self.assertIn(int(p.rsplit("-", 1)[1]), records)
        # The failing hook did not disturb the ticks: one run a second, none missed.
        ticks = sorted(r["tick"] for r in records.values())
        self.assertEqual(len(set(ticks)), len(ticks))
        self.assertLessEqual(ticks[-1] - ticks[0], len(ticks) + 2, ticks)
        # Logged and counted, on the worker that ran them.
        failed = {n: sum(1 for r in records.values() if r["node"] == n and
                         os.path.exists("%s/on_failure-%d" % (hooks, i)))
                  for n in procs}
        for n in procs:
            if failed[n]:
                self.assertRegex(procs[n].log_text(),
                                 r"job flaky: its on_failure failed after \d+ ms: exit status 9 "
                                 r"\(not retried\)")
            m = [int(line.split()[-1]) for line in metrics[n].splitlines()
                 if line.startswith('leasekeeper_hook_failures_total{job_name="flaky"}')]
            self.assertEqual(len(m), 1, metrics[n])
            self.assertLessEqual(failed[n] - 1, m[0])  # the last one may have ended after
        self.check_metrics(metrics["alpha"])
        # on_success ([worker]'s default) after the good job's runs, not after the others.
        good = self.runs(kz, "good")
        oks = glob.glob(hooks + "/success-*")
        self.assertTrue(oks)
        for p in oks:
            i = int(p.rsplit("-", 1)[1])
            self.assertEqual(good[i]["reason"], "ok")
            with open(p) as f:
                self.assertEqual(f.read(), "ok\n")
        # A hook past its hook_timeout is killed, logged, and the job goes on.
        log = "".join(p.log_text() for p in procs.values())
        self.assertRegex(log, r"the hook of job slowhook ran for its hook_timeout: SIGTERM")
        self.assertRegex(log, r"job slowhook: its on_failure failed after \d+ ms: signal 15, at "
                              r"its hook_timeout \(not retried\)")

    def test_on_missed_by_the_worker_that_records_the_miss(self):
        """Ticks that come due while the previous run still runs are missed (recorded by
        the worker that claims the next one): on_missed runs once per missed tick there."""
        self.start_zookeeper(tick_ms=200)
        hooks = self.path("hooks")
        os.makedirs(hooks)
        jobs = {"starved": {"command": "sleep 2.5", "schedule": "@every 1s",
                            "start_deadline": "1s", "history": 100,
                            "on_missed": "env | grep ^LEASEKEEPER_ | sort >> "
                                         "%s/missed-$LEASEKEEPER_RUN_RECORD" % hooks}}
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                worker={"allow_root_jobs": True}, jobs=jobs)
        p = self.worker(cfg, name="alpha")
        p.wait_log(r"registered as", timeout=30)
        kz = self.kazoo()
        self.wait_until(lambda: sum(r["reason"] == "missed"
                                    for r in self.runs(kz, "starved").values()) >= 3, timeout=60)
        snapshot = {i: r for i, r in self.runs(kz, "starved").items() if r["reason"] == "missed"}
        self.wait_until(lambda: all(done("%s/missed-%d" % (hooks, i)) for i in snapshot),
                        timeout=30)
        p.stop(timeout=30)
        for i, rec in self.runs(kz, "starved").items():
            path = "%s/missed-%d" % (hooks, i)
            if rec["reason"] != "missed":
                self.assertFalse(os.path.exists(path))
                continue
            if i not in snapshot and (not os.path.exists(path) or not os.path.getsize(path)):
                continue  # recorded as the worker stopped (its hook killed with it)
            env = env_file(path)
            self.assertEqual(env["LEASEKEEPER_HOOK"], ["on_missed"])
            self.assertEqual(env["LEASEKEEPER_OUTCOME"], ["missed"])
            self.assertEqual(env["LEASEKEEPER_TICK"], [iso(rec["tick"])])
            self.assertEqual(env["LEASEKEEPER_NODE"], ["alpha"])
            self.assertNotIn("LEASEKEEPER_EXIT_STATUS", env)
            self.assertNotIn("LEASEKEEPER_RUN_ID", env)  # a missed tick is no run


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300
"""/metrics, /livez, /readyz, /status and status --json against a real ZooKeeper: runs of
every outcome move the right counters (and only those), promtool accepts the text, no
sample has a `job` label, the histogram adds up; a lease node deleted under a run counts
a loss by deletion and a killed run; the JSON holds no integer beyond 2^53, session ids as
hex strings and results as fields; with ZooKeeper gone /readyz and /health say 503 and
/livez 200. Also the sample alerting rules pass `promtool check rules`."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SOURCE = os.environ.get("LEASEKEEPER_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SAFE = 2 ** 53
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def big_integers(v, where="$"):
    """Every integer of v beyond 2^53, with where it is."""
    if isinstance(v, bool):
        return []
    if isinstance(v, int):
        return [where] if abs(v) > SAFE else []
    if isinstance(v, dict):
        return [w for k, x in v.items() for w in big_integers(x, where + "." + k)]
    if isinstance(v, list):
        return [w for i, x in enumerate(v) for w in big_integers(x, "%s[%d]" % (where, i))]
    return []


def samples(text):
    """{(name, frozenset(labels)): value} of a Prometheus text."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


class MetricsTest(lktest.TestCase):
    def get(self, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path),
                                        timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def m(self, text, name, **labels):
        return samples(text).get((name, frozenset(labels.items())))

    def test_metrics_of_every_outcome_and_the_json(self):
        self.start_zookeeper()
        self.port = lktest.free_port()
        jobs = {
            "good": {"command": "true", "schedule": "@every 1s", "start_deadline": "900ms"},
            "bad": {"command": "exit 3", "schedule": "@every 1s", "start_deadline": "900ms",
                    "retries": 0},
            "slow": {"command": "sleep 30", "schedule": "@every 1s", "timeout": "1s",
                     "start_deadline": "900ms", "retries": 0},
            "nostart": {"command": "true", "schedule": "@every 1s", "retries": 0,
                        "start_deadline": "900ms", "workdir": self.path("no-such-dir")},
            "cont": {"command": "sleep 3600", "restart_backoff": "1s"},
        }
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"},
                                safety={"safety_margin": "500ms", "kill_grace": "1s"},
                                worker={"allow_root_jobs": True}, jobs=jobs,
                                extra={"http": {"listen": "127.0.0.1:%d" % self.port}})
        w = self.worker(cfg, name="alpha")
        w.wait_log(r"registered as", timeout=30)
        began = time.monotonic()

        def ended(text, job, outcome):
            return self.m(text, "leasekeeper_job_runs_ended_total", job_name=job,
                          outcome=outcome) or 0

        def enough():
            t = self.get("/metrics")[1]
            return (ended(t, "good", "ok") >= 2 and ended(t, "bad", "failed") >= 2 and
                    ended(t, "slow", "timeout") >= 1 and
                    ended(t, "nostart", "start_failed") >= 2 and
                    # A lease is given back after its run's end is counted (the tick's
                    # record is written first): wait for the second one too.
                    (self.m(t, "leasekeeper_job_lease_losses_total", job_name="good",
                            cause="released") or 0) >= 2 and
                    self.m(t, "leasekeeper_job_running", job_name="cont") == 1) and t
        text = self.wait_until(enough, timeout=60, msg="not every outcome came")
        sys.stderr.write("every outcome after %.1f s\n" % (time.monotonic() - began))
        self.check_metrics(text)
        self.assertNotRegex(text, r'[{,]job="', "a job label collides with the target's")
        self.assertEqual(self.m(text, "leasekeeper_build_info", version=re.search(
            r'version="([^"]+)"', text).group(1)), 1)
        # Each job's runs ended with its own outcome, and no other.
        for job, outcome in (("good", "ok"), ("bad", "failed"), ("slow", "timeout"),
                             ("nostart", "start_failed")):
            for o in ("ok", "failed", "timeout", "oom", "killed", "stopped", "start_failed"):
                v = ended(text, job, o)
                self.assertIsNotNone(self.m(text, "leasekeeper_job_runs_ended_total",
                                            job_name=job, outcome=o), (job, o))
                if o != outcome:
                    self.assertEqual(v, 0, "%s ended %s" % (job, o))
        # Last success: only where a run succeeded; last run everywhere a run ended.
        now = time.time()
        ok_at = self.m(text, "leasekeeper_job_last_success_timestamp_seconds", job_name="good")
        self.assertTrue(now - 60 < ok_at <= now + 1, ok_at)
        for job in ("bad", "slow", "nostart", "cont"):
            self.assertIsNone(self.m(text, "leasekeeper_job_last_success_timestamp_seconds",
                                     job_name=job), job)
        for job in ("good", "bad", "slow", "nostart"):
            self.assertTrue(now - 60 < self.m(text, "leasekeeper_job_last_run_timestamp_seconds",
                                              job_name=job) <= now + 1, job)
        self.assertEqual(self.m(text, "leasekeeper_job_failures_total", job_name="good"), 0)
        self.assertEqual(self.m(text, "leasekeeper_job_failures_total", job_name="bad"),
                         ended(text, "bad", "failed"))
        self.assertEqual(self.m(text, "leasekeeper_job_interval_seconds", job_name="good"), 1)
        self.assertIsNone(self.m(text, "leasekeeper_job_interval_seconds", job_name="cont"))
        self.assertEqual(self.m(text, "leasekeeper_job_paused_ticks_total", job_name="good"), 0)
        # The histogram: every run that ran, cumulative buckets, +Inf the count.
        for job in ("good", "bad", "slow"):
            s = samples(text)
            count = self.m(text, "leasekeeper_job_run_duration_seconds_count", job_name=job)
            ran = sum(ended(text, job, o) for o in ("ok", "failed", "timeout", "killed"))
            self.assertEqual(count, ran, job)
            buckets = sorted((float(dict(k[1])["le"]), v) for k, v in s.items()
                             if k[0] == "leasekeeper_job_run_duration_seconds_bucket" and
                             dict(k[1])["job_name"] == job)
            self.assertEqual(buckets[-1], (float("inf"), count))
            self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))
        self.assertEqual(self.m(text, "leasekeeper_job_run_duration_seconds_count",
                                job_name="nostart"), 0)
        # A timeout run lasted its second (and its kill), not 30.
        self.assertEqual(self.m(text, "leasekeeper_job_run_duration_seconds_bucket",
                                job_name="slow", le="1"), 0)
        self.assertEqual(self.m(text, "leasekeeper_job_run_duration_seconds_bucket",
                                job_name="slow", le="15"),
                         self.m(text, "leasekeeper_job_run_duration_seconds_count",
                                job_name="slow"))
        # Scheduled jobs give their lease back after each tick.
        self.assertGreaterEqual(self.m(text, "leasekeeper_job_lease_losses_total",
                                       job_name="good", cause="released"), 2)
        self.assertEqual(self.m(text, "leasekeeper_job_lease_losses_total", job_name="good",
                                cause="deleted"), 0)

        # Health: all ready.
        self.assertEqual(self.get("/livez"), (200, "ok\n"))
        self.assertEqual(self.get("/readyz"), (200, "ok\n"))
        self.assertEqual(self.get("/health")[0], 200)
        self.assertEqual(self.m(text, "leasekeeper_ready"), 1)

        # /status: results as fields, hex session, no big integers.
        status = json.loads(self.get("/status")[1])
        self.assertEqual(big_integers(status), [])
        self.assertRegex(status["session_id"], r"^0x[0-9a-f]+$")
        self.assertNotEqual(status["session_id"], "0x0")
        self.assertRegex(status["start"], RFC3339)
        jobs_st = {j["name"]: j for j in status["jobs"]}
        self.assertEqual(jobs_st["good"]["last_outcome"], "ok")
        self.assertEqual(jobs_st["good"]["last_exit_status"], 0)
        self.assertRegex(jobs_st["good"]["last_success"], RFC3339)
        self.assertEqual(jobs_st["bad"]["last_outcome"], "failed")
        self.assertEqual(jobs_st["bad"]["last_exit_status"], 3)
        self.assertNotIn("last_success", jobs_st["bad"])
        self.assertEqual(jobs_st["slow"]["last_outcome"], "timeout")
        self.assertEqual(jobs_st["slow"]["last_signal"], 15)
        self.assertEqual(jobs_st["nostart"]["last_outcome"], "start_failed")
        # The logs print the same session id.
        w.wait_log(r"registered as .* \(session %s\)" % status["session_id"], timeout=5, since=0)

        # status --json: the same rules, on what ZooKeeper holds.
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(big_integers(out), [])
        self.assertEqual(out["workers"][0]["session"], status["session_id"])
        cj = {j["name"]: j for j in out["jobs"]}
        self.assertEqual(cj["cont"]["holders"][0]["session"], status["session_id"])
        self.assertRegex(cj["good"]["state"]["tick_time"], RFC3339)
        for name, outcome in (("good", "ok"), ("bad", "failed"), ("slow", "timeout"),
                              ("nostart", "start_failed")):
            runs = [x for x in cj[name]["runs"] if x.get("reason") != "missed"]
            self.assertTrue(runs, name)
            for run in runs:
                self.assertEqual(run["outcome"], outcome, run)
                self.assertRegex(run["tick_time"], RFC3339)
                self.assertRegex(run["start"], RFC3339)
                self.assertRegex(run["end"], RFC3339)
        self.assertTrue(all(x["exit_status"] == 3 for x in cj["bad"]["runs"]
                            if x["outcome"] == "failed"))
        self.assertTrue(all(x["signal"] == 15 for x in cj["slow"]["runs"]
                            if x["outcome"] == "timeout"))

        # A lease node deleted under the run: a loss by deletion, the run killed.
        kz = self.kazoo()
        lock = cj["cont"]["lock_path"]
        node = cj["cont"]["holders"][0]["znode"]
        kz.delete(lock + "/" + node)

        def lost():
            t = self.get("/metrics")[1]
            return (self.m(t, "leasekeeper_job_lease_losses_total", job_name="cont",
                           cause="deleted") == 1 and ended(t, "cont", "killed") == 1 and
                    self.m(t, "leasekeeper_job_lease_acquisitions_total", job_name="cont") >= 2
                    and t)
        text = self.wait_until(lost, timeout=30, msg="the deletion was not counted")
        self.check_metrics(text)

        # ZooKeeper gone: not ready, still alive.
        self.zk.stop()
        self.wait_until(lambda: self.get("/readyz")[0] == 503, timeout=30)
        code, body = self.get("/readyz")
        self.assertIn("not connected", body)
        self.assertEqual(self.get("/health")[0], 503)
        self.assertEqual(self.get("/livez"), (200, "ok\n"))
        self.assertEqual(self.m(self.get("/metrics")[1], "leasekeeper_ready"), 0)

    def test_operator_stops_are_not_failures(self):
        """pause --stop-running and drain stop runs: counted as stopped, never as failures."""
        self.start_zookeeper()
        self.port = lktest.free_port()
        jobs = {"cont": {"command": "sleep 3600", "restart_backoff": "1s"},
                "other": {"command": "sleep 3600", "restart_backoff": "1s"}}
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"},
                                safety={"safety_margin": "500ms", "kill_grace": "1s"},
                                worker={"allow_root_jobs": True}, jobs=jobs,
                                extra={"http": {"listen": "127.0.0.1:%d" % self.port}})
        w = self.worker(cfg, name="alpha")
        w.wait_log(r"registered as", timeout=30)

        def metric(name, **labels):
            return self.m(self.get("/metrics")[1], name, **labels)

        def cli(*args):
            r = subprocess.run([lktest.leasekeeper_bin()] + list(args) + ["-c", cfg],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        for job in jobs:
            self.wait_until(lambda: metric("leasekeeper_job_running", job_name=job) == 1,
                            timeout=30, msg="%s never ran" % job)
        cli("pause", "--stop-running", "cont")
        self.wait_until(lambda: metric("leasekeeper_job_runs_ended_total", job_name="cont",
                                       outcome="stopped") == 1, timeout=30,
                        msg="pause --stop-running stopped no run")
        cli("drain", "--wait")
        self.wait_until(lambda: metric("leasekeeper_job_runs_ended_total", job_name="other",
                                       outcome="stopped") == 1, timeout=30,
                        msg="drain stopped no run")
        text = self.get("/metrics")[1]
        self.check_metrics(text)
        for job in jobs:
            self.assertEqual(self.m(text, "leasekeeper_job_failures_total", job_name=job), 0,
                             "%s: an operator's stop counted as a failure" % job)
            self.assertEqual(self.m(text, "leasekeeper_job_runs_ended_total", job_name=job,
                                    outcome="failed"), 0)

    def test_sample_alerting_rules(self):
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool not installed (scripts/bootstrap installs prometheus)")
        rules = os.path.join(SOURCE, "deploy", "prometheus", "leasekeeper-alerts.yml")
        r = subprocess.run([promtool, "check", "rules", rules], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        tests = os.path.join(SOURCE, "deploy", "prometheus", "leasekeeper-alerts.test.yml")
        r = subprocess.run([promtool, "test", "rules", tests], capture_output=True, text=True,
                           timeout=60, cwd=os.path.dirname(tests))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    lktest.main()

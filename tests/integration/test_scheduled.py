#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=900 split
"""Scheduled jobs against a real ZooKeeper: exactly one run per tick across three workers
(one of them with its clock 3 s behind, one restarted midway), per_tick, the lease cap on a
job longer than its interval, timeout, retries, missed ticks, catch-up after a full outage,
run-as user, reload (a running job untouched; a bad configuration refused), on_shutdown =
wait, status and next."""

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NAMES = ("alpha", "beta", "gamma")
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


read = lktest.read_text


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class ScheduledTest(lktest.TestCase):
    def tick_log_command(self, path, sleep="0.3"):
        """A job command appending "TICK NODE" to path, then sleeping a little."""
        return 'echo "$LEASEKEEPER_TICK $LEASEKEEPER_NODE" >> %s; sleep %s' % (path, sleep)

    def config(self, name, jobs, **kw):
        worker = dict({"allow_root_jobs": True}, **kw.pop("worker", {}))
        return self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                 worker=worker, jobs=jobs, **kw)

    def start(self, name, jobs, env=None, **kw):
        p = self.worker(self.config(name, jobs, **kw), name="%s-%d" % (name, time.monotonic_ns()),
                        env=env)
        p.wait_log(r"registered as", timeout=30)
        return p

    def ticks(self, path):
        out = collections.defaultdict(list)
        for line in read(path).splitlines():
            if line.strip():
                tick, node = line.split()
                out[tick].append(node)
        return out

    def runs(self, kz, job):
        path = "/leasekeeper/jobs/%s/runs" % job
        if not kz.exists(path):
            return []
        return [json.loads(kz.get(path + "/" + c)[0])
                for c in sorted(kz.get_children(path))]

    def test_every_2s_once_per_tick_with_a_late_clock_and_a_restart(self):
        self.start_zookeeper()
        out = self.path("ticks.txt")
        jobs = {"tick": {"command": self.tick_log_command(out), "schedule": "@every 2s",
                         "start_deadline": "1500ms", "history": 100}}
        # gamma's wall clock runs 3 s behind; its lease deadlines are untouched.
        late = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME="-3s",
                    FAKETIME_DONT_FAKE_MONOTONIC="1",
                    ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
        procs = {"alpha": self.start("alpha", jobs), "beta": self.start("beta", jobs),
                 "gamma": self.start("gamma", jobs, env=late)}
        first = time.time()
        self.wait_until(lambda: len(self.ticks(out)) >= 9, timeout=60)
        procs["beta"].signal(signal.SIGTERM)
        self.assertEqual(procs["beta"].wait(timeout=10), 0)
        time.sleep(3)
        procs["beta"] = self.start("beta", jobs)
        self.wait_until(lambda: len(self.ticks(out)) >= 19, timeout=60)
        last = time.time()
        ticks = self.ticks(out)
        twice = {t: n for t, n in ticks.items() if len(n) != 1}
        self.assertEqual(twice, {}, "ticks run more than once")
        # Every tick between the first and the last seen ran (two workers were always up).
        want = [iso(t) for t in range(int(first) // 2 * 2 + 2, int(last) // 2 * 2 - 2, 2)]
        missing = [t for t in want if t not in ticks]
        self.assertEqual(missing, [], "ticks that no worker ran")
        self.assertGreaterEqual(len(ticks), 18)
        # gamma's clock is 3 s late, but ticks come due by the cluster's clock (the offset
        # it measured to the servers): it takes its turn in the ranking like the others.
        settled = iso(int(first) + 4)
        self.assertGreaterEqual(
            len([t for t, n in ticks.items() if t >= settled and "gamma" in n]), 1,
            "gamma, 3 s late by its own clock, ran no tick: ticks not timed by the cluster's")
        runs = self.runs(self.kazoo(), "tick")
        self.assertEqual(len({r["tick"] for r in runs}), len(runs), "run records per tick")

    def test_per_tick_two_runs_each_tick_on_two_workers(self):
        self.start_zookeeper()
        out = self.path("ticks.txt")
        jobs = {"pair": {"command": self.tick_log_command(out), "schedule": "@every 2s",
                         "per_tick": 2, "leases": 2}}
        for n in NAMES:
            self.start(n, jobs)
        # Ticks due before every worker was up may have found one lease holder only (on a
        # busy machine starting three workers takes seconds): judge the ticks after that.
        settled = iso(int(time.time()) + 2)
        later = lambda: [t for t in self.ticks(out) if t >= settled]
        self.wait_until(lambda: len(later()) >= 7, timeout=120)
        time.sleep(1.5)
        ticks = self.ticks(out)
        full = sorted(t for t in ticks if t >= settled)[:-1]  # the last may be partly seen
        self.assertGreaterEqual(len(full), 5)
        for t in full:
            self.assertEqual(len(ticks[t]), 2, "tick %s ran on %s" % (t, ticks[t]))
            self.assertEqual(len(set(ticks[t])), 2)

    def test_leases_cap_a_job_longer_than_its_interval(self):
        self.start_zookeeper()
        rec = self.record_file()
        for n in NAMES:
            jobs = {"long": {"command": rec.command(n, hold_ms=3500, slots=2),
                             "schedule": "@every 1s", "leases": 2, "start_deadline": "800ms"}}
            self.start(n, jobs)
        rec.wait_for("start", count=6, timeout=60)
        rep = rec.check(leases=2)
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))
        self.assertEqual(rep.max_concurrent, 2)

    def test_timeout_stops_the_run(self):
        self.start_zookeeper()
        jobs = {"slow": {"command": "trap '' TERM; sleep 60", "schedule": "@every 2s",
                         "timeout": "1s", "kill_grace": "500ms"}}
        p = self.start("alpha", jobs)
        p.wait_log(r"job slow: timeout \(1s\): stopping the run", timeout=30)
        p.wait_log(r"job slow: run ended after \d+ ms: signal 9 \(timeout\)", timeout=10)
        kz = self.kazoo()
        self.wait_until(lambda: any(r["reason"] == "timeout" for r in self.runs(kz, "slow")),
                        timeout=10)
        run = [r for r in self.runs(kz, "slow") if r["reason"] == "timeout"][0]
        self.assertEqual(run["signal"], 9)
        self.assertEqual(run["node"], "alpha")

    def test_retries_with_growing_backoff(self):
        self.start_zookeeper()
        out = self.path("attempts.txt")
        jobs = {"flaky": {"command": "date +%%s.%%N >> %s; exit 1" % out, "schedule": "@every 20s",
                          "retries": 2, "retry_backoff": "1s", "start_deadline": "15s"}}
        p = self.start("alpha", jobs)
        # A new job starts with its next tick (within 20 s), then retries twice.
        self.wait_until(lambda: len(read(out).split()) >= 3, timeout=60)
        times = [float(x) for x in read(out).split()]
        self.assertEqual(len(times), 3)
        # The back-offs the worker chose (base * 2^(n-1), +-20% jitter) must grow, and no
        # attempt may start before its back-off ran out. The gaps between attempts also hold
        # a process start and a lease acquisition, which a busy machine stretches unevenly,
        # so the growth is asserted on the chosen delays, not on the gaps.
        d1 = int(p.wait_log(r"retry 1 of 2 in (\d+) ms", timeout=5).group(1)) / 1000.0
        d2 = int(p.wait_log(r"retry 2 of 2 in (\d+) ms", timeout=5).group(1)) / 1000.0
        self.assertTrue(0.8 <= d1 <= 1.2, "first back-off %.3f s, want 1 s +-20%%" % d1)
        self.assertTrue(1.6 <= d2 <= 2.4, "second back-off %.3f s, want 2 s +-20%%" % d2)
        self.assertGreater(d2, d1, "the back-off must grow: %.3f then %.3f" % (d1, d2))
        g1, g2 = times[1] - times[0], times[2] - times[1]
        self.assertGreaterEqual(g1, d1, "attempt 2 started before its back-off ran out")
        self.assertGreaterEqual(g2, d2, "attempt 3 started before its back-off ran out")
        kz = self.kazoo()
        self.wait_until(lambda: len(self.runs(kz, "flaky")) == 3, timeout=10)
        self.assertEqual({r["reason"] for r in self.runs(kz, "flaky")}, {"failed"})
        self.assertEqual(len({r["tick"] for r in self.runs(kz, "flaky")}), 1)

    def test_ticks_due_during_a_run_are_run_or_recorded_missed(self):
        """Runs (2.5 s) longer than the interval (2 s) on a mutex: ticks come due while the
        lease is busy. Each tick must be run once or recorded missed once: never lost,
        never both, never twice."""
        self.start_zookeeper()
        out = self.path("ticks.txt")
        jobs = {"backlog": {"command": self.tick_log_command(out, "2.5"), "schedule": "@every 2s",
                            "start_deadline": "4s", "history": 100}}
        for n in ("alpha", "beta"):
            self.start(n, jobs)
        first = time.time()
        time.sleep(24)
        last = time.time()
        kz = self.kazoo()
        ran = self.ticks(out)
        missed = [r["tick"] for r in self.runs(kz, "backlog") if r["reason"] == "missed"]
        self.assertEqual({t: n for t, n in ran.items() if len(n) != 1}, {}, "ran twice")
        self.assertEqual(len(missed), len(set(missed)), "a tick recorded missed twice")
        missed = {iso(t) for t in missed}
        self.assertEqual(set(ran) & missed, set(), "ticks both run and recorded missed")
        # Every tick from the first to one that is surely settled (its start_deadline
        # passed, with a margin) is accounted for.
        want = [iso(t) for t in range(int(first) // 2 * 2 + 2, int(last) - 6, 2)]
        lost = [t for t in want if t not in ran and t not in missed]
        self.assertEqual(lost, [], "ticks neither run nor recorded missed")
        self.assertGreater(len(missed), 0, "the backlog must have made some ticks miss")
        self.assertGreater(len(ran), len(want) // 2)

    def test_a_tick_without_a_lease_is_recorded_missed(self):
        self.start_zookeeper()
        rec = self.record_file()
        for n in ("alpha", "beta"):
            jobs = {"busy": {"command": rec.command(n, hold_ms=4500), "schedule": "@every 1s",
                             "start_deadline": "600ms"}}
            self.start(n, jobs)
        kz = self.kazoo()
        self.wait_until(lambda: any(r["reason"] == "missed" for r in self.runs(kz, "busy")),
                        timeout=30, msg="no tick was recorded as missed")
        missed = [r for r in self.runs(kz, "busy") if r["reason"] == "missed"]
        self.assertEqual(len({r["tick"] for r in missed}), len(missed),
                         "a missed tick is recorded once cluster-wide")
        self.assertEqual(rec.check(leases=1).total, 0)

    def test_a_new_job_starts_with_its_next_tick(self):
        """A job the cluster has never had (no record) runs no tick due before its record was
        made, even one still inside its start_deadline (issue 20, goal 6); it starts with
        the next tick, as cron and Kubernetes do."""
        self.start_zookeeper()
        out = self.path("ticks.txt")
        jobs = {"fresh": {"command": self.tick_log_command(out, "0"), "schedule": "@every 6s",
                          "start_deadline": "5900ms"}}
        p = self.start("alpha", jobs)
        kz = self.kazoo()
        self.wait_until(lambda: kz.exists("/leasekeeper/jobs/fresh"), timeout=30)
        created = kz.exists("/leasekeeper/jobs/fresh").ctime / 1000.0
        self.wait_until(lambda: len(self.ticks(out)) >= 1, timeout=30)
        first = min(self.ticks(out))
        self.assertGreaterEqual(first, iso(int(created)), "a tick due before the job existed ran")
        self.assertNotRegex(p.log_text(), r"job fresh: catching up",
                            "a new job caught up a tick")

    def test_catch_up_after_a_full_outage_runs_the_latest_tick_once(self):
        self.start_zookeeper()
        out = self.path("ticks.txt")
        jobs = {"catch": {"command": self.tick_log_command(out, "0"), "schedule": "@every 5s",
                          "start_deadline": "30s"}}
        procs = [self.start(n, jobs) for n in ("alpha", "beta")]
        self.wait_until(lambda: len(self.ticks(out)) >= 1, timeout=30)
        for p in procs:
            p.signal(signal.SIGTERM)
        for p in procs:
            self.assertEqual(p.wait(timeout=10), 0)
        before = set(self.ticks(out))
        time.sleep(11)  # two ticks pass with nobody running
        t_restart = time.time()
        p = self.start("alpha", jobs)
        # The latest tick due when the job went ready is caught up; which tick that is depends
        # on how long the worker took to start here, so the worker's log names it.
        caught = p.wait_log(r"job catch: catching up the tick of ([0-9T:-]+)(?:\.\d+)?Z,",
                            timeout=60).group(1) + "Z"
        self.assertGreaterEqual(caught, iso(int(t_restart) // 5 * 5))
        self.wait_until(lambda: caught in self.ticks(out), timeout=60,
                        msg="the caught-up tick %s did not run" % caught)
        new = set(self.ticks(out)) - before
        older = [t for t in new if t < caught]
        self.assertEqual(older, [], "only the latest missed tick is caught up")
        self.assertEqual(self.ticks(out)[caught], ["alpha"])

    def test_run_as_an_unprivileged_user(self):
        self.start_zookeeper()
        os.chmod(self.dir, 0o711)  # nobody must be able to reach its workdir
        d = self.path("shared")
        os.makedirs(d)
        os.chmod(d, 0o1777)
        out = os.path.join(d, "who")
        jobs = {"asnobody": {"command": "id -un > %s; id -gn >> %s; pwd >> %s; umask >> %s; "
                                        "sleep 1000" % (out, out, out, out),
                             "user": "nobody", "group": "nogroup", "workdir": d,
                             "umask": "027"}}
        self.start("alpha", jobs, worker={"allow_root_jobs": False})
        self.wait_until(lambda: len(read(out).split()) >= 4, timeout=30)
        self.assertEqual(read(out).split(), ["nobody", "nogroup", d, "0027"])

    def test_root_jobs_need_allow_root_jobs(self):
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:1", safety=SAFETY,
                                jobs={"rootjob": {"command": "true"}})
        r = subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg], capture_output=True,
                           text=True, timeout=30)
        if os.geteuid() == 0:
            self.assertEqual(r.returncode, 1)
            self.assertIn("allow_root_jobs", r.stderr)
        else:
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_reload_keeps_an_unchanged_running_job(self):
        self.start_zookeeper()
        rec = self.record_file()
        base = {"keep": {"command": rec.command("keep")}}
        p = self.start("alpha", base)
        keep = rec.wait_for("start", who="keep", timeout=30)[0]
        jobs_file = self.path("alpha", "jobs", "jobs.ini")
        with open(jobs_file, "a") as f:
            f.write("[job added]\ncommand = %s\n" % rec.command("added", lock=False))
        p.signal(signal.SIGHUP)
        p.wait_log(r"reloaded: 2 job\(s\)", timeout=10)
        rec.wait_for("start", who="added", timeout=20)
        self.assertEqual([s.pid for s in rec.starts("keep")], [keep.pid])
        self.assertEqual(rec.count("death", "keep") + rec.count("end", "keep"), 0,
                         "reload must not touch an unchanged running job")
        # A changed job restarts; a removed job stops and releases its lease.
        lktest.write_ini(jobs_file, {"job keep": {"command": rec.command("keep"),
                                                  "env": "CHANGED=1"}})
        p.signal(signal.SIGHUP)
        p.wait_log(r"reloaded: 1 job\(s\)", timeout=10)
        self.wait_until(lambda: rec.count("start", "keep") == 2, timeout=20,
                        msg="the changed job did not restart")
        rec.wait_for("death", who="added", timeout=20)
        kz = self.kazoo()
        self.wait_until(lambda: kz.get_children("/leasekeeper/mutex/added") == [], timeout=10)
        self.assertEqual(rec.check(who="keep").total, 0)

    def test_a_reload_reverted_while_the_old_copy_stops_keeps_the_job(self):
        """Change a job, reload, change it back and reload again while the first copy is
        still stopping (it ignores SIGTERM): the job must end up running, not vanish."""
        self.start_zookeeper()
        rec = self.record_file()
        original = {"command": rec.command("flip", ignore_term=True), "kill_grace": "1500ms"}
        p = self.start("alpha", {"flip": original})
        rec.wait_for("start", who="flip", timeout=30)
        jobs_file = self.path("alpha", "jobs", "jobs.ini")
        lktest.write_ini(jobs_file, {"job flip": dict(original, env="CHANGED=1")})
        p.signal(signal.SIGHUP)
        p.wait_log(r"reload: job flip changed", timeout=10)
        lktest.write_ini(jobs_file, {"job flip": original})
        p.signal(signal.SIGHUP)
        p.wait_log(r"reloaded: 1 job\(s\)", timeout=10)
        p.wait_log(r"reloaded: 1 job\(s\)", timeout=10)
        # The first copy dies at its kill_grace; a copy with the original settings runs.
        self.wait_until(lambda: rec.count("start", "flip") >= 2 and
                        len([r for r in rec.records() if r.kind == "start"]) -
                        len([r for r in rec.records() if r.kind == "death"]) == 1,
                        timeout=20, msg="no copy of the job is running after the reloads")
        time.sleep(1.5)
        live = {r.pid for r in rec.starts("flip")} - {r.pid for r in rec.records()
                                                       if r.kind == "death"}
        self.assertEqual(len(live), 1)
        self.assertEqual(rec.check(who="flip").total, 0)

    def test_a_reload_that_changes_a_running_jobs_lock_waits_for_the_old_copy(self):
        """A running job's lock changes (locks = other) and the worker reloads: the old copy,
        which ignores SIGTERM, runs on until its kill_grace; the new copy takes another lock,
        so nothing but the worker keeps the two apart: it must not start before the old one
        is gone (found by test_rwlock's lock_mode change under load: 37 ms of overlap)."""
        self.start_zookeeper(tick_ms=1000)  # a 16 s session: a 6 s kill_grace for the old copy
        rec = self.record_file()
        original = {"command": rec.command("flip", ignore_term=True), "kill_grace": "6s"}
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "16s"},
                                safety=SAFETY, worker={"allow_root_jobs": True},
                                jobs={"flip": original})
        p = self.worker(cfg, name="alpha")
        p.wait_log(r"registered as", timeout=30)
        rec.wait_for("start", who="flip", timeout=30)
        jobs_file = self.path("alpha", "jobs", "jobs.ini")
        lktest.write_ini(jobs_file, {"job flip": dict(original, locks="other")})
        p.signal(signal.SIGHUP)
        p.wait_log(r"reload: job flip changed", timeout=10)
        # The documented change of a job's locks: set-leases clears the recorded ones, so the
        # new copy agrees with the record at once, while the old one is still stopping.
        r = subprocess.run([lktest.leasekeeper_bin(), "set-leases", "--zk",
                            self.zk.connect_string, "flip", "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        cleared = time.monotonic_ns()
        self.wait_until(lambda: rec.count("start", "flip") >= 2, timeout=30,
                        msg="the new copy never started")
        self.wait_until(lambda: any(r.kind in ("end", "death") for r in rec.records()),
                        timeout=30, msg="the old copy's end")
        first_end = min(r.t_ns for r in rec.records() if r.kind in ("end", "death"))
        self.assertGreater(first_end, cleared, "the old copy ended before set-leases: "
                           "the window this test needs was not made")
        self.assertEqual(rec.check(who="flip").total, 0, "two copies of flip ran at once")
        p.wait_log(r"job flip: starts once its previous copy has stopped", since=0, timeout=10)
        p.wait_log(r"job flip: its previous copy has stopped: starting", since=0, timeout=10)

    def test_a_bad_reload_is_refused_whole(self):
        self.start_zookeeper()
        rec = self.record_file()
        p = self.start("alpha", {"keep": {"command": rec.command("keep")}})
        keep = rec.wait_for("start", who="keep", timeout=30)[0]
        jobs_file = self.path("alpha", "jobs", "jobs.ini")
        with open(jobs_file, "a") as f:
            f.write("[job other]\ncomand = true\n")
        p.signal(signal.SIGHUP)
        p.wait_log(r"jobs\.ini:\d+: unknown key \"comand\"", timeout=10)
        p.wait_log(r"reload refused: \d+ error\(s\); the running configuration stays", timeout=10)
        time.sleep(1)
        self.assertTrue(p.alive())
        self.assertEqual([s.pid for s in rec.starts("keep")], [keep.pid])
        self.assertEqual(rec.count("death", "keep"), 0)

    def test_on_shutdown_wait_lets_the_run_finish(self):
        self.start_zookeeper()
        rec = self.record_file()
        p = self.start("alpha", {"w": {"command": rec.command("w", hold_ms=2500),
                                       "schedule": "@every 10s", "start_deadline": "8s",
                                       "on_shutdown": "wait"}})
        rec.wait_for("start", who="w", timeout=30)
        p.signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=20), 0)
        end = rec.wait_for("end", who="w", timeout=5)[0]
        self.assertEqual(end.fields.get("reason"), "done", "the run finished on its own")

    def test_status_and_next(self):
        self.start_zookeeper()
        out = self.path("ticks.txt")
        jobs = {"report": {"command": self.tick_log_command(out, "0"), "schedule": "@every 2s"}}
        self.start("alpha", jobs)
        self.wait_until(lambda: len(self.ticks(out)) >= 2, timeout=30)
        cfg = self.path("alpha", "worker.ini")
        time.sleep(0.5)
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("next tick", r.stdout)
        self.assertRegex(r.stdout, r"last runs:\n\s+\S+\s+ok\s+alpha\s+exit 0")
        r = subprocess.run([lktest.leasekeeper_bin(), "next", "-c", cfg, "report", "-n", "3"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        times = re.findall(r"\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\)", r.stdout)
        self.assertEqual(len(times), 3)
        secs = [time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ")) for t in times]
        self.assertEqual([b - a for a, b in zip(secs, secs[1:])], [2.0, 2.0])


if __name__ == "__main__":
    lktest.main()

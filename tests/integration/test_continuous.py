#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=600 split
"""@continuous jobs in `leasekeeper run`, three workers on one ZooKeeper: one holder of a
mutex job, two of a 2-lease semaphore job, graceful hand-over, restarts with back-off and
hand-over after repeated failures, the job environment, lease-count conflicts and
set-leases, a job that cannot start, the per-job log and its cap, the HTTP endpoint, and
a supervisor killed under a running job."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NAMES = ("alpha", "beta", "gamma")


read = lktest.read_text
T = "4s"
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}


class ContinuousTest(lktest.TestCase):
    def start_workers(self, jobs_for, names=NAMES, http=False, hosts=None, session=T):
        """One worker per name; jobs_for(name) gives its jobs dict. Returns {name: Proc}."""
        procs = {}
        self.ports = getattr(self, "ports", {})
        for n in names:
            extra = {}
            if http:
                self.ports[n] = lktest.free_port()
                extra["http"] = {"listen": "127.0.0.1:%d" % self.ports[n]}
            cfg = self.write_config(name=n, hosts=hosts, zookeeper={"session_timeout": session},
                                    safety=SAFETY, worker={"allow_root_jobs": True},
                                    jobs=jobs_for(n), extra=extra)
            procs[n] = self.worker(cfg, name=n)
        for n in names:
            procs[n].wait_log(r"registered as", timeout=30)
        return procs

    def record_job(self, rec, **kw):
        def jobs_for(name):
            return {"work": dict({"command": rec.command(name), "restart_backoff": "1s"}, **kw)}
        return jobs_for

    def running(self, rec):
        """Names whose latest run has started and not ended or died."""
        live = {}
        for r in rec.records():
            if r.kind == "start":
                live[r.pid] = r.who
            elif r.kind in ("end", "death"):
                live.pop(r.pid, None)
        return sorted(live.values())

    def http_get(self, name, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.ports[name], path),
                                    timeout=10) as r:
            return r.status, r.read().decode()

    def test_mutex_job_runs_on_exactly_one_worker(self):
        self.start_zookeeper()
        rec = self.record_file()
        self.start_workers(self.record_job(rec, lock="shared-lock"))
        rec.wait_for("start", timeout=30)
        time.sleep(3)
        self.assertEqual(len(self.running(rec)), 1)
        self.assertEqual(len(rec.starts()), 1)
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "--zk", self.zk.connect_string,
                            "--json"], capture_output=True, text=True, timeout=60)
        job = [j for j in json.loads(r.stdout)["jobs"] if j["name"] == "work"][0]
        # Without a configuration, status finds the lock through the job's record.
        self.assertEqual(job["lock_path"], "/leasekeeper/mutex/shared-lock")
        self.assertEqual(len(job["holders"]), 1)
        self.assertEqual(len(job["waiters"]), 2)
        self.assertEqual(job["holders"][0]["node"], self.running(rec)[0])
        self.assertEqual(len(json.loads(r.stdout)["workers"]), 3)
        self.assert_safe(rec)

    def assert_safe(self, rec, leases=1):
        rep = rec.check(leases=leases)
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))
        return rep

    def test_semaphore_job_runs_on_two_workers(self):
        self.start_zookeeper()
        rec = self.record_file()

        def jobs_for(name):
            return {"pool": {"command": rec.command(name, slots=2), "leases": 2}}

        self.start_workers(jobs_for)
        rec.wait_for("start", count=2, timeout=30)
        time.sleep(3)
        self.assertEqual(len(self.running(rec)), 2)
        self.assertEqual(len(rec.starts()), 2)
        self.assert_safe(rec, leases=2)

    def test_graceful_stop_hands_over_within_about_a_second(self):
        self.start_zookeeper()
        rec = self.record_file()
        procs = self.start_workers(self.record_job(rec))
        handovers = []
        for _ in range(3):
            first = rec.wait_for("start", count=len(handovers) + 1, timeout=30)[-1]
            holder = first.who
            t0 = time.monotonic_ns()
            procs[holder].signal(signal.SIGTERM)
            self.assertEqual(procs[holder].wait(timeout=10), 0)
            nxt = rec.wait_for("start", count=len(handovers) + 2, timeout=20)[-1]
            self.assertNotEqual(nxt.who, holder)
            handovers.append((nxt.t_ns - t0) / 1e6)
            # the stopped worker comes back and queues again
            procs[holder] = self.worker(self.path(holder, "worker.ini"), name=holder + "-again")
            procs[holder].wait_log(r"registered as", timeout=30)
        print("\ngraceful hand-over, SIGTERM to the next start (ms): %s" %
              ", ".join("%.0f" % h for h in handovers), file=sys.stderr)
        self.assertLess(max(handovers), 5000)
        self.assert_safe(rec)

    def test_second_sigterm_kills_the_jobs_before_closing_the_session(self):
        """A job that ignores SIGTERM, and the operator asks twice: the worker must kill the
        job (and its group) before it closes the session, which hands the lease over."""
        self.start_zookeeper()
        rec = self.record_file()

        def jobs_for(name):
            return {"stubborn": {"command": rec.command(name, ignore_term=True, grandchildren=2),
                                 "kill_grace": "1500ms"}}

        procs = self.start_workers(jobs_for, names=("alpha", "beta"))
        first = rec.wait_for("start", timeout=30)[0]
        holder = procs[first.who]
        holder.signal(signal.SIGTERM)
        time.sleep(0.2)
        holder.signal(signal.SIGTERM)
        self.assertEqual(holder.wait(timeout=20), 0)
        self.assertRegex(holder.log_text(), r"job\(s\) still running: killing them before the "
                                            r"session is closed")
        rec.wait_for("start", count=2, timeout=20)
        rep = rec.check(leases=1)
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))

    def test_restarts_with_backoff_then_hands_the_lease_over(self):
        self.start_zookeeper()
        rec = self.record_file()

        def jobs_for(name):
            return {"flaky": {"command": rec.command(name, hold_ms=50, exit=3),
                              "restart_backoff": "1s", "max_failures": 3}}

        procs = self.start_workers(jobs_for)
        first = rec.wait_for("start", timeout=30)[0].who
        starts = rec.wait_for("start", count=4, timeout=30)
        mine = [s for s in starts if s.who == first]
        self.assertGreaterEqual(len(mine), 3)
        self.assertNotEqual(starts[3].who, first, "after 3 failures another host takes over")
        procs[first].wait_log(r"failed 3 times in a row: giving the lease up", timeout=10)
        # The back-off doubles (base * 2^(n-1), +-20% jitter). The gaps between starts also
        # hold a run, a process start and a lease, which a busy machine stretches unevenly, so
        # the growth is asserted on the delays the worker chose, and the gaps only bound below.
        delays = [int(procs[first].wait_log(r"job flaky: restarting in (\d+) ms", timeout=10,
                                            since=0 if i == 0 else None).group(1))
                  for i in range(2)]
        base = 1000
        self.assertTrue(0.8 * base <= delays[0] <= 1.2 * base, "first back-off %s" % delays)
        self.assertTrue(1.6 * base <= delays[1] <= 2.4 * base, "second back-off %s" % delays)
        self.assertGreater(delays[1], delays[0], "the back-off must grow: %s" % delays)
        gaps = [(mine[i + 1].t_ns - mine[i].t_ns) / 1e6 for i in range(2)]
        for gap, delay in zip(gaps, delays):
            self.assertGreaterEqual(gap, delay, "a restart came before its back-off ran out")
        self.assert_safe(rec)

    def test_job_environment(self):
        self.start_zookeeper()
        out = self.path("env.out")
        jobs = {"envjob": {"command": "env | grep ^LEASEKEEPER_ | sort > %s.$LEASEKEEPER_NODE;"
                                      " sleep 1000" % out}}
        self.start_workers(lambda n: jobs, names=("alpha",))
        self.wait_until(lambda: os.path.exists(out + ".alpha") and
                        os.path.getsize(out + ".alpha") > 0, timeout=30)
        time.sleep(0.2)
        env = dict(l.split("=", 1) for l in read(out + ".alpha").split())
        self.assertEqual(env["LEASEKEEPER_JOB"], "envjob")
        self.assertEqual(env["LEASEKEEPER_NODE"], "alpha")
        self.assertEqual(env["LEASEKEEPER_LEASES"], "1")
        self.assertEqual(env["LEASEKEEPER_DEADLINE_MS"], "3500")
        kz = self.kazoo()
        node = kz.get_children("/leasekeeper/mutex/envjob")[0]
        czxid = kz.exists("/leasekeeper/mutex/envjob/" + node).czxid
        self.assertEqual(int(env["LEASEKEEPER_FENCE"]), czxid)
        self.assertNotIn("LEASEKEEPER_TICK", env)

    def wait_conflict_metric(self, name):
        want = 'leasekeeper_job_lease_conflict{job_name="shared"} 1'
        self.wait_until(lambda: want in self.http_get(name, "/metrics")[1], timeout=20,
                        msg="%s's /metrics never showed %s" % (name, want))

    def touch_record(self, times=3):
        """Write the job record of "shared" again, as it is but for a note, `times` times a
        second apart: every worker reads it again each time (its watch)."""
        kz = self.kazoo()
        for i in range(times):
            doc = json.loads(kz.get("/leasekeeper/jobs/shared")[0])
            doc["note"] = i
            kz.set("/leasekeeper/jobs/shared", json.dumps(doc).encode())
            time.sleep(1)

    def test_lease_count_conflict_and_set_leases(self):
        """A worker configured with another count than the cluster's does not contend and
        says so (log, metric), once for each count however often it reads the record,
        again after the conflict cleared and came back; set-leases moves the count."""
        said = r"the cluster agreed on %d lease\(s\) but this worker is configured with %d"
        self.start_zookeeper()
        rec = self.record_file()

        def jobs_for(name):
            leases = 1 if name == "alpha" else 2
            return {"shared": {"command": rec.command(name, slots=2), "leases": leases}}

        # alpha first, so that its count (1) is the one the cluster records
        procs = self.start_workers(jobs_for, names=("alpha",), http=True)
        rec.wait_for("start", who="alpha", timeout=30)
        procs.update(self.start_workers(jobs_for, names=("beta",), http=True))
        procs["beta"].wait_log(r"the cluster agreed on 1 lease\(s\) but this worker is "
                               r"configured with 2: not contending", timeout=20)
        self.wait_conflict_metric("beta")
        self.touch_record()
        self.assertEqual(rec.count("start", "beta"), 0)
        r = subprocess.run([lktest.leasekeeper_bin(), "set-leases", "--zk",
                            self.zk.connect_string, "shared", "2"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        rec.wait_for("start", who="beta", timeout=20)
        procs["alpha"].wait_log(r"the cluster agreed on 2 lease\(s\) but this worker is "
                                r"configured with 1", timeout=20)
        self.wait_until(lambda: self.running(rec) == ["beta"], timeout=20,
                        msg="alpha must stop its run once the count changed")
        # The run's end reaches the worker through the supervisor a moment after the process
        # is gone: wait for the worker to settle in the conflict.
        self.wait_conflict_metric("alpha")
        self.touch_record()
        # beta read the record three times in the conflict, alpha three times in its own
        # (with the count of 2): each said its conflict once.
        self.assertEqual(len(re.findall(said % (1, 2), procs["beta"].log_text())), 1)
        self.assertEqual(len(re.findall(said % (2, 1), procs["alpha"].log_text())), 1)
        self.wait_conflict_metric("alpha")
        # The recorded lock moved to the semaphore folder with the count: status without a
        # configuration finds the holder there.
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "--zk", self.zk.connect_string,
                            "--json"], capture_output=True, text=True, timeout=60)
        job = [j for j in json.loads(r.stdout)["jobs"] if j["name"] == "shared"][0]
        self.assertEqual(job["lock_path"], "/leasekeeper/semaphore/shared")
        self.assertEqual([h["node"] for h in job["holders"]], ["beta"])
        # A typo is refused rather than recorded.
        r = subprocess.run([lktest.leasekeeper_bin(), "set-leases", "--zk",
                            self.zk.connect_string, "sharde", "2"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--create", r.stderr)
        self.assertIsNone(self.kazoo().exists("/leasekeeper/jobs/sharde"))
        # The count back to 1: beta's conflict, cleared meanwhile, comes back and is said again.
        r = subprocess.run([lktest.leasekeeper_bin(), "set-leases", "--zk",
                            self.zk.connect_string, "shared", "1"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_until(lambda: len(re.findall(said % (1, 2), procs["beta"].log_text())) == 2,
                        timeout=20, msg="beta's conflict said again once it came back")
        procs["alpha"].wait_log(r"job shared: the cluster now agrees on 1 lease", timeout=20)

    def test_a_job_that_cannot_start_is_recorded_and_the_worker_runs_on(self):
        self.start_zookeeper()
        rec = self.record_file()
        jobs = {"broken": {"command": "/nonexistent/program --flag", "shell": False,
                           "restart_backoff": "1s", "max_failures": 2},
                "fine": {"command": rec.command("alpha")}}
        procs = self.start_workers(lambda n: jobs, names=("alpha",))
        procs["alpha"].wait_log(r"job broken: could not start: exec /nonexistent/program",
                                timeout=30)
        rec.wait_for("start", who="alpha", timeout=30)
        kz = self.kazoo()
        self.wait_until(lambda: kz.exists("/leasekeeper/jobs/broken/runs") and
                        kz.get_children("/leasekeeper/jobs/broken/runs"), timeout=20)
        run = kz.get_children("/leasekeeper/jobs/broken/runs")[0]
        data = json.loads(kz.get("/leasekeeper/jobs/broken/runs/" + run)[0])
        self.assertEqual(data["reason"], "failed")
        self.assertIn("/nonexistent/program", data["error"])
        self.assertTrue(procs["alpha"].alive())

    def test_output_goes_to_a_capped_log_file(self):
        self.start_zookeeper()
        jobs = {"chatty": {"command": "i=0; while [ $i -lt 400 ]; do echo line $i "
                                      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; "
                                      "i=$((i+1)); done; sleep 1000",
                           "log_max": "4K"}}
        self.start_workers(lambda n: jobs, names=("alpha",))
        log = self.path("alpha", "state", "jobs", "chatty.log")
        self.wait_until(lambda: os.path.exists(log + ".1"), timeout=30,
                        msg="the log was never rotated")
        self.wait_until(lambda: "line 399" in read(log), timeout=30)
        self.assertLessEqual(os.path.getsize(log), 4096)
        self.assertLessEqual(os.path.getsize(log + ".1"), 4096)
        self.assertIn("line 398", read(log) + read(log + ".1"))

    def test_http_status_and_health(self):
        self.start_zookeeper()
        rec = self.record_file()
        self.start_workers(self.record_job(rec), names=("alpha",), http=True)
        rec.wait_for("start", who="alpha", timeout=30)
        code, body = self.http_get("alpha", "/health")
        self.assertEqual(code, 200)
        code, body = self.http_get("alpha", "/status")
        st = json.loads(body)
        self.assertEqual(st["node"], "alpha")
        self.assertEqual(st["session_state"], "CONNECTED")
        self.assertGreater(st["lease_deadline_in_ms"], 0)
        job = st["jobs"][0]
        self.assertEqual((job["name"], job["state"], job["lease_held"]), ("work", "RUNNING", True))
        self.assertGreater(job["fence"], 0)
        code, metrics = self.http_get("alpha", "/metrics")
        self.assertIn('leasekeeper_job_running{job_name="work"} 1', metrics)
        # Prometheus' format: each metric's samples right after its own TYPE line.
        current, seen = None, set()
        for line in metrics.splitlines():
            if line.startswith("# TYPE "):
                current = line.split()[2]
                self.assertNotIn(current, seen, "metric %s appears twice" % current)
                seen.add(current)
            elif not line.startswith("#"):
                # A histogram's samples are NAME_bucket, NAME_sum and NAME_count.
                self.assertIn(line.split("{")[0].split()[0],
                              [current] + [current + s for s in ("_bucket", "_sum", "_count")],
                              line)

    def test_a_lease_whose_node_is_deleted_is_lost(self):
        """While alpha's connection is blackholed, its lock node is deleted by hand. Once the
        news arrives, alpha must kill the run at once (another host could take the lease
        now) and contend again."""
        self.start_zookeeper()
        rec = self.record_file()
        proxy = self.proxy()
        procs = self.start_workers(self.record_job(rec), names=("alpha",),
                                   hosts=proxy.connect_string)
        first = rec.wait_for("start", who="alpha", timeout=30)[0]
        kz = self.kazoo()
        folder = "/leasekeeper/mutex/work"
        node = kz.get_children(folder)[0]
        proxy.blackhole()
        try:
            kz.delete(folder + "/" + node)
            time.sleep(1.0)
        finally:
            proxy.heal()
        procs["alpha"].wait_log(r"lease lost: lock node .* vanished", timeout=20)
        death = [d for d in rec.wait_for("death", who="alpha", timeout=10) if d.pid == first.pid]
        self.assertEqual(len(death), 1)
        second = rec.wait_for("start", who="alpha", count=2, timeout=20)[1]
        self.assertGreater(second.t_ns, death[0].t_ns)
        self.assertEqual(len(kz.get_children(folder)), 1)
        self.assertNotEqual(kz.get_children(folder)[0], node)
        self.assert_safe(rec)

    def test_server_restart_verifies_the_lease_and_keeps_the_run(self):
        # The run survives the restart only if the server is back within T - safety_margin -
        # kill_grace. A restart on a busy 2-core machine was seen to take 10 s, and varies
        # from one restart to the next: the session gets the most the server allows (tickTime
        # 2 s: 40 s), and the restart's length is reported.
        zk = self.start_zookeeper(tick_ms=2000)
        session = 40.0
        rec = self.record_file()
        procs = self.start_workers(self.record_job(rec), names=("alpha",),
                                   session="%dms" % int(session * 1000))
        first = rec.wait_for("start", who="alpha", timeout=30)[0]
        t0 = time.monotonic()
        zk.restart(timeout=30)
        print("the restart took %.1f s (budget %.1f s)" % (time.monotonic() - t0, session - 1.5))
        procs["alpha"].wait_log(r"session 0x[0-9a-f]+ reconnected", timeout=session + 5)
        procs["alpha"].wait_log(r"job work: lease verified after the reconnect", timeout=30)
        time.sleep(1.0)
        self.assertEqual([r.pid for r in rec.starts()], [first.pid])
        self.assertEqual(rec.count("death") + rec.count("end"), 0)

    def test_killed_supervisor_kills_the_job_and_the_worker_recovers(self):
        self.start_zookeeper()
        rec = self.record_file()

        def jobs_for(name):
            return {"work": {"command": rec.command(name, grandchildren=2),
                             "restart_backoff": "1s"}}

        procs = self.start_workers(jobs_for, names=("alpha",))
        first = rec.wait_for("start", who="alpha", timeout=30)[0]
        sv = int(re.search(r"supervisor pid (\d+)", procs["alpha"].log_text()).group(1))
        os.kill(sv, signal.SIGKILL)
        rec.wait_for("death", who="alpha", timeout=10)
        procs["alpha"].wait_log(r"started a new supervisor", timeout=20)
        second = rec.wait_for("start", count=2, timeout=30)[1]
        self.assertNotEqual(second.pid, first.pid)
        # The grandchildren held the flock too: a second start that found it held would
        # have written an overlap line.
        self.assert_safe(rec)


if __name__ == "__main__":
    lktest.main()

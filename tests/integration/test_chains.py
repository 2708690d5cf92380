#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Chained jobs (`after = JOB`) against a real ZooKeeper and two workers. A child runs once
per parent run that ended as it asks (ok, :failed, :any), never twice, whichever of the two
workers runs it, with LEASEKEEPER_PARENT_RUN naming that run; a join runs once per new run
of every parent and uses no parent run twice; a child placed on the other worker than its
parent runs there; a parent run that ends while no worker carries its child is caught up
within the child's start_deadline, and past it recorded missed (the child's worker stopped,
then down and started again), and a catch-up of 22 missed parent runs records them apart
from the child's runs (which are all recorded after it); on three workers, a -> b and c
after (a, b) answer each run of a exactly once through a SIGSTOP of a's worker at the end of
a run and through reloads that leave no worker carrying b and c (shorter and longer than
their start_deadline); a reload that removes a child while its worker's claim of a parent
run is out (a proxy delays that worker's connection) gives the run back, and another worker
runs it (ci14's lost run); a worker whose lease of the child is lost while its claim of a
parent run is out (its lock node deleted while the claim is held on its way; its session
expired while the claim's answer was lost) gives the run back once the claim is known to have
landed, and the run is answered once;
`check` refuses a cycle and an unknown parent with file and line."""

import json
import os
import re
import signal
import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
# A schedule whose ticks never come within a test (Feb 29, 03:17): its runs are manual ones.
# ("@every 1h" came due at 00:00 during a test run past midnight, a second run of a.)
NEVER = "17 3 29 2 *"
read = lktest.read_text


def parent_and_child(a_out, b_out):
    """a (manual runs only, placed on alpha) writes its run id to a_out; b, after a, writes
    the parent run it answers and its node to b_out."""
    a_job = {"command": 'echo "$LEASEKEEPER_RUN_ID" >> %s' % a_out, "schedule": NEVER,
             "constraint": "host=alpha", "history": 100}
    b_job = {"command": 'echo "$LEASEKEEPER_PARENT_RUN $LEASEKEEPER_NODE" >> %s' % b_out,
             "after": "a", "start_deadline": "120s", "history": 100}
    return a_job, b_job


class ChainCase(lktest.TestCase):
    def cluster(self, jobs, names=("alpha", "beta")):
        self.start_zookeeper(tick_ms=500)
        self.workers = {}
        for n in names:
            cfg = self.write_config(name=n, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                    worker={"allow_root_jobs": True, "labels": "host=" + n},
                                    jobs=jobs)
            p = self.worker(cfg, name=n)
            p.wait_log(r"registered as", timeout=30)
            self.workers[n] = (cfg, p)

    def lines(self, path):
        return [x.split() for x in read(path).split("\n")[:-1]] if os.path.exists(path) else []

    def answered_once_by(self, kz, b_out):
        """a's one run was answered by b once: run once (recorded with its parent run, its
        command's line in b_out), nothing recorded missed. a is paused first."""
        self.assertEqual(self.cli("pause", "a").returncode, 0)
        self.settle(kz, ["a", "b"], quiet=4)
        a_ids = [r["run_id"] for r in self.runs(kz, "a") if r.get("run_id")]
        b_recs = self.runs(kz, "b")
        self.assertEqual(len(a_ids), 1, a_ids)
        self.assertEqual([r["after"][0]["run_id"] for r in b_recs if r.get("run_id")], a_ids,
                         b_recs)
        self.assertEqual([r for r in b_recs if not r.get("run_id")], [], b_recs)
        self.assertEqual([x[0] for x in self.lines(b_out)], a_ids)

    def settle(self, kz, jobs, quiet=4.0, timeout=60):
        """Wait until the run records of jobs stop changing for `quiet` seconds."""
        last, since = None, time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = [len([r for r in self.runs(kz, j) if r.get("outcome") != "paused"])
                   for j in jobs]
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.3)
        self.fail("the runs of %s did not settle" % (jobs,))


class ChainTest(ChainCase):
    def test_once_per_parent_run_failed_join_and_placement(self):
        cnt, out = self.path("count"), {j: self.path(j + ".txt") for j in "bfjy"}
        # a fails on every third run (its runs are one at a time: one lease).
        a_cmd = ('n=$(( $(cat %s 2>/dev/null || echo 0) + 1 )); echo $n > %s; '
                 '[ $((n %% 3)) -ne 0 ]' % (cnt, cnt))
        child = 'echo "$LEASEKEEPER_PARENT_RUN $LEASEKEEPER_NODE $LEASEKEEPER_PARENT_OUTCOME" >> %s'
        self.cluster({
            "a": {"command": a_cmd, "schedule": "@every 3s", "history": 100},
            "c": {"command": "true", "schedule": "@every 2s", "history": 100},
            "b": {"command": child % out["b"], "after": "a", "start_deadline": "20s",
                  "history": 100},
            "f": {"command": child % out["f"], "after": "a:failed", "start_deadline": "20s",
                  "history": 100},
            "j": {"command": child % out["j"], "after": "a:any, c:any", "start_deadline": "20s",
                  "history": 100},
            "x": {"command": "true", "schedule": "@every 3s", "constraint": "host=alpha",
                  "history": 100},
            "y": {"command": child % out["y"], "after": "x", "constraint": "host=beta",
                  "start_deadline": "20s", "history": 100},
        })
        kz = self.kazoo()
        self.wait_until(lambda: len(self.runs(kz, "a")) >= 7, timeout=90, msg="7 runs of a")
        for j in ("a", "c", "x"):
            r = self.cli("pause", j)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.settle(kz, ["a", "c", "x", "b", "f", "j", "y"])

        a_runs = [r for r in self.runs(kz, "a") if r.get("run_id")]
        ok = [r["run_id"] for r in a_runs if r["outcome"] == "ok"]
        failed = [r["run_id"] for r in a_runs if r["outcome"] != "ok"]
        self.assertTrue(ok and failed, a_runs)
        # b: once per ok run of a, exactly; f: once per failed run, exactly.
        self.assertEqual(sorted(x[0] for x in self.lines(out["b"])), sorted(ok))
        self.assertEqual(sorted(x[0] for x in self.lines(out["f"])), sorted(failed))
        self.assertEqual({x[2] for x in self.lines(out["b"])}, {"ok"})
        # Both workers carry b: whichever ran it, its record names the parent's run.
        b_recs = [r for r in self.runs(kz, "b") if r.get("run_id")]
        self.assertEqual(sorted(r["after"][0]["run_id"] for r in b_recs), sorted(ok))
        # The join: each line names one run of a and one of c; no parent run twice.
        joins = [x[0].split(",") for x in self.lines(out["j"])]
        self.assertGreaterEqual(len(joins), 3, joins)
        c_ids = {r["run_id"] for r in self.runs(kz, "c") if r.get("run_id")}
        a_ids = {r["run_id"] for r in a_runs}
        for pair in joins:
            self.assertEqual(len(pair), 2, joins)
            self.assertIn(pair[0], a_ids)
            self.assertIn(pair[1], c_ids)
        used = [p for pair in joins for p in pair]
        self.assertEqual(len(used), len(set(used)), "a parent run joined twice: %s" % joins)
        # Placement: x runs on alpha only, y on beta only, once per run of x.
        x_ok = [r["run_id"] for r in self.runs(kz, "x") if r.get("outcome") == "ok"]
        self.assertTrue(x_ok)
        self.assertEqual({r["node"] for r in self.runs(kz, "x") if r.get("run_id")}, {"alpha"})
        self.assertEqual(sorted(x[0] for x in self.lines(out["y"])), sorted(x_ok))
        self.assertEqual({x[1] for x in self.lines(out["y"])}, {"beta"})
        # status shows the chain: parents, children, and the parent run a run answers.
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", self.workers["alpha"][0]],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"after\s+a:any, c:any")
        self.assertRegex(r.stdout, r"then\s+b \(after a\), f \(after a:failed\), j \(after a:any\)")
        self.assertIn("after=" + b_recs[-1]["after"][0]["run_id"], r.stdout)
        doc = json.loads(subprocess.run([lktest.leasekeeper_bin(), "status", "--json", "-c",
                                         self.workers["alpha"][0]], capture_output=True,
                                        text=True, timeout=120).stdout)
        j_doc = [x for x in doc["jobs"] if x.get("name") == "j"][0]
        self.assertEqual(j_doc["after"], ["a:any", "c:any"])
        # next: the chain, and no fire times of its own.
        r = subprocess.run([lktest.leasekeeper_bin(), "next", "-c", self.workers["alpha"][0], "j"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("j: runs after a:any, c:any", r.stdout)
        print("\nchains: %d runs of a (%d ok), %d of b, %d of f, %d joins, %d of y"
              % (len(a_runs), len(ok), len(self.lines(out["b"])), len(self.lines(out["f"])),
                 len(joins), len(self.lines(out["y"]))))

    def test_catch_up_within_start_deadline_else_missed(self):
        out = self.path("y.txt")
        jobs = {
            "x": {"command": "true", "schedule": "@every 2s", "constraint": "host=alpha",
                  "history": 100},
            "y": {"command": 'echo "$LEASEKEEPER_PARENT_RUN" >> %s' % out, "after": "x",
                  "constraint": "host=beta", "start_deadline": "8s", "history": 100},
        }
        self.cluster(jobs)
        kz = self.kazoo()
        # y's first run recorded (not only run: a record written across the stop below
        # could be written twice, as a lost answer's create is retried).
        self.wait_until(lambda: [r for r in self.runs(kz, "y") if r.get("run_id")], timeout=60,
                        msg="y after x")
        # beta, the only worker that carries y, stops (SIGSTOP: its session expires, its
        # memory stays): x goes on running on alpha.
        beta = self.workers["beta"][1]
        beta.signal(signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            self.wait_until(lambda: time.monotonic() - stopped_at > 14, timeout=30, interval=0.5)
            self.assertEqual(self.cli("pause", "x").returncode, 0)
        finally:
            beta.signal(signal.SIGCONT)
        self.settle(kz, ["x", "y"], quiet=6)
        first = self.check_answered(kz, out)
        # Then beta is down (a new process later: nothing of the chain in memory).
        beta.stop()
        self.assertEqual(self.cli("resume", "x").returncode, 0)
        down_at = time.monotonic()
        self.wait_until(lambda: time.monotonic() - down_at > 12, timeout=30, interval=0.5)
        self.assertEqual(self.cli("pause", "x").returncode, 0)
        self.worker(self.workers["beta"][0], name="beta-2").wait_log(r"registered as", timeout=30)
        self.settle(kz, ["x", "y"], quiet=6)
        second = self.check_answered(kz, out)
        self.assertGreater(second[0], first[0], "nothing caught up after the restart")
        self.assertGreater(second[1], first[1], "nothing recorded missed after the restart")
        print("\ncatch-up: y ran %d and missed %d after SIGSTOP, %d and %d after a restart"
              % (first[0], first[1], second[0] - first[0], second[1] - first[1]))

    def test_missed_parent_runs_do_not_take_the_runs_records(self):
        """A catch-up records its missed parent runs apart from the child's runs (the window
        of missed and paused records, 600 a minute), so that its run records after it, in
        the same minute, are all written: 22 or more missed at once and 12 runs more than
        the 30 run records a minute of a job (without, the last runs go unrecorded)."""
        out = self.path("y.txt")
        jobs = {
            "x": {"command": "true", "schedule": "@every 2s", "constraint": "host=alpha",
                  "history": 200},
            "y": {"command": 'echo "$LEASEKEEPER_PARENT_RUN" >> %s' % out, "after": "x",
                  "constraint": "host=beta", "start_deadline": "4s", "history": 200},
        }
        self.cluster(jobs)
        kz = self.kazoo()
        self.wait_until(lambda: [r for r in self.runs(kz, "y") if r.get("run_id")], timeout=60,
                        msg="y after x")

        def unanswered():
            # A run of x recorded before y's job record was made is not y's (on a busy host
            # alpha's first run can land before beta has made it).
            done = {a["run_id"] for r in self.runs(kz, "y") for a in r.get("after", [])}
            since = kz.exists("/leasekeeper/jobs/y").ctime
            out = []
            for c in kz.get_children("/leasekeeper/jobs/x/runs"):
                data, stat = kz.get("/leasekeeper/jobs/x/runs/" + c)
                r = json.loads(data)
                if stat.ctime >= since and r.get("run_id") and r["run_id"] not in done:
                    out.append(r)
            return out

        # beta, the only worker that carries y, is down while x runs 22 times, and then
        # while x is paused for 11 ticks: the newest 32 records of x, which a worker reads
        # first, hold 21 of its runs at most; it reads the older ones back (without, the
        # runs of x before them went unanswered and unrecorded).
        self.workers["beta"][1].stop()
        self.wait_until(lambda: len(unanswered()) >= 22, timeout=22 * 2 * 5, interval=0.5,
                        msg="22 runs of x while y has no worker")
        self.assertEqual(self.cli("pause", "x").returncode, 0)
        paused = len([r for r in self.runs(kz, "x") if r.get("outcome") == "paused"])
        self.wait_until(lambda: len([r for r in self.runs(kz, "x")
                                     if r.get("outcome") == "paused"]) >= paused + 11,
                        timeout=11 * 2 * 5, interval=0.5, msg="11 paused ticks of x")
        before = len(self.runs(kz, "y"))
        beta = self.worker(self.workers["beta"][0], name="beta-2")
        beta.wait_log(r"registered as", timeout=30)
        self.wait_until(lambda: not unanswered(), timeout=120, interval=0.5,
                        msg="y answers every run of x after beta's restart")
        burst = len(self.runs(kz, "y"))
        # Then 12 runs of y, within the minute of the catch-up's records.
        self.assertEqual(self.cli("resume", "x").returncode, 0)
        ran = len(self.lines(out))  # what ran (a record not written would not count)
        self.wait_until(lambda: len(self.lines(out)) >= ran + 12, timeout=12 * 2 * 5,
                        interval=0.5, msg="12 more runs of y")
        self.assertEqual(self.cli("pause", "x").returncode, 0)
        self.settle(kz, ["x", "y"], quiet=6)
        ran, missed = self.check_answered(kz, out)
        # beta-2 wrote more records than a job's 30 run records a minute: all of them.
        self.assertGreater(len(self.runs(kz, "y")) - before, 30, "too few records to test it")
        dropped = [r for r in self.runs(kz, "y") if "runs_not_recorded" in r]
        self.assertEqual(dropped, [], "records of y not written")
        self.assertNotRegex(beta.log_text(), r"records in the last minute")
        print("\nchain records: y missed %d and ran %d (%d records after the catch-up, %d "
              "before beta's restart)" % (missed, ran, burst, before))

    def check_answered(self, kz, out):
        """Every run of x is answered once by y: run, or recorded missed past its
        start_deadline; y ran exactly the runs its records say. Returns (ran, missed)."""
        x_runs = [r for r in self.runs(kz, "x") if r.get("run_id")]
        y_recs = self.runs(kz, "y")
        # One record per run of y, even one whose write's answer was lost with the session
        # (beta stopped past it): the worker looks for it before writing it again.
        ids = [r["run_id"] for r in y_recs if r.get("run_id")]
        self.assertEqual(len(ids), len(set(ids)), ("a run of y recorded twice", y_recs))
        ran = [r["after"][0]["run_id"] for r in y_recs if r.get("run_id")]
        missed = [r["after"][0]["run_id"] for r in y_recs if r.get("outcome") == "missed"]
        self.assertEqual(sorted(ran + missed), sorted(r["run_id"] for r in x_runs),
                         (x_runs, y_recs))
        self.assertEqual(sorted(x.split()[0] for x in read(out).split("\n")[:-1]), sorted(ran))
        self.assertTrue(missed, "no run of x was past y's start_deadline")
        self.assertGreater(len(ran), 1, "no run of x was caught up after beta came back")
        self.assertTrue(all(r["reason"] == "missed" for r in y_recs if r["outcome"] == "missed"))
        return len(ran), len(missed)


class ChainJoinThreeWorkersTest(ChainCase):
    """a -> b, and c after (a, b), on three workers: through a SIGSTOP of a's worker at the
    end of a run, and two periods in which no worker carries b or c (shorter than their
    start_deadline, and longer)."""

    @staticmethod
    def stopped(pid):
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"

    def drop(self, kids, a_job, dropped):
        """Reload every worker with (dropped) or without (not dropped) the children."""
        for n, (cfg, p) in self.workers.items():
            jobs = {"a": a_job} if dropped else dict(a=a_job, **kids)
            lktest.write_ini(os.path.join(os.path.dirname(cfg), "jobs", "jobs.ini"),
                                  {"job %s" % j: keys for j, keys in jobs.items()})
            p.signal(signal.SIGHUP)
        want = "1 job" if dropped else "3 job"
        for n, (cfg, p) in self.workers.items():
            p.wait_log(r"reloaded: %s\(s\)" % want, timeout=60)

    def check_ran(self, recs, out):
        """The command ran once per run record, never twice: each line names the parent
        runs of one record, no line twice; every ok record wrote its line; a record without
        its line is a run the reload that dropped the job stopped (SIGTERM) before it wrote."""
        ran = {",".join(x["run_id"] for x in r["after"]): r for r in recs if r.get("run_id")}
        lines = [x[0] for x in self.lines(out)]
        self.assertEqual(len(lines), len(set(lines)), "a run twice: %s" % lines)
        self.assertLessEqual(set(lines), set(ran), (lines, recs))
        self.assertEqual(len(ran), len([r for r in recs if r.get("run_id")]), recs)
        for key, r in ran.items():
            if key not in lines:
                self.assertEqual(r["outcome"], "stopped", r)
        self.assertLessEqual({k for k, r in ran.items() if r["outcome"] == "ok"}, set(lines))

    def test_join_through_a_stopped_parent_worker_and_no_carrier(self):
        out = {j: self.path(j + ".txt") for j in "abc"}
        flag, pidf = self.path("stop-now"), self.path("alpha.pid")
        # a's run ends by stopping its own worker's main process when the test asks: the
        # run's end reaches the worker only after SIGCONT, its session long expired.
        a_job = {"command": 'echo "$LEASEKEEPER_RUN_ID" >> %s; if [ -e %s ]; then rm -f %s; '
                            'kill -STOP "$(cat %s)"; fi' % (out["a"], flag, flag, pidf),
                 "schedule": "@every 3s", "constraint": "host=alpha", "history": 200}
        child = 'echo "$LEASEKEEPER_PARENT_RUN $LEASEKEEPER_NODE" >> %s'
        kids = {"b": {"command": child % out["b"], "after": "a:any", "start_deadline": "8s",
                      "history": 200},
                "c": {"command": child % out["c"], "after": "a:any, b", "start_deadline": "8s",
                      "history": 200}}
        self.cluster(dict(a=a_job, **kids), names=("alpha", "beta", "gamma"))
        alpha = self.workers["alpha"][1]
        with open(pidf, "w") as f:
            f.write("%d\n" % alpha.pid)
        kz = self.kazoo()
        self.wait_until(lambda: len([r for r in self.runs(kz, "c") if r.get("run_id")]) >= 1,
                        timeout=60, msg="a first join")
        # The stop: the next run of a stops alpha; it stays stopped twice its session.
        open(flag, "w").close()
        self.wait_until(lambda: not os.path.exists(flag), timeout=30, msg="a run that stops")
        stopped_id = self.lines(out["a"])[-1][0]
        self.wait_until(lambda: self.stopped(alpha.pid), timeout=30, msg="alpha stopped")
        stopped_at = time.monotonic()
        try:
            self.wait_until(lambda: time.monotonic() - stopped_at > 9, timeout=30, interval=0.5)
        finally:
            alpha.signal(signal.SIGCONT)
        self.wait_until(lambda: stopped_id in [r.get("run_id") for r in self.runs(kz, "a")],
                        timeout=60, msg="the stopped run of a recorded")
        n_a = len(self.lines(out["a"]))
        self.wait_until(lambda: len(self.lines(out["a"])) >= n_a + 2, timeout=60,
                        msg="a runs again after SIGCONT")
        # No worker carries b or c for less than their start_deadline: caught up.
        self.drop(kids, a_job, True)
        n_a = len(self.lines(out["a"]))
        self.wait_until(lambda: len(self.lines(out["a"])) > n_a, timeout=30, msg="a while dropped")
        self.drop(kids, a_job, False)
        time.sleep(3)
        # ... and for longer: the oldest runs of a are recorded missed by b.
        self.drop(kids, a_job, True)
        dropped_at = time.monotonic()
        self.wait_until(lambda: time.monotonic() - dropped_at > 14, timeout=30, interval=0.5)
        self.drop(kids, a_job, False)
        time.sleep(3)
        self.assertEqual(self.cli("pause", "a").returncode, 0)
        self.settle(kz, ["a", "b", "c"], quiet=6)

        a_ids = [r["run_id"] for r in self.runs(kz, "a") if r.get("run_id")]
        self.assertEqual(sorted(a_ids), sorted(x[0] for x in self.lines(out["a"])))
        self.assertIn(stopped_id, a_ids)
        # b: every run of a answered exactly once (run, or recorded missed); ran what it says.
        b_recs = self.runs(kz, "b")
        b_ran = [r["after"][0]["run_id"] for r in b_recs if r.get("run_id")]
        b_missed = [r["after"][0]["run_id"] for r in b_recs if r.get("outcome") == "missed"]
        self.assertEqual(sorted(b_ran + b_missed), sorted(a_ids), (a_ids, b_recs))
        self.check_ran(b_recs, out["b"])
        self.assertIn(stopped_id, b_ran)
        self.assertTrue(b_missed, "no run of a was past b's start_deadline")
        self.assertTrue(all(r["reason"] == "missed" for r in b_recs
                            if r.get("outcome") == "missed"))
        # c: each run answers one run of a and one ok run of b; no parent run used twice;
        # c ran exactly the runs its records say; nothing is left due at the end: the newest
        # run of a or the newest ok run of b was joined (a join waits for both to be new).
        b_ok = [r["run_id"] for r in b_recs if r.get("outcome") == "ok"]
        c_recs = self.runs(kz, "c")
        c_ran = [",".join(x["run_id"] for x in r["after"]) for r in c_recs if r.get("run_id")]
        c_all = [[x["run_id"] for x in r["after"]] for r in c_recs if r.get("after")]
        self.check_ran(c_recs, out["c"])
        for pair in c_all:
            self.assertEqual(len(pair), 2, c_all)
            self.assertIn(pair[0], a_ids)
            self.assertIn(pair[1], b_ok)
        used = [x for pair in c_all for x in pair]
        self.assertEqual(len(used), len(set(used)), "a parent run joined twice: %s" % c_all)
        self.assertTrue(a_ids[-1] in used or b_ok[-1] in used, (a_ids, b_ok, c_all))
        self.assertGreaterEqual(len(c_ran), 4, c_all)
        nodes = sorted({x[1] for x in self.lines(out["b"]) + self.lines(out["c"])})
        print("\nchain on 3 workers: %d runs of a; b ran %d, missed %d; c ran %d, missed %d; "
              "children ran on %s" % (len(a_ids), len(b_ran), len(b_missed), len(c_ran),
                                      len(c_all) - len(c_ran), ", ".join(nodes)))


class ChainClaimInFlightTest(ChainCase):
    """A reload removes a chained job while its claim of a parent run is out: the claim's write
    lands as the job stops. ci14 (test_join_through_a_stopped_parent_worker_and_no_carrier):
    the stop dropped the claim, and the run of a that it claimed was never run by b nor
    recorded missed. Now the stop waits for the claim's answer and gives the run back, and
    a worker that carries b (told by its watch on b's chain state) runs it."""

    DELAY_MS = 2000  # the proxy holds each chunk this long, each way: a round trip takes 4 s

    def set_jobs(self, proc, name, jobs):
        """Reload worker name with jobs."""
        mark = proc.mark()
        lktest.write_ini(self.path(name, "jobs", "jobs.ini"),
                         {"job %s" % j: keys for j, keys in jobs.items()})
        proc.signal(signal.SIGHUP)
        proc.wait_log(r"reloaded: %d job\(s\)" % len(jobs), timeout=60, since=mark)

    def test_a_child_removed_while_its_claim_is_out_gives_the_parent_run_back(self):
        # A tickTime of 1 s lets beta's session be 20 s: a 4 s round trip is far from its end.
        self.start_zookeeper(tick_ms=1000)
        px = self.proxy()
        a_out, b_out = self.path("a.txt"), self.path("b.txt")
        a_job, b_job = parent_and_child(a_out, b_out)
        procs = {}
        # a on alpha; b on beta only (through the proxy); gamma carries nothing yet.
        for n, hosts, jobs in (("alpha", None, {"a": a_job}),
                               ("beta", px.connect_string, {"a": a_job, "b": b_job}),
                               ("gamma", None, {"a": a_job})):
            cfg = self.write_config(name=n, hosts=hosts, zookeeper={"session_timeout": "20s"},
                                    worker={"allow_root_jobs": True, "labels": "host=" + n},
                                    jobs=jobs)
            procs[n] = self.leasekeeper("run", "-v", "-c", cfg, name=n)
        for p in procs.values():
            p.wait_log(r"registered as", timeout=60)
        beta, gamma = procs["beta"], procs["gamma"]
        kz = self.kazoo()
        px.delay(self.DELAY_MS)
        met, rounds = None, 0
        while met is None:
            rounds += 1
            self.assertLessEqual(rounds, 3, "the reload never met b's claim in flight in %d "
                                 "rounds (a loaded machine?)" % (rounds - 1))
            since = beta.mark()
            r = self.cli("run-now", "a")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            # beta hears of the run, reads b's chain state, gets b's lease and writes its
            # claim (each a round trip through the proxy): the write reaches the server one
            # delay later, its answer is back one more delay later. Reload in between.
            beta.wait_log(r"job b: writing \S+/chain \(run\)", timeout=120, since=since)
            time.sleep(self.DELAY_MS / 2000.0)
            at = beta.mark()
            self.set_jobs(beta, "beta", {"a": a_job})
            self.set_jobs(gamma, "gamma", {"a": a_job, "b": b_job})
            stop = beta.wait_log(r"job b: stopped$", timeout=120, since=at)
            # Else the claim's answer was back before the stop (the run was under way, or over):
            # nothing to give back, and another round.
            if re.search(r"job b: stopped before its run after \S+: given back",
                         beta.log_text()[at:stop.end()]):
                met = self.lines(a_out)[-1][0]
            # Either way, every run of a is answered by b, once: run (b's start_deadline is
            # long: none is missed), here by gamma if beta gave it back.
            self.wait_until(lambda: len([r for r in self.runs(kz, "b") if r.get("run_id")])
                            >= len(self.lines(a_out)), timeout=120,
                            msg="b answered every run of a")
            if met is None:
                self.set_jobs(gamma, "gamma", {"a": a_job})
                self.set_jobs(beta, "beta", {"a": a_job, "b": b_job})
        px.delay(0)
        self.assertEqual(self.cli("pause", "a").returncode, 0)
        self.settle(kz, ["a", "b"], quiet=6)
        a_ids = [r["run_id"] for r in self.runs(kz, "a") if r.get("run_id")]
        b_recs = self.runs(kz, "b")
        b_ran = [r["after"][0]["run_id"] for r in b_recs if r.get("run_id")]
        self.assertEqual(sorted(b_ran), sorted(a_ids), (a_ids, b_recs))
        self.assertEqual(sorted(x[0] for x in self.lines(b_out)), sorted(a_ids))
        # The run given back ran on gamma.
        self.assertIn([met, "gamma"], self.lines(b_out), (met, self.lines(b_out)))
        print("\nclaim in flight: the reload met it in round %d; the run of a given back "
              "ran on gamma" % rounds)


class ChainClaimLeaseLostTest(ChainCase):
    """The lease of b is lost while beta's claim of a run of a is on its way: its lock node
    deleted (as an operator would) while the proxy holds the claim, or beta's session expired
    while the claim's answer was lost (the server applied it; the proxy cut the connection and
    kept beta away past its session). The claim lands, or landed, as beta lets it go: before,
    nothing followed it, and the run of a stayed claimed by b, never run nor recorded missed.
    Now beta follows the claim to its answer (in the next session after an expiry) and gives
    the run back (a versioned write: no lease needed), and b answers it (here beta runs it
    itself, under a new lease)."""

    def lock_node(self, kz, job):
        """The lock node of job's lease (a mutex: one lease)."""
        folder = "/leasekeeper/mutex/" + job
        kids = kz.get_children(folder)
        self.assertEqual(len(kids), 1, kids)
        return folder + "/" + kids[0]

    def start(self, tick_ms, session):
        """alpha carries a; beta, through a proxy, carries b (and a, never placed there)."""
        self.start_zookeeper(tick_ms=tick_ms)
        self.px = self.proxy()
        self.a_out, self.b_out = self.path("a.txt"), self.path("b.txt")
        a_job, b_job = parent_and_child(self.a_out, self.b_out)
        procs = {}
        for n, hosts, jobs in (("alpha", None, {"a": a_job}),
                               ("beta", self.px.connect_string, {"a": a_job, "b": b_job})):
            cfg = self.write_config(name=n, hosts=hosts, zookeeper={"session_timeout": session},
                                    safety=SAFETY,
                                    worker={"allow_root_jobs": True, "labels": "host=" + n},
                                    jobs=jobs)
            procs[n] = self.leasekeeper("run", "-v", "-c", cfg, name=n)
        for p in procs.values():
            p.wait_log(r"registered as", timeout=60)
        return procs["beta"], self.kazoo()

    def answered_once(self, beta, kz, mark):
        """The one run of a is run by b once, and beta said it gave the claim back."""
        # Without the fix the claim lands and nothing answers the run: no line, no record.
        self.wait_until(lambda: len(self.lines(self.b_out)) >= 1, timeout=60,
                        msg="the run of a, claimed as beta lost b's lease, was never run by b")
        self.assertRegex(beta.log_text()[mark:], r"job b: let go of its claim of the run after "
                         r"\S+ before running it .*given back")
        self.answered_once_by(kz, self.b_out)

    def test_a_lease_lost_while_the_claim_is_out_gives_the_parent_run_back(self):
        # A tickTime of 1 s lets beta's session be 20 s: the hold is far from its end.
        beta, kz = self.start(1000, "20s")
        # beta's claim of b's chain state (chainrec_dump: sorted, compact) is held on its way.
        self.px.hold_after(b'"how":"run","key"')
        r = self.cli("run-now", "a")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.wait_until(lambda: self.px.holds == 1, timeout=60, msg="beta's claim was not held")
        mark = beta.mark()
        kz.delete(self.lock_node(kz, "b"))
        beta.wait_log(r"job b: lease lost", timeout=30, since=mark)
        self.px.release()
        self.answered_once(beta, kz, mark)

    def test_a_session_expired_while_the_claims_answer_is_lost_gives_the_parent_run_back(self):
        # beta's session is 4 s; the proxy keeps it away 10 s after the claim went through.
        beta, kz = self.start(500, "4s")
        mark = beta.mark()
        self.px.cut_after(b'"how":"run","key"', hold=10.0)
        r = self.cli("run-now", "a")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.wait_until(lambda: self.px.cuts == 1, timeout=60, msg="beta's claim was not cut")
        beta.wait_log(r"session 0x[0-9a-f]+ expired", timeout=60, since=mark)
        self.answered_once(beta, kz, mark)


class ChainMainGoneTest(ChainCase):
    def test_a_chained_run_whose_main_died_is_recorded_with_its_parent_run(self):
        """Main is SIGKILLed while b runs after a run of a: its next process records the run
        from the journal of open runs (killed, main_gone) with the parent run it answered
        ("after", as the run's own record would have it: before, the record named none, and
        `status` and the dashboard could not tie it to a's run), and b does not answer that
        run of a a second time."""
        started = self.path("b-started")
        self.cluster({
            "a": {"command": "true", "schedule": NEVER, "history": 100},
            "b": {"command": 'echo "$LEASEKEEPER_PARENT_RUN" >> %s; sleep 30' % started,
                  "after": "a", "start_deadline": "60s", "history": 100}}, names=("alpha",))
        cfg, alpha = self.workers["alpha"]
        kz = self.kazoo()
        self.assertEqual(self.cli("run-now", "a").returncode, 0)
        run = alpha.wait_log(r"job b: running, pid \d+ run=(\S+)", timeout=60).group(1)
        self.wait_until(lambda: self.lines(started), timeout=30, msg="b did not start")
        parent = self.lines(started)[0][0]
        sv = int(alpha.wait_log(r"supervisor pid (\d+)", since=0).group(1))
        os.kill(alpha.pid, signal.SIGKILL)
        alpha.wait(timeout=10)
        self.wait_until(lambda: not lktest.pid_alive(sv), timeout=30,
                        msg="the supervisor outlived its main")
        again = self.worker(cfg, name="alpha-2")
        again.wait_log(r"run %s .*recording it as killed" % re.escape(run), timeout=60)
        self.wait_until(lambda: [r for r in self.runs(kz, "b") if r.get("run_id") == run],
                        timeout=60, msg="run %s not recorded" % run)
        rec = [r for r in self.runs(kz, "b") if r.get("run_id") == run]
        self.assertEqual(len(rec), 1, rec)
        self.assertEqual((rec[0]["outcome"], rec[0].get("kill_reason")), ("killed", "main_gone"))
        self.assertEqual([p["run_id"] for p in rec[0].get("after", [])], [parent], rec[0])
        st = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg],
                            capture_output=True, text=True, timeout=60)
        self.assertIn("after=%s" % parent, st.stdout, st.stdout + st.stderr)
        time.sleep(3)  # b must not run the answered run of a again
        self.assertEqual(len(self.lines(started)), 1, self.lines(started))
        self.assertEqual(again.stop(timeout=30), 0)


    def test_a_chain_claim_whose_worker_died_before_its_answer_is_not_lost(self):
        """beta's claim of a run of a (for b) reaches the server and lands; the proxy cuts
        beta's connection before the answer, and beta's main is SIGKILLed then. The chain
        state holds the run as handled by beta, and no process will run it: before, it was
        lost in silence (no run of b, no record, no log line). The journal of open runs kept
        the claim; beta's next process gives it back, and b answers the run once."""
        self.start_zookeeper(tick_ms=500)
        px = self.proxy()
        a_out, b_out = self.path("a.txt"), self.path("b.txt")
        a_job, b_job = parent_and_child(a_out, b_out)
        cfgs, procs = {}, {}
        for n, hosts, jobs in (("alpha", None, {"a": a_job}),
                               ("beta", px.connect_string, {"a": a_job, "b": b_job})):
            cfgs[n] = self.write_config(name=n, hosts=hosts, zookeeper={"session_timeout": "4s"},
                                        safety=SAFETY,
                                        worker={"allow_root_jobs": True, "labels": "host=" + n},
                                        jobs=jobs)
            procs[n] = self.leasekeeper("run", "-v", "-c", cfgs[n], name=n)
        for p in procs.values():
            p.wait_log(r"registered as", timeout=60)
        kz, beta = self.kazoo(), procs["beta"]
        journal = self.path("beta", "state", "open-runs")
        px.cut_after(b'"how":"run","key"', hold=10.0)
        r = self.cli("run-now", "a")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.wait_until(lambda: px.cuts == 1, timeout=60, msg="beta's claim was not cut")
        os.kill(beta.pid, signal.SIGKILL)
        beta.wait(timeout=10)
        self.wait_until(lambda: json.loads(kz.get("/leasekeeper/jobs/b/chain")[0]).get(
            "last", {}).get("node") == "beta", timeout=30, msg="beta's claim did not land")
        chain = json.loads(kz.get("/leasekeeper/jobs/b/chain")[0])
        self.assertEqual(chain["last"]["how"], "run", chain)
        self.assertEqual(len([f for f in os.listdir(journal) if f.startswith("+chain.")]), 1,
                         os.listdir(journal))
        again = self.leasekeeper("run", "-v", "-c", cfgs["beta"], name="beta-2")
        again.wait_log(r"job b: the run after \S+, claimed by this worker's previous process, "
                       r"which died before it ran it: given back", timeout=90)
        self.wait_until(lambda: len(self.lines(b_out)) >= 1, timeout=90,
                        msg="the run of a claimed by the dead process was never answered by b")
        self.answered_once_by(kz, b_out)
        self.assertEqual(again.stop(timeout=30), 0)
        self.assertEqual([f for f in os.listdir(journal) if f.startswith("+chain.")], [],
                         "a chain claim left in the journal after its run")


class ChainCheckTest(lktest.TestCase):
    def test_check_refuses_cycles_and_unknown_parents(self):
        cfg = self.write_config(name="w", hosts="127.0.0.1:1", worker={"allow_root_jobs": True},
                                jobs={"p": {"command": "true", "after": "q"},
                                      "q": {"command": "true", "after": "p:any"},
                                      "r": {"command": "true", "after": "nosuch"}})
        r = subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"jobs\.ini:\d+: after makes a cycle through job \"[pq]\"")
        self.assertRegex(r.stderr, r"jobs\.ini:\d+: after names job \"nosuch\", which no job "
                                   r"file defines")


if __name__ == "__main__":
    lktest.main()

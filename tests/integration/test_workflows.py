#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=400 split
"""Workflows against a real ZooKeeper and three workers. `leasekeeper stop`: a scheduled run
ended on whichever worker runs it, recorded "stopped" with who asked, not retried, and the
next tick runs; --kill ends a run that ignores SIGTERM at once; --run naming an old run stops
nothing; an @continuous copy restarts after
restart_backoff, and --no-restart holds it until `resume`. Parameters of a manual run
(`params`, `run-now --param`): passed as LEASEKEEPER_PARAM_*, defaulted, never spliced into
the command line, recorded and shown by `logs`; refused by the command and by the worker.
catch_up = all after an outage of every worker: the newest catch_up_limit missed ticks run
once each, oldest first, each with its own LEASEKEEPER_TICK. overlap = skip records a tick
due during a run missed (reason overlap) at once; overlap = replace stops the run (outcome
replaced) and runs the new tick."""

import calendar
import json
import os
import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NAMES = ("alpha", "beta", "gamma")
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}

read = lktest.read_text


class WorkflowCase(lktest.TestCase):
    """What the tests share: three workers on one ZooKeeper, the commands, the records."""

    def cluster(self, jobs, session="4s"):
        # ZooKeeper grants sessions up to 20 ticks: a 20s one needs 1s ticks.
        self.start_zookeeper(tick_ms=1000 if session == "20s" else 500)
        for n in NAMES:
            cfg = self.write_config(name=n, zookeeper={"session_timeout": session}, safety=SAFETY,
                                    worker={"allow_root_jobs": True}, jobs=jobs)
            p = self.worker(cfg, name="%s-%d" % (n, time.monotonic_ns()))
            p.wait_log(r"registered as", timeout=30)

    def lines(self, path):
        return read(path).split("\n")[:-1] if os.path.exists(path) else []



class StopTest(WorkflowCase):
    def test_stop_a_scheduled_run_the_next_tick_runs(self):
        out = self.path("out.txt")
        flag = self.path("flag")
        # The first run hangs; the later ones end at once. retries = 2: a stop is no failure,
        # so the stopped tick must not be tried again.
        cmd = ('echo "$LEASEKEEPER_TICK $LEASEKEEPER_NODE" >> %s; '
               'if [ ! -e %s ]; then touch %s; exec sleep 600; fi' % (out, flag, flag))
        self.cluster({"tick": {"command": cmd, "schedule": "@every 4s",
                               "start_deadline": "3s", "retries": 2, "retry_backoff": "1s",
                               "history": 100},
                      "stubborn": {"command": "trap '' TERM; echo up >> %s; sleep 600 & wait"
                                   % self.path("stubborn.txt"),
                                   "schedule": "@every 2s", "kill_grace": "9s"}},
                     session="20s")
        kz = self.kazoo()
        self.wait_until(lambda: len(self.lines(out)) >= 1, timeout=60, msg="the first run")
        time.sleep(1)
        first_tick, holder = self.lines(out)[0].split()
        r = self.cli("stop", "--by", "ops@test", "--json", "tick")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(res["node"], holder)
        self.assertEqual(res["result"]["outcome"], "stopped")
        self.assertEqual(res["result"]["signal"], 15)
        stopped = [x for x in self.runs(kz, "tick") if x.get("stopped_by") == "ops@test"]
        self.assertEqual(len(stopped), 1, self.runs(kz, "tick"))
        self.assertEqual(stopped[0]["outcome"], "stopped")
        self.assertEqual(stopped[0]["node"], holder)
        self.assertEqual(stopped[0]["tick_time"].replace(".000Z", "Z"), first_tick)
        r = self.cli("logs", "--last", "100", "tick")
        self.assertIn("stopped by: ops@test", r.stdout)
        req = json.loads(kz.get("/leasekeeper/jobs/tick/stops/" + res["request"])[0])
        self.assertEqual(req["claimed"]["node"], holder)
        # The schedule goes on: later ticks run, and the stopped one is not retried.
        self.wait_until(lambda: len(self.lines(out)) >= 3, timeout=30, msg="the next ticks")
        ticks = [x.split()[0] for x in self.lines(out)]
        self.assertEqual(len(ticks), len(set(ticks)), "a tick ran twice: %s" % ticks)
        self.assertEqual(ticks.count(first_tick), 1)

        # --run naming the old run (its fence): nothing is under way with it, nothing stops.
        before = len(self.runs(kz, "tick"))
        t0 = time.monotonic()
        r = self.cli("stop", "--run", str(stopped[0]["fence"]), "--timeout", "2s", "tick")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("nothing stopped", r.stderr)
        self.assertGreaterEqual(time.monotonic() - t0, 2.0)
        self.assertFalse([x for x in self.runs(kz, "tick")[before:] if x["outcome"] == "stopped"])
        # --run naming the old run by its id: not under way, said at once.
        t0 = time.monotonic()
        r = self.cli("stop", "--run", stopped[0]["run_id"], "tick")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("is not under way", r.stderr)
        self.assertLess(time.monotonic() - t0, 10)
        # Unknown to the cluster: exit 1.
        self.assertEqual(self.cli("stop", "nosuchjob").returncode, 1)

        # --kill: a run that ignores SIGTERM (kill_grace 9s) ends at once, by SIGKILL.
        self.wait_until(lambda: len(self.lines(self.path("stubborn.txt"))) >= 1, timeout=30)
        running = kz.get_children("/leasekeeper/jobs/stubborn/running")
        self.assertEqual(len(running), 1, running)
        t0 = time.monotonic()
        # --run with the run's id (as status prints it), --kill.
        r = self.cli("stop", "--kill", "--json", "--run", running[0], "stubborn")
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(res["result"]["outcome"], "stopped")
        self.assertEqual(res["result"]["signal"], 9)
        self.assertEqual(res["run_id"], running[0])
        self.assertEqual(
            [x["run_id"] for x in self.runs(kz, "stubborn") if x["outcome"] == "stopped"],
            [running[0]])
        self.assertLess(took, 9, "--kill waited for kill_grace")
        print("\nstop --kill of a run that ignores SIGTERM: %.2f s" % took)

    def test_stop_a_continuous_copy_restarts_or_holds(self):
        out = self.path("out.txt")
        self.cluster({"work": {"command": 'echo "$LEASEKEEPER_NODE" >> %s; exec sleep 600' % out,
                               "restart_backoff": "3s"}})
        kz = self.kazoo()
        self.wait_until(lambda: len(self.lines(out)) >= 1, timeout=60, msg="the first copy")
        r = self.cli("stop", "--json", "--by", "ops@test", "work")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        t_stopped = time.monotonic()
        self.assertEqual(json.loads(r.stdout)["result"]["outcome"], "stopped")
        # The copy restarts after restart_backoff (3s), not at once.
        self.wait_until(lambda: len(self.lines(out)) >= 2, timeout=30, msg="the restart")
        gap = time.monotonic() - t_stopped
        self.assertGreaterEqual(gap, 2.5, "restarted before restart_backoff")
        print("\nstop of an @continuous copy: restarted after %.2f s (restart_backoff 3s)" % gap)
        recs = [x for x in self.runs(kz, "work") if x.get("stopped_by") == "ops@test"]
        self.assertEqual([x["outcome"] for x in recs], ["stopped"])

        # --run FENCE at once after a stop: the copy is restarting (restart_backoff 3s) under
        # the same lease, so the same fence; the request waits for it and stops it.
        fence = recs[0]["fence"]
        n = len(self.lines(out))
        r = self.cli("stop", "--json", "--by", "ops@test", "work")  # the restarted copy
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        recs = [x for x in self.runs(kz, "work") if x.get("stopped_by") == "ops@test"]
        self.assertEqual([x["fence"] for x in recs], [fence, fence])  # one lease, one fence
        r = self.cli("stop", "--json", "--by", "ops2@test", "--timeout", "30s", "--run",
                     str(fence), "work")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(json.loads(r.stdout)["result"]["outcome"], "stopped")
        self.assertGreaterEqual(len(self.lines(out)), n + 1, "no copy restarted")
        recs = [x for x in self.runs(kz, "work") if x.get("stopped_by") == "ops2@test"]
        self.assertEqual([(x["outcome"], x["fence"]) for x in recs], [("stopped", fence)])
        self.wait_until(lambda: len(self.lines(out)) >= n + 2, timeout=30, msg="the restart")

        # --no-restart: stopped, and held (paused) until resume.
        r = self.cli("stop", "--no-restart", "work")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        n = len(self.lines(out))
        record = json.loads(kz.get("/leasekeeper/jobs/work")[0])
        self.assertIn("paused", record)
        time.sleep(3 * 3)  # three times restart_backoff
        self.assertEqual(len(self.lines(out)), n, "a held copy started again")
        r = self.cli("resume", "work")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.wait_until(lambda: len(self.lines(out)) > n, timeout=30, msg="the copy after resume")
        # Four stops, four "stopped" records: the resumed copy runs on.
        self.assertEqual(len([x for x in self.runs(kz, "work") if x["outcome"] == "stopped"]), 4)


class ParamsTest(WorkflowCase):
    def test_params_passed_defaulted_recorded_and_refused(self):
        out = self.path("out.txt")
        pwned = self.path("pwned")
        cmd = ('printf "%%s|%%s\\n" "${LEASEKEEPER_PARAM_TARGET-unset}" '
               '"${LEASEKEEPER_PARAM_DRY_RUN-unset}" >> %s' % out)
        self.cluster({"deploy": {"command": cmd, "schedule": "0 3 1 1 *",
                                 "params": "TARGET, DRY_RUN=false"},
                      "ticker": {"command": 'echo "$LEASEKEEPER_PARAM_MODE" >> %s'
                                 % self.path("ticks.txt"),
                                 "schedule": "@every 2s", "params": "MODE=auto"}})
        kz = self.kazoo()
        self.wait_until(lambda: kz.exists("/leasekeeper/jobs/deploy/requests"), timeout=30)
        r = self.cli("run-now", "--wait", "--json", "--param", "TARGET=db2", "deploy")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.lines(out), ["db2|false"])
        rec = [x for x in self.runs(kz, "deploy") if x.get("reason") == "manual"][-1]
        self.assertEqual(rec["params"], {"TARGET": "db2", "DRY_RUN": "false"})
        r = self.cli("logs", "deploy")
        self.assertIn("params: TARGET=db2 DRY_RUN=false", r.stdout)
        # Not given: the default, and nothing for a parameter without one.
        r = self.cli("run-now", "--wait", "deploy")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.lines(out)[-1], "unset|false")
        # Never spliced into the command line: the value arrives as it was given.
        evil = "$(touch %s); `touch %s` ' \" ;" % (pwned, pwned)
        r = self.cli("run-now", "--wait", "--param", "TARGET=" + evil, "--param",
                     "DRY_RUN=true", "deploy")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.lines(out)[-1], evil + "|true")
        self.assertFalse(os.path.exists(pwned))
        # Scheduled runs get the defaults.
        self.wait_until(lambda: len(self.lines(self.path("ticks.txt"))) >= 1, timeout=30)
        self.assertEqual(set(self.lines(self.path("ticks.txt"))), {"auto"})

        n = len(self.lines(out))
        # Refused by the command: a bad name, a value too long, an undeclared name (with -c).
        for bad in ("target=x", "TARGET", "1X=y", "TARGET=" + "x" * 1025):
            r = self.cli("run-now", "--param", bad, "deploy")
            self.assertEqual(r.returncode, 64, bad + ": " + r.stdout + r.stderr)
        cfg = os.path.join(self.dir, "alpha", "worker.ini")
        r = subprocess.run([lktest.leasekeeper_bin(), "run-now", "-c", cfg, "--zk",
                            self.zk.connect_string, "--param", "NOPE=1", "deploy"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 64, r.stdout + r.stderr)
        self.assertIn("declares no parameter NOPE", r.stderr)
        # Refused by the worker: undeclared (the command had no configuration); a NUL written
        # into a request by hand makes it no request at all (the JSON reader refuses \u0000):
        # no worker claims it, nothing runs, and the workers delete it as junk (issue 22).
        r = self.cli("run-now", "--wait", "--json", "--param", "NOPE=1", "deploy")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(res["result"]["outcome"], "refused")
        self.assertIn("not declared", res["result"]["error"])
        path = kz.create("/leasekeeper/jobs/deploy/requests/req-", sequence=True,
                         value=json.dumps({"by": "test", "timeout_ms": 10000,
                                           "params": {"TARGET": "a\u0000b"}}).encode())
        self.wait_until(lambda: kz.exists(path) is None, timeout=30,
                        msg="the invalid request was not deleted")
        time.sleep(1)
        self.assertEqual(len(self.lines(out)), n, "a refused request ran")


class CatchUpTest(WorkflowCase):
    def test_catch_up_all_after_an_outage_runs_each_missed_tick_once_in_order(self):
        out = self.path("out.txt")
        jobs = {"every": {"command": 'echo "$LEASEKEEPER_TICK $LEASEKEEPER_NODE" >> %s' % out,
                          "schedule": "@every 5s", "start_deadline": "3s",
                          "catch_up": "all", "catch_up_limit": 3, "history": 100}}
        self.start_zookeeper()
        cfgs = {n: self.write_config(name=n, zookeeper={"session_timeout": "4s"},
                                     safety=SAFETY, worker={"allow_root_jobs": True}, jobs=jobs)
                for n in NAMES}
        procs = {n: self.worker(cfgs[n], name="%s-1" % n) for n in NAMES}
        for p in procs.values():
            p.wait_log(r"registered as", timeout=30)
        self.wait_until(lambda: len(self.lines(out)) >= 2, timeout=30, msg="two ticks")
        for p in procs.values():
            p.stop(timeout=30)
        before = [x.split()[0] for x in self.lines(out)]
        down = time.time()
        time.sleep(32)  # about six ticks missed by every worker
        up = time.time()
        procs = {n: self.worker(cfgs[n], name="%s-2" % n) for n in NAMES}
        for p in procs.values():
            p.wait_log(r"registered as", timeout=30)
        # The catch-up runs, then at least two regular ticks.
        self.wait_until(lambda: len(self.lines(out)) >= len(before) + 5, timeout=60,
                        msg="the catch-up and the ticks after it")
        ticks = [x.split()[0] for x in self.lines(out)]
        self.assertEqual(len(ticks), len(set(ticks)), "a tick ran twice: %s" % ticks)
        self.assertEqual(ticks, sorted(ticks), "not in order: %s" % ticks)
        epoch = [calendar.timegm(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ")) for t in ticks]
        outage = [t for t in epoch[len(before):] if down < t <= up]
        # catch_up_limit = 3: the newest three ticks of the outage, five seconds apart.
        self.assertEqual(len(outage), 3, "outage ticks run: %s (down %d, up %d)"
                         % (outage, down, up))
        self.assertEqual([b - a for a, b in zip(outage, outage[1:])], [5, 5])
        self.assertGreater(outage[-1], up - 5 - 1)
        # The outage ticks beyond the limit are recorded missed once, with the reason catch_up.
        kz = self.kazoo()
        skipped = [x for x in self.runs(kz, "every") if x.get("reason") == "catch_up"]
        self.assertTrue(skipped, self.runs(kz, "every"))
        skipped_ticks = [x["tick"] for x in skipped]
        self.assertEqual(len(skipped_ticks), len(set(skipped_ticks)))
        self.assertTrue(all(x["outcome"] == "missed" for x in skipped))
        self.assertTrue(all(down < t < outage[0] for t in skipped_ticks), skipped_ticks)
        print("\ncatch_up = all: ran %s of the outage %d..%d" % (outage, down, up))


class OverlapTest(WorkflowCase):
    def test_overlap_skip_and_replace(self):
        skip_out = self.path("skip.txt")
        rep_out = self.path("replace.txt")
        self.cluster({
            "skipper": {"command": 'echo "$LEASEKEEPER_TICK" >> %s; sleep 7' % skip_out,
                        "schedule": "@every 3s", "start_deadline": "2s", "overlap": "skip",
                        "history": 100},
            "replacer": {"command": 'echo "$LEASEKEEPER_TICK" >> %s; exec sleep 600' % rep_out,
                         "schedule": "@every 4s", "start_deadline": "3s",
                         "overlap": "replace", "history": 100}})
        kz = self.kazoo()
        self.wait_until(lambda: len(self.lines(skip_out)) >= 3, timeout=60, msg="three runs")
        self.wait_until(lambda: len(self.lines(rep_out)) >= 4, timeout=60, msg="four runs")
        # skip: ticks due during a run are recorded missed with the reason overlap, at once
        # (not after start_deadline), and never run; the runs never overlap.
        recs = self.runs(kz, "skipper")
        skipped = [x for x in recs if x.get("reason") == "overlap"]
        self.assertTrue(skipped, recs)
        self.assertTrue(all(x["outcome"] == "missed" for x in skipped))
        ran = [x.split()[0] for x in self.lines(skip_out)]
        self.assertEqual(len(ran), len(set(ran)))
        skipped_ticks = {x["tick_time"].replace(".000Z", "Z") for x in skipped}
        self.assertFalse(skipped_ticks & set(ran), "a skipped tick ran")
        runs = sorted((x["start"], x["end"]) for x in recs if x.get("outcome") == "ok")
        for (s1, e1), (s2, e2) in zip(runs, runs[1:]):
            self.assertLessEqual(e1, s2, "two runs at once")
        # replace: each run is replaced by the next tick (outcome replaced), which runs.
        recs = self.runs(kz, "replacer")
        replaced = [x for x in recs if x.get("outcome") == "replaced"]
        self.assertGreaterEqual(len(replaced), 3, recs)
        ran = [x.split()[0] for x in self.lines(rep_out)]
        self.assertEqual(len(ran), len(set(ran)), "a tick ran twice")
        self.assertEqual(ran, sorted(ran))
        self.assertFalse([x for x in recs if x.get("outcome") == "missed"], recs)


if __name__ == "__main__":
    lktest.main()

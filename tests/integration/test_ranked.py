#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Ranked claims of scheduled ticks against a real ZooKeeper: twelve workers sharing three
jobs run every tick exactly once and each runs some; a preferred worker stopped (SIGSTOP) at
its tick costs one step-in delay, not the tick; a worker whose clock is 3 s behind never
makes a tick run twice; a worker stopped, or whose session expires, while its claim's answer
is on its way gives the tick back once the claim is known to have landed."""

import calendar
import collections
import json
import os
import re
import signal
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def step_s(interval_s, start_deadline_s):
    """src/worker/rank.c rank_step_ms: the first backup reads the tick this long after it."""
    return max(0.05, min(0.5, start_deadline_s / 6.0, interval_s / 4.0))


def epoch(iso):
    return calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ"))


class RankedTest(lktest.TestCase):
    def command(self, path):
        """Append "JOB TICK NODE START" to path (START: the wall clock, seconds)."""
        return ('echo "$LEASEKEEPER_JOB $LEASEKEEPER_TICK $LEASEKEEPER_NODE $(date +%%s.%%N)" '
                '>> %s' % path)

    def start_all(self, names, jobs, env=None):
        procs = {}
        for n in names:
            cfg = self.write_config(name=n, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                    worker={"allow_root_jobs": True}, jobs=jobs)
            procs[n] = self.worker(cfg, name="%s-%d" % (n, time.monotonic_ns()),
                                   env=(env or {}).get(n))
        for p in procs.values():
            p.wait_log(r"registered as", timeout=60)
        return procs

    def runs(self, path):
        """{(job, tick): [(node, start), ...]}"""
        out = collections.defaultdict(list)
        for line in lktest.read_text(path).splitlines():
            f = line.split()
            if len(f) == 4:
                out[(f[0], epoch(f[1]))].append((f[2], float(f[3])))
        return out

    def assert_once_and_none_missing(self, runs, jobs, since, until, interval,
                                     superseded_ok=False):
        """Every tick once. With superseded_ok, a tick not run may instead be recorded
        missed as superseded (a later tick was claimed first: on a machine too slow to start
        a run within the interval, claims only move forward), which is then printed."""
        twice = {k: v for k, v in runs.items() if len(v) > 1}
        self.assertEqual(twice, {}, "ticks run more than once")
        for job in jobs:
            want = range(since, until + 1, interval)
            missing = [t for t in want if (job, t) not in runs]
            if superseded_ok and missing:
                recs = lktest.run_records(self.kazoo(), "/leasekeeper", job, runs_only=False)
                told = {r.data.get("tick") for r in recs
                        if r.data.get("missed_reason") == "superseded"}
                print("ticks of %s recorded superseded, not run: %s"
                      % (job, [t for t in missing if t in told]), flush=True)
                missing = [t for t in missing if t not in told]
            self.assertEqual(missing, [], "ticks of %s that no worker ran or recorded" % job)

    def test_twelve_workers_three_jobs_every_tick_once_spread(self):
        self.start_zookeeper()
        out = self.path("runs.txt")
        jobs = {j: {"command": self.command(out), "schedule": "@every 1s",
                    "start_deadline": "3s", "history": 300} for j in ("a", "b", "c")}
        names = ["w%02d" % i for i in range(12)]
        self.start_all(names, jobs)
        # Judge the ticks once every worker is registered and has seen the others.
        settled = int(time.time()) + 3
        self.wait_until(lambda: len([k for k in self.runs(out) if k[1] >= settled]) >= 90,
                        timeout=120)
        runs = self.runs(out)
        last = max(t for _, t in runs)
        judged = {k: v for k, v in runs.items() if k[1] >= settled}
        self.assert_once_and_none_missing(judged, jobs, settled, last - 2, 1, superseded_ok=True)
        per_worker = collections.Counter(v[0][0] for v in judged.values())
        self.assertEqual(sorted(set(per_worker) | set(names)), sorted(names))
        self.assertEqual([n for n in names if per_worker[n] == 0], [],
                         "workers that ran nothing: %s" % dict(per_worker))

    def test_stopped_preferred_worker_costs_one_step(self):
        self.start_zookeeper()
        out = self.path("runs.txt")
        jobs = {"j": {"command": self.command(out), "schedule": "@every 2s",
                      "start_deadline": "1500ms"}}
        names = ("alpha", "beta", "gamma")
        procs = self.start_all(names, jobs)
        settled = int(time.time()) + 3
        # Rotation: with three workers the worker of tick T runs T+6 s too; wait until the
        # runs show it, twice in a row.
        def rotating():
            runs = {t: v[0][0] for (_, t), v in self.runs(out).items() if t >= settled}
            ts = sorted(runs)
            return len(ts) >= 6 and all(runs[ts[i]] == runs[ts[i - 3]]
                                        for i in range(len(ts) - 3, len(ts)))
        self.wait_until(rotating, timeout=90)
        runs = {t: v[0][0] for (_, t), v in self.runs(out).items()}
        t0 = max(runs)
        victim, target = runs[t0], t0 + 6
        # Stop it before its tick is due (its previous tick is long done), after the tick
        # before has run.
        self.assertLess(time.time(), target - 1.0, "too late to stop the preferred worker")
        self.wait_until(lambda: time.time() >= target - 1.0, timeout=10)
        procs[victim].signal(signal.SIGSTOP)
        try:
            self.wait_until(lambda: ("j", target) in self.runs(out), timeout=20)
        finally:
            time.sleep(max(0.0, target + 2.5 - time.time()))
            procs[victim].signal(signal.SIGCONT)
        node, start = self.runs(out)[("j", target)][0]
        self.assertNotEqual(node, victim)
        # Not started by the preferred worker at once: by a backup, one step after the
        # tick (its read), then its lease and claim: well inside start_deadline (1.5 s).
        late = start - target
        self.assertGreaterEqual(late, step_s(2, 1.5) - 0.02, "the tick started at once")
        self.assertLess(late, 1.5)
        # And the stopped worker, back, runs its later ticks again; nothing ran twice.
        self.wait_until(lambda: any(t > target + 6 and v[0][0] == victim
                                    for (_, t), v in self.runs(out).items()), timeout=60)
        runs = self.runs(out)
        self.assertEqual({k: v for k, v in runs.items() if len(v) > 1}, {})

    def test_clock_three_seconds_behind_never_runs_a_tick_twice(self):
        self.start_zookeeper()
        out = self.path("runs.txt")
        jobs = {j: {"command": self.command(out), "schedule": "@every 1s",
                    "start_deadline": "2s"} for j in ("x", "y")}
        late = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME="-3s",
                    FAKETIME_DONT_FAKE_MONOTONIC="1",
                    ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
        self.start_all(("alpha", "beta", "gamma"), jobs, env={"gamma": late})
        settled = int(time.time()) + 3
        self.wait_until(lambda: len([k for k in self.runs(out) if k[1] >= settled]) >= 40,
                        timeout=90)
        runs = self.runs(out)
        last = max(t for _, t in runs)
        judged = {k: v for k, v in runs.items() if k[1] >= settled}
        self.assert_once_and_none_missing(judged, jobs, settled, last - 2, 1)
        # gamma's own clock is 3 s late, but ticks come due by the cluster's clock (the offset
        # it measured to the servers), so it takes the ticks it is first in rank for.
        self.assertGreaterEqual(len([k for k, v in judged.items() if v[0][0] == "gamma"]), 1,
                                "gamma ran no tick: ticks not timed by the cluster's clock")


    def test_a_worker_stopped_while_its_claim_is_in_flight_gives_the_tick_back(self):
        """SIGTERM reaches a worker between its claim's write and the answer (ci14: a
        rolling upgrade lost a tick so). The claim lands after the worker gave up on it: the
        worker waits for the answer and gives the tick back, so that the other worker runs
        it (or records it missed, with its reason); the tick is never lost unrecorded."""
        self.start_zookeeper()
        out = self.path("runs.txt")
        interval = 4
        jobs = {"j": {"command": self.command(out), "schedule": "@every %ds" % interval,
                      "start_deadline": "3s", "history": 100}}
        proxy = self.proxy()
        procs = {}
        for n, hosts in (("alpha", proxy.connect_string), ("beta", None)):
            cfg = self.write_config(name=n, hosts=hosts, zookeeper={"session_timeout": "4s"},
                                    safety=SAFETY, worker={"allow_root_jobs": True}, jobs=jobs)
            procs[n] = self.worker(cfg, name=n)
        for p in procs.values():
            p.wait_log(r"registered as", timeout=60)
        self.wait_until(lambda: len(self.runs(out)) >= 2, timeout=60, msg="no ticks run")
        first = min(t for _, t in self.runs(out))
        # alpha's next claim (tickstate_dump writes sorted, compact JSON) is held on its way
        # to the server; SIGTERM then reaches alpha with the write in flight.
        proxy.hold_after(b'"runners":["alpha"]')
        self.wait_until(lambda: proxy.holds == 1, timeout=60, msg="alpha claimed no tick")
        mark = procs["alpha"].mark()
        procs["alpha"].signal(signal.SIGTERM)
        m = procs["alpha"].wait_log(r"(?m)^(\S+) .*every job is stopped", timeout=30, since=mark)
        proxy.release()  # within WORKER_FLUSH_MS (2 s): alpha still waits for its writes
        # How long alpha had waited for its writes then (past 2 s it closed the session
        # without the claim's answer: this test's own lateness, said if the tick is lost).
        late = "released %.3f s after alpha's last job stopped" % (
            time.time() - epoch(m.group(1)[:19] + "Z") - float("0" + m.group(1)[19:-1]))
        self.assertEqual(procs["alpha"].wait(timeout=60), 0)
        stopped = time.time()
        stop_log = procs["alpha"].log_text()[mark:]
        self.assertNotIn("running the tick of", stop_log, "the claim was not in flight")
        # beta runs on: two more ticks, then every tick from the first to the last is run
        # once or recorded missed with a reason.
        self.wait_until(lambda: max(t for _, t in self.runs(out)) >= stopped + interval,
                        timeout=60, msg="beta ran no tick after alpha stopped")
        runs = self.runs(out)
        self.assertEqual({k: v for k, v in runs.items() if len(v) > 1}, {}, "run twice")
        recs = lktest.run_records(self.kazoo(), "/leasekeeper", "j", runs_only=False)
        missed = {r.data.get("tick"): r.data.get("missed_reason") for r in recs
                  if r.outcome == "missed"}
        last = max(t for _, t in runs)
        lost = [t for t in range(first, last + 1, interval)
                if ("j", t) not in runs and t not in missed]
        self.assertEqual(lost, [], "ticks neither run nor recorded missed (missed: %s; %s)\n%s"
                         % (missed, late, stop_log))
        m = re.search(r"job j: the claim of the tick of (\S+) landed after the job let it go",
                      stop_log)
        self.assertIsNotNone(m, "alpha did not say it gave the tick back:\n" + stop_log)
        given = epoch(m.group(1)[:19] + "Z")
        print("the tick given back, %s: %s" % (m.group(1), "run by %s" % runs[("j", given)][0][0]
                                                if ("j", given) in runs
                                                else "missed, %s" % missed.get(given)))

    def test_a_worker_whose_session_expires_while_its_claims_answer_is_lost_gives_it_back(self):
        """alpha's claim of a tick reaches the server, which applies it, but the answer is lost
        (the proxy cuts the connection) and alpha is kept away past its session (10 s, 4 s
        session). Its lease went with the session: alpha lets the claim go, and before, the
        claim was forgotten with the session, so the tick stayed claimed by alpha, run by no
        one (beta found it taken) nor recorded missed. Now alpha follows the claim into its
        next session, finds it landed and gives the tick back (no lease needed); the tick is
        run once, by beta (awaiting it) or alpha (its catch-up), within start_deadline."""
        self.start_zookeeper()
        out = self.path("runs.txt")
        jobs = {"j": {"command": self.command(out), "schedule": "@every 20s",
                      "start_deadline": "18s", "history": 100}}
        proxy = self.proxy()
        cfg = self.write_config(name="alpha", hosts=proxy.connect_string,
                                zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                worker={"allow_root_jobs": True}, jobs=jobs)
        alpha = self.worker(cfg, name="alpha")
        alpha.wait_log(r"registered as", timeout=60)
        mark = alpha.mark()
        # alpha alone claims the next tick (tickstate_dump: sorted, compact JSON).
        proxy.cut_after(b'"runners":["alpha"]', hold=10.0)
        self.wait_until(lambda: proxy.cuts == 1, timeout=60, msg="alpha claimed no tick")
        cut = time.time()
        kz = self.kazoo()

        def claimed():
            """The tick claimed at the cut, once the server applied the claim (-1 until)."""
            st = json.loads(kz.get("/leasekeeper/jobs/j/state")[0].decode())
            return st["tick"] if st["tick"] > cut - 10 and st["runners"] == ["alpha"] else -1
        self.wait_until(lambda: claimed() > 0, timeout=10, msg="the cut claim did not land")
        tick = claimed()
        # beta comes while alpha is away: it catches the tick up, finds it taken, awaits it.
        cfg = self.write_config(name="beta", zookeeper={"session_timeout": "4s"},
                                safety=SAFETY, worker={"allow_root_jobs": True}, jobs=jobs)
        self.worker(cfg, name="beta")
        alpha.wait_log(r"session 0x[0-9a-f]+ expired", timeout=60, since=mark)
        # Without the fix the tick stays claimed by alpha: neither run nor recorded.
        self.wait_until(lambda: ("j", tick) in self.runs(out), timeout=30,
                        msg="the tick whose claim's answer alpha lost was never run")
        m = alpha.wait_log(r"job j: the claim of the tick of (\S+) landed after the job let it "
                           r"go", timeout=10, since=mark)
        self.assertEqual(epoch(m.group(1)[:19] + "Z"), tick)
        time.sleep(2)  # a second run, if any, would start by now
        runs = self.runs(out)
        self.assertEqual(len(runs[("j", tick)]), 1, runs)
        node, start = runs[("j", tick)][0]
        self.assertLess(start - tick, 18, "run past its start_deadline")
        print("the tick given back, %s: run by %s %.1f s after it" % (m.group(1), node,
                                                                       start - tick))


if __name__ == "__main__":
    lktest.main()

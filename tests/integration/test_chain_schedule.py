#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300
"""A job with both a schedule and `after` (docs/workflows.md, "A schedule and after"), against
a real ZooKeeper and three workers: child runs `@every 3s` and after each ok run of parent,
which also runs `@every 3s`, so that each parent run ends at about the moment of one of the
child's ticks. Counted from the run records in ZooKeeper, by run id: every tick of the child
is answered exactly once (run, or recorded missed), every run of parent exactly once (run, or
recorded missed), no run answers both; a chained run's environment names its parent run and
a scheduled run's names none; `status` and `next` show the schedule and the parent. With
overlap = skip, a tick due during a chained run is recorded missed (overlap), and every
parent run still runs."""

import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
EVERY = 3  # seconds, both jobs


class ChainScheduleTest(lktest.TestCase):
    def cluster(self, jobs, names):
        self.start_zookeeper(tick_ms=500)
        self.workers = {}
        for n in names:
            cfg = self.write_config(name=n, zookeeper={"session_timeout": "6s"}, safety=SAFETY,
                                    worker={"allow_root_jobs": True}, jobs=jobs)
            p = self.worker(cfg, name=n)
            p.wait_log(r"registered as", timeout=30)
            self.workers[n] = (cfg, p)

    def settle(self, what, quiet=6.0, timeout=90):
        """Wait until what() (a count of records) stops changing for `quiet` seconds."""
        last, since = None, time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = what()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.3)
        self.fail("the runs did not settle: %s" % (last,))

    def test_every_tick_and_every_parent_run_once(self):
        out = self.path("child.txt")
        child_cmd = ('echo "$LEASEKEEPER_RUN_ID $LEASEKEEPER_TICK '
                     '${LEASEKEEPER_PARENT_RUN:-none} $LEASEKEEPER_NODE" >> %s; sleep 0.5' % out)
        self.cluster({
            "parent": {"command": "true", "schedule": "@every %ds" % EVERY, "history": 500},
            "child": {"command": child_cmd, "schedule": "@every %ds" % EVERY,
                      "after": "parent", "start_deadline": "20s", "history": 500},
        }, names=("alpha", "beta", "gamma"))
        kz = self.kazoo()
        # 12 runs of the parent: about 36 s of ticks and generations meeting.
        self.wait_until(lambda: len([r for r in self.runs(kz, "parent") if r.get("run_id")])
                        >= 12, timeout=120, msg="12 runs of parent")
        # The parent paused: its runs and the child's answers to them stop (its ticks go on).
        self.assertEqual(self.cli("pause", "parent").returncode, 0)
        self.settle(lambda: ([r["run_id"] for r in self.runs(kz, "parent") if r.get("run_id")],
                             [r.get("after") for r in self.runs(kz, "child") if r.get("after")]))
        # Then the child: its ticks are recorded paused from then on.
        self.assertEqual(self.cli("pause", "child").returncode, 0)
        self.settle(lambda: [r.get("run_id") for r in self.runs(kz, "child")
                             if r.get("outcome") != "paused"])

        p_ok = [r["run_id"] for r in self.runs(kz, "parent") if r.get("outcome") == "ok"]
        recs = [r for r in self.runs(kz, "child") if r.get("outcome") != "paused"]
        # One record per run: a record whose write's answer was lost is written again.
        ran = {r["run_id"]: r for r in recs if r.get("run_id")}
        chained = {i: r for i, r in ran.items() if r.get("after")}
        sched = {i: r for i, r in ran.items() if not r.get("after")}
        gen_missed = list(dict.fromkeys(r["after"][0]["run_id"] for r in recs
                                        if r.get("outcome") == "missed" and r.get("after")))
        tick_missed = list(dict.fromkeys(r["tick"] for r in recs
                                         if r.get("outcome") == "missed" and not r.get("after")))
        # Every ok run of parent: answered exactly once, run or recorded missed.
        gen_ran = [r["after"][0]["run_id"] for r in chained.values()]
        self.assertEqual(len(gen_ran), len(set(gen_ran)), "a parent run answered twice")
        self.assertEqual(sorted(gen_ran + gen_missed), sorted(p_ok), (p_ok, recs))
        # Every tick of the child's schedule, from its first to its last: exactly once.
        ticks = [r["tick"] for r in sched.values()]
        self.assertEqual(len(ticks), len(set(ticks)), "a tick run twice: %s" % sorted(ticks))
        self.assertFalse(set(ticks) & set(tick_missed), "a tick both run and missed")
        every = sorted(ticks + tick_missed)
        self.assertEqual(every, list(range(every[0], every[-1] + 1, EVERY)),
                         "a tick neither run nor recorded missed")
        self.assertGreaterEqual(len(ticks), 8, every)
        self.assertGreaterEqual(len(gen_ran), 8, gen_ran)
        for r in recs:
            if r.get("outcome") == "missed" and r.get("after"):
                self.assertEqual(r.get("reason"), "missed", r)
        # The command ran exactly the runs recorded, each once, with its own environment: a
        # chained run names its parent run, a scheduled one none.
        lines = {x.split()[0]: x.split() for x in lktest.read_text(out).split("\n")[:-1]}
        self.assertEqual(len(lines), len(lktest.read_text(out).split("\n")[:-1]))
        self.assertEqual(set(lines), set(ran))
        for i, r in chained.items():
            self.assertEqual(lines[i][2], r["after"][0]["run_id"], r)
        for i, r in sched.items():
            self.assertEqual(lines[i][2], "none", r)
            self.assertEqual(lines[i][1], time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                        time.gmtime(r["tick"])), r)
        # The meeting this test is for: parent runs recorded in the second of a child's tick.
        met = [r for r in chained.values() if r["tick"] in set(ticks)]
        self.assertTrue(met, "no parent run ended at a tick of the child")
        nodes = sorted({x[3] for x in lines.values()})
        # status and next show both.
        cfg = self.workers["alpha"][0]
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"schedule @every %ds" % EVERY)
        self.assertRegex(r.stdout, r"after\s+parent")
        r = subprocess.run([lktest.leasekeeper_bin(), "next", "-c", cfg, "child"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("child: runs after parent", r.stdout)
        self.assertIn("at each tick of its schedule @every %ds" % EVERY, r.stdout)
        print("\nschedule and after: %d runs of parent; child ran %d ticks (missed %d) and %d "
              "parent runs (missed %d; %d recorded in the second of a tick), on %s"
              % (len(p_ok), len(ticks), len(tick_missed), len(gen_ran), len(gen_missed),
                 len(met), ", ".join(nodes)))

    def test_skip_lets_a_tick_go_during_a_chained_run_never_a_parent_run(self):
        """overlap = skip: a tick due while a chained run holds the lease is recorded missed
        (overlap); a parent run due during a scheduled run waits for it and runs."""
        out = self.path("child.txt")
        # Chained runs last 4 s (over the next tick), scheduled ones 0.2 s.
        child_cmd = ('if [ -n "$LEASEKEEPER_PARENT_RUN" ]; then sleep 4; else sleep 0.2; fi; '
                     'echo "$LEASEKEEPER_RUN_ID ${LEASEKEEPER_PARENT_RUN:-none}" >> %s' % out)
        self.cluster({
            "parent": {"command": "true", "schedule": "@every 9s", "history": 500},
            "child": {"command": child_cmd, "schedule": "@every %ds" % EVERY,
                      "after": "parent", "overlap": "skip", "start_deadline": "20s",
                      "history": 500},
        }, names=("alpha", "beta"))
        kz = self.kazoo()
        self.wait_until(lambda: len([r for r in self.runs(kz, "parent") if r.get("run_id")])
                        >= 4, timeout=120, msg="4 runs of parent")
        self.assertEqual(self.cli("pause", "parent").returncode, 0)
        self.settle(lambda: ([r["run_id"] for r in self.runs(kz, "parent") if r.get("run_id")],
                             [r.get("after") for r in self.runs(kz, "child") if r.get("after")]))
        self.assertEqual(self.cli("pause", "child").returncode, 0)
        self.settle(lambda: [r.get("run_id") for r in self.runs(kz, "child")
                             if r.get("outcome") != "paused"])

        p_ok = [r["run_id"] for r in self.runs(kz, "parent") if r.get("outcome") == "ok"]
        recs = [r for r in self.runs(kz, "child") if r.get("outcome") != "paused"]
        ran = {r["run_id"]: r for r in recs if r.get("run_id")}
        chained = [r for r in ran.values() if r.get("after")]
        ticks = [r["tick"] for r in ran.values() if not r.get("after")]
        missed = {r["tick"]: r for r in recs
                  if r.get("outcome") == "missed" and not r.get("after")}
        # Every parent run ran once, none skipped; no chained run stopped or replaced.
        self.assertEqual(sorted(r["after"][0]["run_id"] for r in chained), sorted(p_ok), recs)
        self.assertFalse([r for r in recs if r.get("after") and r.get("outcome") != "ok"], recs)
        # Every tick once: run or missed; some missed for the overlap with a chained run.
        self.assertEqual(len(ticks), len(set(ticks)), sorted(ticks))
        self.assertFalse(set(ticks) & set(missed))
        every = sorted(ticks + list(missed))
        self.assertEqual(every, list(range(every[0], every[-1] + 1, EVERY)))
        overlap = [t for t, r in missed.items() if r.get("missed_reason") == "overlap"]
        self.assertTrue(overlap, "no tick was skipped for a chained run: %s" % missed)
        lines = lktest.read_text(out).split("\n")[:-1]
        self.assertEqual(sorted(x.split()[0] for x in lines), sorted(ran))
        print("\noverlap = skip with after: %d parent runs all answered; %d ticks ran, %d "
              "skipped for a chained run (overlap), %d missed otherwise"
              % (len(p_ok), len(ticks), len(overlap), len(missed) - len(overlap)))


if __name__ == "__main__":
    lktest.main()

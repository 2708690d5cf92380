#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Every missed tick says its true reason (issue 20, goal 5), in its run record
("missed_reason") and in the label reason of leasekeeper_job_missed_ticks_total: the ticks
skipped while ZooKeeper could not be reached for 1.5 T (its one server stopped; or two of an
ensemble of three: the quorum lost) are "superseded" (a later tick was claimed once it came
back), not "no worker started it within its start_deadline"; a tick whose lease a peer holds
past its start_deadline is "lease_held"; the ticks that came due while the job's only worker
was drained, or while its constraint matched no live worker (so no live worker could run
them), are "no_worker", but not those whose window reaches into a time the worker was cut
off; those missed while no worker was up at all are "superseded": the worker that comes
back cannot know that none was."""

import calendar
import json
import re
import subprocess
import time
import urllib.request
import uuid

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

T_MS = 4000
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
REASONS = {"superseded", "deadline", "lease_held", "locks", "unreachable", "unhealthy",
           "no_worker", "overlap", "catch_up"}


class MissedReasonTest(lktest.TestCase):
    def runs(self, kz, job):
        path = "/leasekeeper/jobs/%s/runs" % job
        if not kz.exists(path):
            return []
        return [json.loads(kz.get(path + "/" + c)[0]) for c in sorted(kz.get_children(path))]

    def missed(self, kz, job):
        return [r for r in self.runs(kz, job) if r.get("outcome") == "missed"]

    def metrics(self, port):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            text = r.read().decode()
        self.check_metrics(text)
        return text

    def start(self, jobs, started=False):
        if not started:
            self.start_zookeeper()
        self.port = lktest.free_port()
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "%dms" % T_MS},
                                safety=SAFETY, worker={"allow_root_jobs": True},
                                http={"listen": "127.0.0.1:%d" % self.port}, jobs=jobs)
        self.cfg = cfg
        self.w = self.worker(cfg)
        self.w.wait_log(r"registered as", timeout=60)
        return self.kazoo()

    def start_every(self, start_deadline="2s"):
        """The job `every` (@every 1s, catch_up none, history 200) on one worker, which has
        run it 3 times."""
        kz = self.start({"every": {"command": "true", "schedule": "@every 1s",
                                   "start_deadline": start_deadline, "catch_up": "none",
                                   "history": 200}})
        self.wait_until(lambda: len(self.runs(kz, "every")) >= 3, timeout=60, msg="runs")
        return kz

    def cli(self, *args):
        r = subprocess.run([lktest.leasekeeper_bin()] + list(args), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def assert_label_set(self, text, job):
        """The label reason takes the fixed set of values, each once."""
        got = re.findall(r'(?m)^leasekeeper_job_missed_ticks_total\{job_name="%s",'
                         r'reason="([a-z_]+)"\} \d+$' % job, text)
        self.assertEqual(sorted(got), sorted(REASONS), text)

    def count(self, text, job, reason):
        m = re.search(r'(?m)^leasekeeper_job_missed_ticks_total\{job_name="%s",reason="%s"\} '
                      r'(\d+)$' % (job, reason), text)
        return int(m.group(1))

    def test_ticks_skipped_while_unreachable_are_superseded(self):
        kz = self.start_every("1m")
        kz.stop()
        down = time.time()
        self.zk.pause()
        time.sleep(1.5 * T_MS / 1000)
        self.zk.resume()
        up = time.time()
        kz = self.kazoo()
        mark = len(self.w.log_text())
        self.w.wait_log(r"running the tick", since=mark, timeout=60)
        time.sleep(2)  # the claim's skipped ticks are recorded once it landed
        outage = [r for r in self.missed(kz, "every") if down <= r["tick"] <= up]
        print("outage %.1f s: %d tick(s) recorded missed, reasons %s"
              % (up - down, len(outage), sorted({r.get("missed_reason") for r in outage})),
              flush=True)
        self.assertGreaterEqual(len(outage), 3, self.missed(kz, "every"))
        self.assertEqual({r.get("missed_reason") for r in outage}, {"superseded"}, outage)
        self.assertEqual({r["reason"] for r in outage}, {"missed"}, "the older field")
        self.assertNotRegex(self.w.log_text(), r"no worker started it within its start_deadline")
        text = self.metrics(self.port)
        self.assert_label_set(text, "every")
        self.assertGreaterEqual(self.count(text, "every", "superseded"), len(outage))

    def test_ticks_skipped_during_a_quorum_loss_are_superseded(self):
        """Two of three servers stopped (SIGSTOP) for 1.5 T: the third loses its quorum."""
        ens = self.start_ensemble(3)
        self.zk = ens
        kz = self.start({"every": {"command": "true", "schedule": "@every 1s",
                                   "start_deadline": "1m", "catch_up": "none",
                                   "history": 200}}, started=True)
        self.wait_until(lambda: len(self.runs(kz, "every")) >= 3, timeout=60, msg="runs")
        kz.stop()
        down = time.time()
        ens.pause(0)
        ens.pause(1)
        time.sleep(1.5 * T_MS / 1000)
        ens.resume(0)
        ens.resume(1)
        up = time.time()
        ens.wait_for_leader(timeout=60)
        kz = self.kazoo()
        mark = len(self.w.log_text())
        self.w.wait_log(r"running the tick", since=mark, timeout=60)
        time.sleep(2)
        outage = [r for r in self.missed(kz, "every") if down <= r["tick"] <= up]
        print("quorum lost %.1f s: %d tick(s) recorded missed, reasons %s"
              % (up - down, len(outage), sorted({r.get("missed_reason") for r in outage})),
              flush=True)
        self.assertGreaterEqual(len(outage), 3, self.missed(kz, "every"))
        self.assertEqual({r.get("missed_reason") for r in self.missed(kz, "every")},
                         {"superseded"})
        self.assertNotRegex(self.w.log_text(), r"no worker started it within its start_deadline")

    def test_a_tick_whose_lease_a_peer_holds_is_lease_held(self):
        kz = self.start({"held": {"command": "true", "schedule": "@every 5s",
                                  "start_deadline": "2s", "catch_up": "none"}})
        self.wait_until(lambda: self.runs(kz, "held"), timeout=60, msg="a first run")
        # A Curator-style contender (protected ephemeral sequential) holds the mutex.
        path = "/leasekeeper/mutex/held/_c_%s-lock-" % uuid.uuid4()
        node = kz.create(path, b"peer", ephemeral=True, sequence=True, makepath=True)
        held = time.time()
        # The next tick comes within 5 s and its start_deadline passes 2 s later.
        self.wait_until(lambda: any(r.get("missed_reason") == "lease_held"
                                    for r in self.missed(kz, "held")), timeout=30,
                        msg="a tick recorded missed with the reason lease_held")
        kz.delete(node)
        recs = [r for r in self.missed(kz, "held") if r["tick"] >= held - 1]
        self.assertEqual({r.get("missed_reason") for r in recs}, {"lease_held"}, recs)
        self.w.wait_log(r"was missed \(lease_held\): its lease stayed held by others", timeout=10)
        mark = len(self.w.log_text())
        self.w.wait_log(r"running the tick", since=mark, timeout=30)
        text = self.metrics(self.port)
        self.assert_label_set(text, "held")
        self.assertGreaterEqual(self.count(text, "held", "lease_held"), 1)

    def test_a_long_wait_for_the_lease_records_each_tick_as_it_passes(self):
        """A peer holds the lease over many ticks of a job whose start_deadline is longer
        than its period: the job keeps its place in the lock's queue and moves its target
        to each newer tick, and each older one is recorded missed (lease_held) then, while
        the peer still holds it, not all at once at a claim that may come much later (and
        could name only 64), nor never."""
        kz = self.start({"wait": {"command": "true", "schedule": "@every 1s",
                                  "start_deadline": "5s", "catch_up": "none",
                                  "history": 200}})
        self.wait_until(lambda: self.runs(kz, "wait"), timeout=60, msg="a first run")
        path = "/leasekeeper/mutex/wait/_c_%s-lock-" % uuid.uuid4()
        node = kz.create(path, b"peer", ephemeral=True, sequence=True, makepath=True)
        held = time.time()

        def during():
            return [r for r in self.missed(kz, "wait") if r["tick"] >= held]
        self.wait_until(lambda: len(during()) >= 6, timeout=90, interval=0.5,
                        msg="ticks recorded missed while the peer still holds the lease")
        self.assertTrue(kz.exists(node))  # still held: recorded as they passed
        kz.delete(node)
        mark = len(self.w.log_text())
        self.w.wait_log(r"running the tick", since=mark, timeout=60)
        self.assertEqual({r.get("missed_reason") for r in during()}, {"lease_held"}, during())
        ticks = [r["tick"] for r in self.runs(kz, "wait") if "tick" in r]
        self.assertEqual(len(ticks), len(set(ticks)), "a tick recorded twice")

    def test_ticks_due_while_the_only_worker_is_drained_are_no_worker(self):
        """The one worker that carries the job is drained for 10 s: no live worker can run
        its ticks. It sees so itself (its view of <root>/workers), and when it is undrained,
        its claim records the ticks skipped meanwhile as no_worker, not superseded."""
        deadline = 2
        kz = self.start({"every": {"command": "true", "schedule": "@every 1s",
                                   "start_deadline": "%ds" % deadline, "catch_up": "none",
                                   "history": 200}})
        self.wait_until(lambda: len(self.runs(kz, "every")) >= 3, timeout=60, msg="runs")
        self.cli("drain", "-c", self.cfg)
        self.w.wait_log(r"drained: taking no new lease", timeout=30)
        drained = time.time()
        time.sleep(10)
        self.cli("undrain", "-c", self.cfg)
        undrained = time.time()
        mark = len(self.w.log_text())
        self.w.wait_log(r"running the tick", since=mark, timeout=60)
        time.sleep(2)  # the claim's skipped ticks are recorded once it landed
        missed = [r for r in self.missed(kz, "every") if r["tick"] > drained - 3]
        # Due after the drain was seen, their start_deadline over before the undrain: every
        # one came and went with no live worker able to run it.
        inside = [r for r in missed if drained + 1 <= r["tick"] <= undrained - deadline - 1]
        print("drained %.1f s: %d tick(s) recorded missed, %d inside, reasons %s"
              % (undrained - drained, len(missed), len(inside),
                 sorted({r.get("missed_reason") for r in missed})), flush=True)
        self.assertGreaterEqual(len(inside), 3, missed)
        self.assertEqual({r.get("missed_reason") for r in inside}, {"no_worker"}, inside)
        self.assertEqual({r["reason"] for r in inside}, {"missed"}, "the older field")
        # At the edges (due before the drain was seen, or not over at the undrain): either.
        self.assertLessEqual({r.get("missed_reason") for r in missed}, {"no_worker", "superseded"})
        self.assertRegex(self.w.log_text(), r"the tick of \S+ was missed \(no_worker\): no live "
                                            r"worker could run it")
        text = self.metrics(self.port)
        self.assert_label_set(text, "every")
        self.assertEqual(self.count(text, "every", "no_worker"),
                         len([r for r in missed if r.get("missed_reason") == "no_worker"]))
        logs = self.cli("logs", "-c", self.cfg, "--last", "100", "every")
        self.assertRegex(logs, r"=== run \(record \d+\): missed \(no_worker\), not run")

    def test_a_drained_worker_cut_off_says_no_worker_only_for_what_it_saw(self):
        """The job's only worker is drained, then ZooKeeper is stopped for 1.5 T and comes
        back (its session expired): while cut off it could not see a worker come, so the ticks
        whose window reaches into the outage are superseded; those before it no_worker."""
        deadline = 2
        kz = self.start({"every": {"command": "true", "schedule": "@every 1s",
                                   "start_deadline": "%ds" % deadline, "catch_up": "none",
                                   "history": 200}})
        self.wait_until(lambda: len(self.runs(kz, "every")) >= 3, timeout=60, msg="runs")
        self.cli("drain", "-c", self.cfg)
        self.w.wait_log(r"drained: taking no new lease", timeout=30)
        drained = time.time()
        time.sleep(10)
        kz.stop()
        mark = len(self.w.log_text())
        down = time.time()
        self.zk.pause()
        time.sleep(1.5 * T_MS / 1000)
        self.zk.resume()
        up = time.time()
        self.w.wait_log(r"zookeeper: session 0x[0-9a-f]+ (reconnected|established)", since=mark,
                        timeout=60)
        kz = self.kazoo()
        time.sleep(3)
        self.cli("undrain", "-c", self.cfg)
        mark = len(self.w.log_text())
        self.w.wait_log(r"running the tick", since=mark, timeout=60)
        time.sleep(2)
        missed = [r for r in self.missed(kz, "every") if r["tick"] > drained - 3]
        before = [r for r in missed if drained + 1 <= r["tick"] <= down - deadline - 2]
        cut = [r for r in missed if down - deadline + 1 <= r["tick"] <= up]
        print("drained, then cut off %.1f s: %d before (%s), %d reaching the outage (%s)"
              % (up - down, len(before), sorted({r.get("missed_reason") for r in before}),
                 len(cut), sorted({r.get("missed_reason") for r in cut})), flush=True)
        self.assertGreaterEqual(len(before), 3, missed)
        self.assertEqual({r.get("missed_reason") for r in before}, {"no_worker"}, before)
        self.assertGreaterEqual(len(cut), 5, missed)
        self.assertEqual({r.get("missed_reason") for r in cut}, {"superseded"}, cut)

    def test_ticks_due_while_the_constraint_matches_no_worker_are_no_worker(self):
        """A reload gives the job's only worker labels its constraint does not match, and
        another reload gives them back: the worker kept watching (the job stays in its
        configuration), so its first claim records the ticks passed meanwhile as no_worker."""
        deadline = 2
        self.start_zookeeper()
        self.port = lktest.free_port()
        jobs = {"every": {"command": "true", "schedule": "@every 1s", "constraint": "zone=a",
                          "start_deadline": "%ds" % deadline, "catch_up": "none",
                          "history": 200}}

        def config(labels):
            return self.write_config(name="alpha", zookeeper={"session_timeout": "%dms" % T_MS},
                                     safety=SAFETY, jobs=jobs,
                                     worker={"allow_root_jobs": True, "labels": labels},
                                     http={"listen": "127.0.0.1:%d" % self.port})
        self.cfg = config("zone=a")
        self.w = self.worker(self.cfg)
        self.w.wait_log(r"registered as", timeout=60)
        kz = self.kazoo()
        self.wait_until(lambda: len(self.runs(kz, "every")) >= 3, timeout=60, msg="runs")
        config("zone=b")
        self.w.signal(1)  # SIGHUP
        self.w.wait_log(r"job every: no live worker can run it: no worker that is not drained "
                        r"matches its constraint", timeout=30)
        excluded = time.time()
        time.sleep(10)
        config("zone=a")
        self.w.signal(1)
        back = time.time()
        mark = len(self.w.log_text())
        self.w.wait_log(r"running the tick", since=mark, timeout=60)
        time.sleep(2)
        missed = [r for r in self.missed(kz, "every") if r["tick"] > excluded - 8]
        inside = [r for r in missed if excluded <= r["tick"] <= back - deadline - 1]
        print("excluded %.1f s: %d tick(s) recorded missed, %d inside, reasons %s"
              % (back - excluded, len(missed), len(inside),
                 sorted({r.get("missed_reason") for r in missed})), flush=True)
        self.assertGreaterEqual(len(inside), 3, missed)
        self.assertEqual({r.get("missed_reason") for r in inside}, {"no_worker"}, inside)
        self.assertLessEqual({r.get("missed_reason") for r in missed}, {"no_worker", "superseded"})
        text = self.metrics(self.port)
        self.assert_label_set(text, "every")
        self.assertGreaterEqual(self.count(text, "every", "no_worker"), len(inside))

    def test_ticks_missed_while_no_worker_was_up_are_superseded(self):
        """The job's only worker is stopped for 8 s and started again: it cannot know whether
        another worker was up meanwhile (a registration leaves no trace once gone), so the
        ticks skipped are superseded, never no_worker."""
        kz = self.start_every("2s")
        self.w.stop()
        down = time.time()
        time.sleep(8)
        self.w = self.worker(self.cfg)
        self.w.wait_log(r"running the tick", timeout=60)
        up = time.time()
        time.sleep(2)
        gap = [r for r in self.missed(kz, "every") if down + 1 <= r["tick"] <= up - 3]
        print("no worker for %.1f s: %d tick(s) recorded missed, reasons %s"
              % (up - down, len(gap), sorted({r.get("missed_reason") for r in gap})),
              flush=True)
        self.assertGreaterEqual(len(gap), 3, self.missed(kz, "every"))
        self.assertEqual({r.get("missed_reason") for r in gap}, {"superseded"}, gap)

    def test_more_missed_ticks_than_a_minutes_run_records_are_all_recorded(self):
        """40 s without a worker, @every 1s: the claim that comes back skips about 40 ticks,
        more than the 30 run records a job may write a minute. Missed records have a wider
        limit of their own (the claim bounds them, by history): every tick of the gap is
        run or recorded missed (torture seed 6003 lost 48 ticks to the runs' limit)."""
        kz = self.start_every("2s")
        self.w.stop()
        time.sleep(40)
        self.w = self.worker(self.cfg)
        ran = self.w.wait_log(r"running the tick of (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)",
                              timeout=60).group(1)
        time.sleep(3)
        self.w.stop()
        ticks = sorted(int(r["tick"]) for r in self.runs(kz, "every") if "tick" in r)
        ran = calendar.timegm(time.strptime(ran, "%Y-%m-%dT%H:%M:%S"))
        self.assertIn(ran, ticks, "the first tick run after the gap has no record")
        before = [t for t, u in zip(ticks, ticks[1:]) if u - t > 1]
        print("%d records, ticks %d..%d, holes after %s" % (len(ticks), ticks[0], ticks[-1],
                                                            before), flush=True)
        self.assertEqual(before, [], "ticks neither run nor recorded missed")
        self.assertEqual(len(ticks), len(set(ticks)), "a tick recorded twice")
        self.assertGreater(len(self.missed(kz, "every")), 30, "fewer missed than the limit")
        self.assertNotIn("not recording more", self.w.log_text())


if __name__ == "__main__":
    lktest.main()

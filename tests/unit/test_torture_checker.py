#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=60
"""The torture checker (tests/lib/lktest/checker.py) on synthetic histories: a clean history
counts nothing, and each kind of violation is counted where it is, and only there."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from lktest import checker, zklog  # noqa: E402

S = 1000 * 1000 * 1000  # ns per second
BASE = 1800000000  # a wall second divisible by 60: ticks of every schedule fall on it


def line(kind, who, pid, t, **fields):
    """A record line at wall BASE + t seconds (monotonic: t seconds)."""
    d = {"kind": kind, "who": who, "pid": pid, "mono": int(t * S), "wall": int((BASE + t) * S)}
    d.update({k: str(v) for k, v in fields.items()})
    return d


def iso(t):
    import time
    whole = int(BASE + t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + \
        ".%03dZ" % round((BASE + t - whole) * 1000)


def tick_text(t):
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(BASE + t))


def run(t0, t1, node, fence, pid, job="every", tick=None, outcome="ok", rec_shift=0.0):
    """The lines of one run and its record (record times shifted by rec_shift s)."""
    extra = {"tick": tick_text(tick)} if tick is not None else {}
    lines = [line("start", node, pid, t0, job=job, fence=fence, node=node, **extra),
             line("end", node, pid, t1, reason="done")]
    rec = {"node": node, "fence": fence, "start": iso(t0 + rec_shift),
           "end": iso(t1 + rec_shift), "outcome": outcome}
    if tick is not None:
        rec["tick"] = BASE + tick
    return lines, rec


def history():
    """Clean: job "every" (@every 10s) ticks 0..50 run once each, alternating workers;
    "cont" (leases 2) held by two workers at once."""
    h = {"jobs": {"every": {"schedule": "@every 10s", "leases": 1, "per_tick": 1},
                  "cont": {"schedule": "@continuous", "leases": 2, "per_tick": 1}},
         "window": [BASE, BASE + 50], "T_s": 4, "faults": [], "pauses": [], "skew": {},
         "lines": [], "heartbeats": {}, "runs": {"every": [], "cont": []}}
    pid = 100
    for i, t in enumerate(range(0, 60, 10)):
        ls, rec = run(t + 0.05, t + 1.0, "w%d" % (1 + i % 2), 10 + 10 * i, pid, tick=t)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        pid += 1
    for node, fence in (("w1", 5), ("w2", 6)):
        ls, rec = run(0.5, 55.0, node, fence, pid, job="cont")
        h["lines"] += ls
        h["runs"]["cont"].append(rec)
        pid += 1
    return h


class CheckerTest(unittest.TestCase):
    def counts(self, h):
        rep = checker.check(h)
        return {k: v for k, v in rep.counts.items() if v}, rep

    def test_clean_history_counts_nothing(self):
        counts, rep = self.counts(history())
        self.assertEqual(counts, {}, rep.describe())
        self.assertEqual(rep.failed(), [])
        self.assertEqual(rep.info["records_matched"], 8)

    def test_flock_overlap_line_is_an_overlap(self):
        h = history()
        h["lines"].append(line("overlap", "w3", 999, 20.2, job="every"))
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"overlaps": 1}, rep.describe())
        self.assertEqual(rep.failed(), ["overlaps"])

    def test_more_holders_than_leases_by_time(self):
        h = history()
        h["lines"].append(line("start", "w3", 998, 30.5, job="every", fence=40, node="w3"))
        h["lines"].append(line("death", "w3", 998, 30.7))
        counts, _ = self.counts(h)
        self.assertEqual(counts["time_overlaps"], 1)
        self.assertEqual(counts["fence_regressions"], 0 if "fence_regressions" not in counts
                         else counts["fence_regressions"])
        # a third holder of the leases = 2 job is one too many; a second is not
        h = history()
        h["lines"].append(line("start", "w3", 997, 10.0, job="cont", fence=9, node="w3"))
        h["lines"].append(line("end", "w3", 997, 11.0))
        counts, _ = self.counts(h)
        self.assertEqual(counts, {"time_overlaps": 1})

    def test_end_and_start_at_one_instant_do_not_overlap(self):
        h = history()
        h["lines"] = [ln for ln in h["lines"] if ln.get("job") != "cont" and ln["pid"] < 102]
        h["lines"].append(line("start", "w9", 990, 1.0, job="every", fence=11, node="w9"))
        h["lines"].append(line("end", "w9", 990, 2.0))
        h["jobs"] = {"every": h["jobs"]["every"]}
        h["window"] = [BASE, BASE]
        counts, rep = self.counts(h)
        self.assertNotIn("time_overlaps", counts, rep.describe())

    def test_fence_regression(self):
        h = history()
        h["lines"].append(line("start", "w3", 996, 5.0, job="every", fence=3, node="w3"))
        h["lines"].append(line("end", "w3", 996, 6.0))
        counts, _ = self.counts(h)
        self.assertEqual(counts, {"fence_regressions": 1})

    def test_tick_run_twice(self):
        h = history()
        ls, rec = run(3.0, 4.0, "w3", 15, 995, tick=0)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"ticks_twice": 1}, rep.describe())

    def test_tick_run_twice_after_a_zookeeper_loss(self):
        # w2 started tick 0 at 0.05 (its claim acknowledged); a server truncated its log at
        # 2.0; w3 then claimed and started the same tick at 3.0 (finding 9)
        h = history()
        ls, rec = run(3.0, 4.0, "w3", 15, 995, tick=0)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        h["zk_losses"] = [BASE + 2.0]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"zk_loss_ticks": 1}, rep.describe())
        self.assertEqual(rep.failed(), [])
        # a loss after the second start did not cause it: a tick twice
        h["zk_losses"] = [BASE + 3.5]
        self.assertEqual(self.counts(h)[0], {"ticks_twice": 1})
        # a loss too long after the first start cannot hold its claim
        h["zk_losses"] = [BASE + 0.05 + checker.LOSS_WINDOW_S + 1]
        h["lines"] = [ln for ln in h["lines"] if ln["pid"] != 995]
        ls, _ = run(checker.LOSS_WINDOW_S + 2, checker.LOSS_WINDOW_S + 3, "w3", 15, 995, tick=0)
        h["lines"] += ls
        self.assertEqual(self.counts(h)[0].get("ticks_twice"), 1)

    def test_per_tick_two_allows_two(self):
        h = history()
        h["jobs"]["every"].update(per_tick=2, leases=2)
        ls, rec = run(0.1, 0.9, "w3", 30, 995, tick=0)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        counts, rep = self.counts(h)
        self.assertEqual(counts, {}, rep.describe())

    def without_tick_20(self):
        """history() with tick 20 neither run nor recorded."""
        h = history()
        keep = [ln for ln in h["lines"] if ln.get("tick") != tick_text(20)]
        pids = {ln["pid"] for ln in h["lines"]} - {ln["pid"] for ln in keep
                                                    if ln["kind"] == "start"}
        h["lines"] = [ln for ln in keep if ln["pid"] not in pids]
        h["runs"]["every"] = [r for r in h["runs"]["every"] if r["tick"] != BASE + 20]
        return h

    def test_lost_tick_and_recorded_miss(self):
        h = self.without_tick_20()
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"ticks_lost": 1}, rep.describe())
        h["runs"]["every"].append({"tick": BASE + 20, "outcome": "missed", "node": "w1"})
        counts, rep = self.counts(h)
        self.assertEqual(counts, {}, rep.describe())

    def test_lost_tick_whose_record_zookeeper_dropped(self):
        # tick 20 neither ran nor has a record, but w1's log said at 25 it recorded it
        # missed, and a server truncated its log at 27: ZooKeeper may have dropped the record
        h = self.without_tick_20()
        h["said_missed"] = [{"who": "w1", "job": "every", "tick": BASE + 20.0, "at": BASE + 25}]
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})  # no loss: lost
        h["zk_losses"] = [BASE + 27.0]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"zk_lost_records": 1}, rep.describe())
        self.assertEqual(rep.failed(), [])
        h["said_missed"][0]["job"] = "cont"  # said of another job: lost
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})
        h["said_missed"][0].update(job="every", at=BASE + 27.0 - checker.LOSS_WINDOW_S - 1)
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})  # said too long before

    def test_lost_tick_whose_committed_record_zookeeper_shadowed(self):
        # finding 18: no worker said anything, but the servers' transaction logs hold the
        # record of tick 20; the final state does not
        h = self.without_tick_20()
        record = {"tick": BASE + 20, "outcome": "missed", "node": "w2"}
        logged = {"name": "run-0000000007", "zxid": 0x830000000c, "tick": BASE + 20,
                  "ms": (BASE + 21) * 1000, "outcome": "missed", "record": record,
                  "servers": ["zk1", "zk2", "zk3"], "deleted": False, "shadowed": True}
        h.update(servers=3, runs_logged={"every": [logged]})
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"zk_lost_records": 1}, rep.describe())
        self.assertIn("run-0000000007", rep.describe())
        self.assertEqual(rep.failed(), [])
        logged["shadowed"] = False  # gone without a second create of its name: not this
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})
        logged["shadowed"] = True
        # what the lost record said is judged: paused when no pause was on, or missed
        # before the tick's time
        record["outcome"] = "paused"
        self.assertEqual(self.counts(h)[0], {"zk_lost_records": 1, "false_reasons": 1})
        record["outcome"] = "missed"
        logged["ms"] = (BASE + 10) * 1000
        self.assertEqual(self.counts(h)[0], {"zk_lost_records": 1, "false_reasons": 1})
        logged["ms"] = (BASE + 21) * 1000
        logged["servers"] = ["zk1", "zk1"]  # one server's proposal, never committed: lost
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})
        logged["servers"] = ["zk1", "zk3"]
        self.assertEqual(self.counts(h)[0], {"zk_lost_records": 1})
        h["servers"] = 5  # two of five is no majority
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})
        h["servers"] = 3
        logged["deleted"] = True  # deleted (or rewritten) after: not ZooKeeper's loss
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})
        logged.update(deleted=False, tick=BASE + 30)  # another tick's record
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})
        logged["tick"] = BASE + 20
        h["runs_logged"] = {"cont": [logged]}  # another job's
        self.assertEqual(self.counts(h)[0], {"ticks_lost": 1})

    def test_ticks_outside_the_window_are_not_judged(self):
        h = history()
        h["window"] = [BASE + 70, BASE + 90]
        self.assertEqual(self.counts(h)[0]["ticks_lost"], 3)  # 70, 80, 90
        h["jobs"]["every"]["judge_ticks"] = False
        self.assertEqual(self.counts(h)[0], {})

    def test_false_reasons(self):
        h = history()
        h["runs"]["every"].append({"tick": BASE + 10, "outcome": "missed", "node": "w2"})
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"false_reasons": 1}, rep.describe())
        # missed, recorded before the tick's time (by the server's clock)
        h = history()
        h["jobs"]["every"]["start_deadline_s"] = 10
        h["lines"] = [ln for ln in h["lines"] if ln.get("tick") != tick_text(30)]
        h["runs"]["every"] = [r for r in h["runs"]["every"] if r["tick"] != BASE + 30]
        h["runs"]["every"].append({"tick": BASE + 30, "outcome": "missed", "node": "w2",
                                   "_ctime_ms": (BASE + 20) * 1000})
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"false_reasons": 1}, rep.describe())
        h["runs"]["every"][-1]["_ctime_ms"] = (BASE + 33) * 1000  # skipped by a claim
        self.assertEqual(self.counts(h)[0], {})
        # paused while the job was not paused, and while it was
        h = history()
        h["lines"] = [ln for ln in h["lines"] if ln.get("tick") != tick_text(30)]
        h["runs"]["every"] = [r for r in h["runs"]["every"] if r["tick"] != BASE + 30]
        h["runs"]["every"].append({"tick": BASE + 30, "outcome": "paused", "node": "w2"})
        counts, rep = self.counts(h)
        self.assertEqual(counts.get("false_reasons"), 1, rep.describe())
        h["pauses"] = [{"job": "every", "start": BASE + 25, "end": BASE + 35}]
        counts, rep = self.counts(h)
        self.assertNotIn("false_reasons", counts, rep.describe())

    def paused_at_30(self):
        """history() with tick 30 recorded paused (by w2) instead of run."""
        h = history()
        h["lines"] = [ln for ln in h["lines"] if ln.get("tick") != tick_text(30)]
        h["runs"]["every"] = [r for r in h["runs"]["every"] if r["tick"] != BASE + 30]
        h["runs"]["every"].append({"tick": BASE + 30, "outcome": "paused", "node": "w2"})
        return h

    def test_pause_judged_by_what_the_commands_said(self):
        def op(cmd, start, end, out):
            return {"cmd": cmd, "job": "every", "start": BASE + start, "end": BASE + end,
                    "out": out}
        pause_at = "job every: paused by root@vm at %s\n"
        # the nemesis meant 20..24, but its resume ran first ("not paused") and the pause
        # landed at 25; the next resume (told "resumed") ended it at 40
        h = self.paused_at_30()
        h["pauses"] = [{"job": "every", "start": BASE + 20, "end": BASE + 24}]
        h["ops"] = [op("pause", 20, 25.2, pause_at % iso(25)),
                    op("resume", 24, 24.5, "job every: not paused\n"),
                    op("resume", 39, 40, "job every: resumed\n")]
        self.assertEqual(self.counts(h)[0], {})
        # a pause the commands never wrote (its command failed) excuses nothing, even
        # where the nemesis meant one
        h["ops"][0]["out"] = "leasekeeper: cannot reach ZooKeeper at ... within 15 s\n"
        h["pauses"] = [{"job": "every", "start": BASE + 25, "end": BASE + 35}]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"false_reasons": 1}, rep.describe())
        # ... but a pause cut off by a connection loss may have written (found so by a
        # 1.5-minute run: the workers saw it): paused from its start until a resume
        h["ops"][0]["out"] = ("leasekeeper pause: cannot write /leasekeeper/jobs/every: "
                              "connection loss\n")
        self.assertEqual(self.counts(h)[0], {})
        # a resume told "resumed" at 24 ends it: tick 30 was not paused
        h["ops"] = [op("pause", 20, 20.2, pause_at % iso(20)),
                    op("resume", 23.5, 24, "job every: resumed\n")]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"false_reasons": 1}, rep.describe())
        # ... unless a later pause finds it "already paused" since 20 (the resume lost)
        h["ops"].append(op("pause", 33, 33.2, 'job every: already paused by "root@vm" since '
                                              '"%s"\n' % iso(20)))
        h["ops"].append(op("resume", 36, 36.2, "job every: resumed\n"))
        self.assertEqual(self.counts(h)[0], {})
        # on another job, nothing
        for o in h["ops"]:
            o["job"] = "cont"
        self.assertEqual(self.counts(h)[0].get("false_reasons"), 1)

    def test_paused_while_the_tick_waited_to_start(self):
        # tick 30 waited (for the lease) and a pause came at 34, inside its start_deadline
        # and before its record at 35: paused is its true reason
        h = self.paused_at_30()
        h["jobs"]["every"]["start_deadline_s"] = 10
        h["runs"]["every"][-1]["_ctime_ms"] = (BASE + 35) * 1000
        h["ops"] = [{"cmd": "pause", "job": "every", "start": BASE + 34, "end": BASE + 34.2,
                     "out": "job every: paused by root@vm at %s\n" % iso(34)}]
        self.assertEqual(self.counts(h)[0], {})
        # a pause after the record was written is not why
        h["runs"]["every"][-1]["_ctime_ms"] = (BASE + 30.5) * 1000
        self.assertEqual(self.counts(h)[0], {"false_reasons": 1})
        # nor one past the start_deadline
        h["runs"]["every"][-1]["_ctime_ms"] = (BASE + 50) * 1000
        h["jobs"]["every"]["start_deadline_s"] = 0.5
        self.assertEqual(self.counts(h)[0], {"false_reasons": 1})

    def test_paused_after_a_resume_zookeeper_may_have_lost(self):
        h = self.paused_at_30()
        h["ops"] = [{"cmd": "pause", "job": "every", "start": BASE + 10, "end": BASE + 10.2,
                     "out": "job every: paused by root@vm at %s\n" % iso(10)},
                    {"cmd": "resume", "job": "every", "start": BASE + 15, "end": BASE + 15.3,
                     "out": "job every: resumed\n"}]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"false_reasons": 1}, rep.describe())
        h["zk_losses"] = [BASE + 22.0]  # the resume was 6.7 s old: it may be lost
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"zk_loss_reasons": 1}, rep.describe())
        self.assertEqual(rep.failed(), [])
        h["zk_losses"] = [BASE + 15.3 + checker.LOSS_WINDOW_S + 1]  # too late to lose it
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"false_reasons": 1}, rep.describe())

    def test_missed_but_started_after_a_zookeeper_loss(self):
        # w1 started tick 20 at 20.05 (its claim acknowledged); a server truncated its log
        # at 26; w2 then recorded tick 20 missed at 27 (its read lacked w1's claim)
        h = history()
        rec = {"tick": BASE + 20, "outcome": "missed", "node": "w2",
               "_ctime_ms": (BASE + 27) * 1000}
        h["runs"]["every"].append(rec)
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"false_reasons": 1}, rep.describe())
        h["zk_losses"] = [BASE + 26.0]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"zk_loss_reasons": 1}, rep.describe())
        self.assertEqual(rep.failed(), [])
        # the same worker that ran it (the loss took its own claim): the same
        h["runs"]["every"][-1]["node"] = "w1"
        self.assertEqual(self.counts(h)[0], {"zk_loss_reasons": 1})
        # recorded before the loss: nothing lost yet, so the record is false
        rec["_ctime_ms"] = (BASE + 25) * 1000
        self.assertEqual(self.counts(h)[0], {"false_reasons": 1})
        # a loss long after the start cannot have taken its claim
        rec["_ctime_ms"] = (BASE + 20 + checker.LOSS_WINDOW_S + 3) * 1000
        h["zk_losses"] = [BASE + 20 + checker.LOSS_WINDOW_S + 2]
        self.assertEqual(self.counts(h)[0], {"false_reasons": 1})

    def test_needless_kill_unless_a_fault_came_before(self):
        h = history()
        h["runs"]["every"][2]["outcome"] = "killed"  # w1, tick 20, ends at 21 s
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"needless_kills": 1})
        self.assertEqual(rep.failed(), [])  # reported, not failing
        h["faults"] = [{"kind": "stop", "targets": ["w1"], "start": BASE + 14,
                        "end": BASE + 16}]
        self.assertEqual(self.counts(h)[0], {})
        h["faults"] = [{"kind": "stop", "targets": ["w2"], "start": BASE + 14,
                        "end": BASE + 16}]
        self.assertEqual(self.counts(h)[0], {"needless_kills": 1})
        h["faults"] = [{"kind": "kill-leader", "targets": ["*"], "start": BASE + 18,
                        "end": BASE + 19}]
        self.assertEqual(self.counts(h)[0], {})
        h["faults"] = [{"kind": "stop", "targets": ["w1"], "start": BASE + 5,
                        "end": BASE + 8}]  # over 6 s (T + 2) before the kill
        self.assertEqual(self.counts(h)[0], {"needless_kills": 1})
        # the kill's end is recorded to the millisecond (21.000): a supervisor killed at
        # 21.0004 by the harness's clock is its cause; one killed 2 ms later is not
        h["faults"] = [{"kind": "kill-supervisor", "targets": ["w1"], "start": BASE + 21.0004,
                        "end": BASE + 24}]
        self.assertEqual(self.counts(h)[0], {})
        h["faults"][0]["start"] = BASE + 21.002
        self.assertEqual(self.counts(h)[0], {"needless_kills": 1})

    def test_a_run_its_dead_mains_successor_recorded(self):
        # tick 20's run was asked for at 20.02 by w1, whose main was killed at 20.03: its
        # next process recorded it killed (main_gone), with no start or end
        h = self.without_tick_20()
        h["runs"]["every"].append({"tick": BASE + 20, "outcome": "killed", "node": "w1",
                                   "kill_reason": "main_gone", "asked": iso(20.02),
                                   "run_id": "w1-1-7", "_ctime_ms": (BASE + 26) * 1000})
        self.assertEqual(self.counts(h)[0], {"false_reasons": 1})  # no kill-main: false
        h["faults"] = [{"kind": "kill-main", "targets": ["w1"], "start": BASE + 20.03,
                        "end": BASE + 21}]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {}, rep.describe())  # recorded, true, and no needless kill
        h["faults"][0]["targets"] = ["w2"]
        self.assertEqual(self.counts(h)[0], {"false_reasons": 1})  # another's main
        h["faults"][0].update(targets=["w1"], start=BASE + 27)
        self.assertEqual(self.counts(h)[0], {"false_reasons": 1})  # killed after the record

    def test_record_disagreement_over_100_ms(self):
        h = history()
        ls, rec = run(60.05, 61.0, "w1", 70, 994, tick=60, rec_shift=0.09)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        self.assertEqual(self.counts(h)[0], {})
        h = history()
        ls, rec = run(60.05, 61.0, "w1", 70, 994, tick=60, rec_shift=0.15)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"record_disagreements": 1}, rep.describe())

    def test_record_disagreement_in_a_host_stall_is_reported_apart(self):
        # the record's end is 400 ms after the job's: the stall meter was not scheduled for
        # 350 ms of that time (so no supervisor could stamp), or for only 150 ms of it
        h = history()
        ls, rec = run(60.05, 61.0, "w1", 70, 994, tick=60)
        rec["end"] = iso(61.4)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h["stalls"] = [[BASE + 61.02, BASE + 61.37]]
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"stalled_records": 1}, rep.describe())
        self.assertEqual(rep.failed(), [])
        h["stalls"] = [[BASE + 61.02, BASE + 61.17]]
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h["stalls"] = [[BASE + 61.02, BASE + 61.17], [BASE + 61.2, BASE + 61.4]]  # two: 350 ms
        self.assertEqual(self.counts(h)[0], {"stalled_records": 1})
        h["stalls"] = [[BASE + 59.0, BASE + 60.9]]  # before the job ended: explains nothing
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        # a record end 400 ms before the job's own end line: the job outlived its record,
        # which no stall explains
        rec["end"] = iso(60.6)
        h["stalls"] = [[BASE + 60.6, BASE + 61.0]]
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})

    def test_record_start_is_the_jobs_birth_when_known(self):
        # The job's first line 300 ms after its exec (a loaded machine's start-up): a
        # disagreement by the line, none by the kernel's birth time of its process.
        h = history()
        ls, rec = run(60.35, 61.0, "w1", 70, 994, tick=60, rec_shift=-0.3)
        rec["end"] = iso(61.0)
        h["lines"] += ls
        h["runs"]["every"].append(rec)
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        ls[0]["born"] = int((BASE + 60.04) * S)
        self.assertEqual(self.counts(h)[0], {})
        ls[0]["born"] = int((BASE + 59.8) * S)  # born 250 ms before the recorded start
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})

    def test_record_end_counts_a_daemon_and_a_skewed_clock(self):
        h = history()
        h["runs"]["every"][0]["end"] = iso(2.0)  # the run's daemon lived 1 s longer
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h["heartbeats"] = {100: int((BASE + 1.98) * S)}
        self.assertEqual(self.counts(h)[0], {})
        who = h["lines"][0]["who"]
        h["heartbeats"] = {100: [(who, int((BASE + 0.5) * S), int((BASE + 1.98) * S))]}
        self.assertEqual(self.counts(h)[0], {})
        # The daemon's death as the DeathWatcher saw it: the run ended between its last beat
        # and that death, and a record end within those bounds agrees; past them, not.
        h["runs"]["every"][0]["end"] = iso(2.5)
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h["heartbeats"] = {100: [(who, int((BASE + 0.5) * S), int((BASE + 1.98) * S),
                                  int((BASE + 2.6) * S))]}
        self.assertEqual(self.counts(h)[0], {})
        h["runs"]["every"][0]["end"] = iso(2.75)
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h["runs"]["every"][0]["end"] = iso(1.85)  # before the daemon's last beat
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h["runs"]["every"][0]["end"] = iso(2.0)
        h["heartbeats"] = {100: [(who, int((BASE + 0.5) * S), int((BASE + 1.98) * S))]}
        # A daemon of a later run with the same (reused) pid, or of another worker's run,
        # does not stretch this run's end.
        h["heartbeats"] = {100: [(who, int((BASE + 900) * S), int((BASE + 960) * S)),
                                 ("w9", int((BASE + 0.5) * S), int((BASE + 1.98) * S))]}
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h["runs"]["every"][0]["end"] = iso(960.0)
        self.assertEqual(self.counts(h)[0], {"record_disagreements": 1})
        h = history()
        for r in h["runs"]["every"] + h["runs"]["cont"]:
            if r["node"] == "w2":  # w2's clock is 30 s ahead: so are its records
                r["start"], r["end"] = (iso(checker._iso_s(r[k]) - BASE + 30)
                                        for k in ("start", "end"))
        self.assertEqual(self.counts(h)[0]["record_disagreements"], 4)
        h["skew"] = {"w2": 30}
        self.assertEqual(self.counts(h)[0], {})

    def test_daemon_lives_split_a_reused_pid(self):
        """The same worker's run and daemon pids, reused an hour later (seed 6007), are two
        lives, each with its own death; merged, they stretched one run's end by an hour and
        cut the other's daemon off."""
        beats = [("w4", 13412, 13408, int((BASE + t) * S))
                 for t in [0.5 + 0.02 * i for i in range(50)] +
                 [3600.5 + 0.02 * i for i in range(50)]]
        deaths = {("w4", 13412): [int((BASE + 1.6) * S), int((BASE + 3601.7) * S)]}
        lives = checker.daemon_lives(beats, deaths)
        self.assertEqual(len(lives[13408]), 2)
        (w1, f1, l1, d1), (w2, f2, l2, d2) = sorted(lives[13408], key=lambda x: x[1])
        self.assertEqual((w1, w2), ("w4", "w4"))
        self.assertEqual((f1, l1, d1), (int((BASE + 0.5) * S), int((BASE + 0.5 + 0.98) * S),
                                        int((BASE + 1.6) * S)))
        self.assertEqual((f2, d2), (int((BASE + 3600.5) * S), int((BASE + 3601.7) * S)))
        # No death seen: a silence of over 2 s still splits them.
        lives = checker.daemon_lives(beats, {})
        self.assertEqual(sorted(x[3] for x in lives[13408]), [0, 0])
        self.assertEqual(len(lives[13408]), 2)

    def test_final_state_items(self):
        h = history()
        h.update(lock_nodes=["/leasekeeper/mutex/every/_c_x-lock-0000000001"],
                 leftover_processes=["pid 5 (lk-record) still alive"],
                 leftover_cgroups=["/sys/fs/cgroup/x/run-3"], crashes=["w2 exited"],
                 sanitizer=["w1: ERROR: AddressSanitizer"], hostile_accepted=2)
        counts, rep = self.counts(h)
        self.assertEqual(counts, {"orphan_lock_nodes": 1, "leftovers": 2, "worker_crashes": 1,
                                  "sanitizer_reports": 1, "hostile_accepted": 2})
        self.assertEqual(set(rep.failed()), set(counts))

    def test_expected_ticks(self):
        self.assertEqual(checker.expected_ticks("@every 10s", 95, 130), [100, 110, 120, 130])
        self.assertEqual(checker.expected_ticks("cron * * * * *", 1, 180), [60, 120, 180])
        self.assertEqual(checker.expected_ticks("cron */2 * * * *", 0, 300), [0, 120, 240])
        self.assertIsNone(checker.expected_ticks("@continuous", 0, 100))
        self.assertIsNone(checker.expected_ticks("cron 5 * * * *", 0, 100))


def _txn(zxid, typ, body, cid=0x100, ms=1000):
    import struct
    return struct.pack(">qiqqi", cid, 1, zxid, ms, typ) + body


def _s(b):
    import struct
    return struct.pack(">i", len(b)) + b


def _multi(zxid, ops):
    import struct
    return _txn(zxid, 14, struct.pack(">i", len(ops)) + b"".join(
        struct.pack(">i", t) + _s(b) for t, b in ops))


def _log(txns, tail=b""):
    """A transaction log file as ZooKeeper 3.8 writes it: header, records, then zeros."""
    import struct
    import zlib
    out = b"ZKLG" + struct.pack(">iq", 2, 0)
    for t in txns:
        out += struct.pack(">qi", zlib.adler32(t), len(t)) + t + b"B"
    return out + tail + b"\0" * 64


class ZkLogTest(unittest.TestCase):
    """lktest/zklog.py on logs written here in ZooKeeper's format."""

    def setUp(self):
        import tempfile
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, server, name, data):
        d = os.path.join(self.tmp.name, server, "version-2")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        return os.path.join(self.tmp.name, server)

    def test_creates_sets_deletes_and_multis(self):
        import json
        import struct
        runs = "/leasekeeper/jobs/every/runs/"
        rec = json.dumps({"tick": 1800000020, "outcome": "missed"}).encode()
        rec30 = rec.replace(b"20", b"30")
        acl = struct.pack(">i", 0)
        create = _txn(0x500000001, 1, _s((runs + "run-01").encode()) + _s(rec) + acl)
        multi = _multi(0x500000002, [
            (1, _s(b"/leasekeeper/jobs/every/claim") + _s(b"x") + acl),
            (15, _s((runs + "run-02").encode()) + _s(rec30) + acl)])
        setd = _txn(0x500000003, 5, _s((runs + "run-02").encode()) + _s(b"{}") +
                    struct.pack(">i", 0))
        other = _txn(0x500000004, 1, _s(b"/elsewhere/runs/run-9") + _s(rec) + acl)
        # a multi that failed at its second operation: its first is logged as it was, and
        # nothing of it happened
        failed = _multi(0x500000005, [(1, _s((runs + "run-04").encode()) + _s(rec) + acl),
                                      (-1, struct.pack(">i", -110))])
        gone = _txn(0x500000006, 20, _s(b"/leasekeeper/jobs/every/runs/run-05"))
        closed = _txn(0x500000007, -11, struct.pack(">i", 1) + _s(b"/leasekeeper/w/x"))
        bad = _txn(0x500000008, 1, _s((runs + "run-03").encode()) + _s(rec) + acl)
        torn = struct.pack(">qi", 12345, len(bad)) + bad + b"B"  # a wrong checksum
        z1 = self.write("zk1", "log.500000001",
                        _log([create, multi, setd, other, failed, gone, closed], torn))
        z2 = self.write("zk2", "log.500000001", _log([create]))
        z3 = self.write("zk3", "log.500000002", b"not a log")
        got = [(z, [(op, p) for op, p, _ in ops]) for z, _ms, ops in zklog.read_log(
            os.path.join(z1, "version-2", "log.500000001"))]
        self.assertEqual(got, [
            (0x500000001, [("create", runs + "run-01")]),
            (0x500000002, [("create", "/leasekeeper/jobs/every/claim"),
                           ("create", runs + "run-02")]),
            (0x500000003, [("set", runs + "run-02")]),
            (0x500000004, [("create", "/elsewhere/runs/run-9")]),
            (0x500000005, []),
            (0x500000006, [("delete", runs + "run-05")]),
            (0x500000007, [("delete", "/leasekeeper/w/x")])])
        logged = zklog.runs_logged({"zk1": z1, "zk2": z2, "zk3": z3})
        self.assertEqual(logged, {"every": [
            {"name": "run-01", "zxid": 0x500000001, "ms": 1000, "tick": 1800000020,
             "outcome": "missed", "record": json.loads(rec), "servers": ["zk1", "zk2"],
             "deleted": False, "shadowed": False},
            {"name": "run-02", "zxid": 0x500000002, "ms": 1000, "tick": 1800000030,
             "outcome": "missed", "record": json.loads(rec30), "servers": ["zk1"],
             "deleted": True, "shadowed": False}]})

    def test_a_name_created_twice_is_shadowed(self):
        import json
        import struct
        runs = "/leasekeeper/jobs/every/runs/"
        acl = struct.pack(">i", 0)

        def create(zxid, tick):
            rec = json.dumps({"tick": tick, "outcome": "ok"}).encode()
            return _txn(zxid, 1, _s((runs + "run-07").encode()) + _s(rec) + acl)
        # epoch 0x81's record of tick 10, and epoch 0x83's of tick 20 under the same name
        old, new = create(0x8100000198, 1800000010), create(0x830000000c, 1800000020)
        z1 = self.write("zk1", "log.8100000001", _log([old, new]))
        z2 = self.write("zk2", "log.8300000001", _log([new]))
        got = zklog.runs_logged({"zk1": z1, "zk2": z2})["every"]
        self.assertEqual([(r["tick"], r["servers"], r["shadowed"]) for r in got],
                         [(1800000010, ["zk1"], True), (1800000020, ["zk1", "zk2"], True)])
        # a delete between the two: a name used again, as a consistent ZooKeeper may
        delete = _txn(0x8200000001, 2, _s((runs + "run-07").encode()) + struct.pack(">i", -1))
        z1 = self.write("zk1", "log.8100000001", _log([old, delete, new]))
        got = zklog.runs_logged({"zk1": z1, "zk2": z2})["every"]
        self.assertEqual([(r["tick"], r["deleted"], r["shadowed"]) for r in got],
                         [(1800000010, True, False), (1800000020, False, False)])

    def test_a_record_longer_than_its_file_ends_the_reading(self):
        import struct
        t = _txn(0x1, 2, _s(b"/leasekeeper/jobs/every/runs/run-01"))
        data = _log([t])
        cut = data[:16] + struct.pack(">qi", 0, 1 << 30) + t  # a length past the end
        z = self.write("zk1", "log.1", cut)
        self.assertEqual(list(zklog.read_log(os.path.join(z, "version-2", "log.1"))), [])
        z = self.write("zk1", "log.1", data[:len(data) - 70])  # the end byte cut off
        self.assertEqual(list(zklog.read_log(os.path.join(z, "version-2", "log.1"))), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)

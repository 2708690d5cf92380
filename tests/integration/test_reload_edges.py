#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Reloads that land while a job has ZooKeeper work in flight (issue 23, finding 2 of
docs/reliability.md).

1. A tick claim waits for ZooKeeper's answer (the worker's connection goes through a proxy
   that holds every chunk 1.5 s each way) when a reload that changes a file lands: the job is
   unchanged and takes the new configuration's copy, and the old configuration is freed at
   once. The claim's answer must then be judged with the new copy of the schedule: before
   the fix it read the freed one (a use after free: AddressSanitizer aborts the worker in
   the sanitizer build; the harness fails any test whose logs hold a sanitizer report).
   The worker must live on, stop cleanly, and no tick may run twice.
"""

import collections
import re
import signal
import sys

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

DELAY_MS = 1500  # the proxy holds each chunk this long, each way: a round trip takes 3 s
ROUNDS = 3


def stamp(line):
    """The wall time (s) of a log line "2026-11-26T11:50:00.123Z leasekeeper[..] ...", or None."""
    m = re.match(r"\d{4}-\d\d-\d\dT(\d\d):(\d\d):(\d\d)\.(\d{3})Z", line)
    if not m:
        return None
    h, mi, s, ms = (int(x) for x in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000.0


class ReloadEdgesTest(lktest.TestCase):
    def reload(self, w, n):
        """Change the job file (a comment: the job itself is unchanged) and SIGHUP; return
        the log offset of the reload's "reloaded:" line."""
        with open(self.jobs_ini, "a") as f:
            f.write("# reload %d\n" % n)
        w.signal(signal.SIGHUP)
        m = w.wait_log(r"^.*reloaded: 1 job\(s\) \(1 unchanged, 0 stopped, 0 started\).*$",
                       timeout=30)
        return m

    def test_reload_while_a_tick_claim_waits_for_its_answer(self):
        # A tickTime of 1 s lets the session be 20 s: a 3 s round trip is far from its end.
        self.start_zookeeper(tick_ms=1000)
        px = self.proxy()
        rec = self.record_file()
        cfg = self.write_config(
            name="w1", hosts=px.connect_string, zookeeper={"session_timeout": "20s"},
            worker={"allow_root_jobs": True},
            jobs={"tick": {"schedule": "@every 1s", "command": rec.command("w1", hold_ms=50),
                           "start_deadline": "30s"}})
        self.jobs_ini = self.path("w1", "jobs", "jobs.ini")
        w = self.leasekeeper("run", "-v", "-c", cfg, name="w1")
        w.wait_log(r"registered as", timeout=60)
        rec.wait_for("start", timeout=60)
        # The first reload retires the configuration the worker started with (which is never
        # freed); from then on each reload frees the configuration the job had.
        self.reload(w, 0)
        px.delay(DELAY_MS)
        met, n = 0, 0
        while met < ROUNDS:
            n += 1
            self.assertLessEqual(n, 2 * ROUNDS, "the reload met the claim in flight in only "
                                 "%d of %d rounds (a loaded machine?)" % (met, n - 1))
            acq = w.wait_log(r"^.*job tick: lease acquired on .*$", timeout=60)
            # The claim's read of the tick state went out with the lease's acquisition: its
            # answer is a round trip (3 s) away. Reload now.
            rel = self.reload(w, n)
            out = w.wait_log(r"^.*job tick: (running the tick of|the tick of .* is already "
                             r"run or missed|the tick of .* could not be claimed).*$",
                             since=acq.end(), timeout=60)
            self.assertTrue(w.alive(), "the worker died after the claim's answer")
            # The reload met the claim in flight if it ended before the claim's outcome and
            # within one way of the proxy's delay after the lease came (which sent the read):
            # before the read even reached the server.
            if rel.end() < out.start() and (stamp(rel.group(0)) - stamp(acq.group(0)) <
                                            DELAY_MS / 1000.0):
                met += 1
        sys.stderr.write("\nreload_edges: the reload met the claim in flight in %d of %d "
                         "rounds\n" % (met, n))
        px.delay(0)
        before = rec.count("start")
        rec.wait_for("start", count=before + 2, timeout=60)
        self.assertTrue(w.alive())
        self.assertEqual(w.stop(timeout=30), 0, "the worker did not stop cleanly")
        ticks = collections.Counter(s.fields.get("tick") for s in rec.starts())
        self.assertNotIn(None, ticks, "a run without LEASEKEEPER_TICK")
        twice = {t: c for t, c in ticks.items() if c > 1}
        self.assertEqual(twice, {}, "ticks run more than once")
        self.assertEqual(rec.check(leases=1).total, 0)


if __name__ == "__main__":
    lktest.main()

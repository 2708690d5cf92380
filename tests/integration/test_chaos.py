#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=900 split
"""The chaos suite: three workers share a @continuous mutex job whose command (lk-record)
records its start in a shared file and holds an flock; a DeathWatcher records when each
run dies; check_overlaps counts runs that started while another was alive (by time, and
by the kernel's flock, which covers a run's whole process group). Faults, each repeated,
numbered as in docs/safety.md, with the method that checks them:

1. SIGSTOP the holder's main process for 3T, then SIGCONT
   (test_main_stopped_for_3T_hands_over_without_overlap).
2. kill -9 the holder's main process (test_main_killed_ends_the_run_at_once_and_hands_over).
3. kill -9 the holder's supervisor (test_supervisor_killed_ends_the_run_and_is_replaced).
4. Blackhole the holder's connection for 2T; and for T/4, which must not interrupt
   (test_cut_off_for_2T_hands_over_and_for_T_over_4_runs_on).
5. Kill the leader of a 3-server ensemble: the job must not be interrupted
   (test_zk_leader_killed_does_not_interrupt_the_run).
6. A job that forks grandchildren and ignores SIGTERM, holder stopped
   (test_grandchildren_ignoring_sigterm_die_before_the_next_run).
7. The server the holder is connected to frozen for 3T: the worker moves to another server
   before the job's SIGTERM is due (test_frozen_zk_server_is_left_before_the_run_is_stopped).
8. A job that double-forks a setsid daemon ignoring SIGTERM, holder stopped for 3T: with a
   cgroup per run the daemon dies with the run (test_setsid_daemon_dies_with_its_run_in_a_cgroup);
   8b. with cgroups = off it escapes, asserted (test_setsid_daemon_escapes_with_cgroups_off).

Each scenario ends by stopping every worker, so that every run has its run record, and
checks the records on paper (lktest.paper_overlaps): no two runs of the job overlap by the
start and end the records give, which are the supervisor's own (exec, and its last process
gone), even for the run of a main process that was stopped. Scenario 1 also checks that
the killed run's recorded end lies within 100 ms of the last line its job wrote.

For each scenario the suite prints the overlap count (the assertion: 0) and the smallest
gap between the old run's death and the next run's start, and appends them to
$LEASEKEEPER_BUILD_DIR/chaos-results.txt.
"""

import os
import re
import signal
import sys
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NAMES = ("alpha", "beta", "gamma")
T_S = 4.0
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
REPS = int(os.environ.get("LKTEST_CHAOS_REPS", "3"))
RESULTS = []


def report(scenario, rec, gaps, reps=REPS):
    rep = rec.check(leases=1)
    line = "%-34s reps %d  overlaps %d  flock overlaps %d  smallest death->start gap %s" % (
        scenario, reps, rep.overlaps, rep.flock_overlaps,
        "%.0f ms" % min(gaps) if gaps else "-")
    RESULTS.append(line)
    sys.stderr.write("\nchaos: %s\n" % line)
    out = os.environ.get("LEASEKEEPER_BUILD_DIR")
    if out:
        with open(os.path.join(out, "chaos-results.txt"), "a") as f:
            f.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), line))
    return rep


class ChaosTest(lktest.TestCase):
    def cluster(self, rec_kw=None, ensemble=False, proxies=True, worker_kw=None):
        """ZooKeeper (or an ensemble), the record file, and three workers (each behind its
        own proxy) running the job "chaos": lk-record with rec_kw."""
        if ensemble:
            self.start_ensemble(3)
        else:
            self.start_zookeeper()
        self.rec = self.record_file()
        self.procs, self.proxies, self.cfgs = {}, {}, {}
        for n in NAMES:
            hosts = self.zk.connect_string
            if proxies:
                self.proxies[n] = self.proxy(name="proxy-" + n)
                hosts = self.proxies[n].connect_string
            job = {"command": self.rec.command(n, **(rec_kw or {})), "restart_backoff": "1s"}
            self.cfgs[n] = self.write_config(name=n, hosts=hosts,
                                             zookeeper={"session_timeout": "%ds" % T_S},
                                             safety=SAFETY,
                                             worker=dict({"allow_root_jobs": True},
                                                         **(worker_kw or {})),
                                             jobs={"chaos": job})
            self.start_worker(n)
        self.rec.wait_for("start", timeout=30)
        time.sleep(1.0)

    def start_worker(self, n):
        p = self.worker(self.cfgs[n], name="%s-%d" % (n, int(time.monotonic() * 1000)))
        self.procs[n] = p
        p.wait_log(r"registered as", timeout=T_S + 30)
        return p

    def supervisor_pid(self, n):
        text = self.procs[n].log_text()
        pids = re.findall(r"supervisor pid (\d+)|started a new supervisor, pid (\d+)", text)
        last = pids[-1]
        return int(last[0] or last[1])

    def running(self):
        live = {}
        for r in self.rec.records():
            if r.kind == "start":
                live[r.pid] = r
            elif r.kind in ("end", "death"):
                live.pop(r.pid, None)
        return sorted(live.values(), key=lambda r: r.t_ns)

    def holder(self):
        self.wait_until(lambda: len(self.running()) == 1, timeout=30,
                        msg="expected exactly one running job")
        return self.running()[0]

    def takeover(self, old):
        """Wait for old's run to die and another worker's run to start; return the gap (ms)."""
        self.wait_until(lambda: any(d.pid == old.pid for d in self.rec.records()
                                    if d.kind == "death"), timeout=30,
                        msg="the old run never died")
        death = [d for d in self.rec.records() if d.kind == "death" and d.pid == old.pid][0]
        self.wait_until(lambda: any(s.t_ns > old.t_ns and s.who != old.who
                                    for s in self.rec.starts()), timeout=30,
                        msg="no other worker took over")
        new = [s for s in self.rec.starts() if s.t_ns > old.t_ns and s.who != old.who][0]
        self.assertLess(death.t_ns, new.t_ns, "the new run started before the old one died")
        return (new.t_ns - death.t_ns) / 1e6

    def stop_holder(self, old, seconds):
        """SIGSTOP the main process of old's worker for `seconds`, waiting meanwhile for
        another worker to take over; return the takeover gap (ms)."""
        main = self.procs[old.who].pid
        t0 = time.monotonic()
        os.kill(main, signal.SIGSTOP)
        try:
            gap = self.takeover(old)
            time.sleep(max(0.0, t0 + seconds - time.monotonic()))
        finally:
            os.kill(main, signal.SIGCONT)
        return gap

    def wall_ms(self, t_ns):
        """A record file's CLOCK_MONOTONIC time as wall-clock ms (as run records have it)."""
        return (t_ns + time.time_ns() - time.monotonic_ns()) / 1e6

    def run_records(self):
        return lktest.run_records(self.kazoo(), "/leasekeeper", "chaos")

    def stop_workers(self):
        """SIGTERM every worker and wait for it: each run it had is over and recorded."""
        for p in self.procs.values():
            if p.alive():
                p.signal(signal.SIGTERM)
        for p in self.procs.values():
            p.wait(timeout=60)

    def assert_safe(self, rep, final=True):
        """No overlap by the record file, then (final: workers stopped, every run recorded)
        none on paper either."""
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))
        if not final:
            return None
        self.stop_workers()
        recs = self.run_records()
        self.assertGreater(len(recs), 0, "no run record at all")
        bad = lktest.paper_overlaps(recs, leases=1)
        self.assertEqual(bad, [], "runs overlap in their records:\n" + "\n".join(bad[:10]))
        return recs

    def assert_recorded_end(self, recs, old):
        """The record of old's run ends within 100 ms of the last line its job wrote."""
        last = max(r.t_ns for r in self.rec.records() if r.pid == old.pid)
        start = self.wall_ms(old.t_ns)
        mine = [r for r in recs if r.node == old.who and r.start_ms <= start + 5]
        self.assertTrue(mine, "no run record of %s's run %d" % (old.who, old.pid))
        r = max(mine, key=lambda r: r.start_ms)
        self.assertLessEqual(abs(r.end_ms - self.wall_ms(last)), 100,
                             "%s ends %.0f ms from its job's last line" %
                             (r.name, r.end_ms - self.wall_ms(last)))
        self.assertEqual(r.outcome, "killed", r.data)

    # -- scenarios --------------------------------------------------------------------------

    def test_main_stopped_for_3T_hands_over_without_overlap(self):
        self.cluster()
        gaps, olds = [], []
        for _ in range(REPS):
            old = self.holder()
            olds.append(old)
            gaps.append(self.stop_holder(old, 3 * T_S))
            self.procs[old.who].wait_log(r"expired; opening a new one", timeout=30)
            self.procs[old.who].wait_log(r"registered as", timeout=30)
            time.sleep(1.0)
            self.assertEqual(len(self.running()), 1,
                             "the stopped worker must not run the job while another holds it")
        recs = self.assert_safe(report("1 SIGSTOP main 3T", self.rec, gaps))
        for old in olds:
            self.assert_recorded_end(recs, old)
        # Woken past its deadline, the stopped worker records the killed run and nothing
        # it did not do: no start refused for a lease it no longer had.
        every = lktest.run_records(self.kazoo(), "/leasekeeper", "chaos", runs_only=False)
        self.assertEqual([r.data for r in every if r.outcome == "start_failed"
                          or r.data.get("reason") == "failed" and "error" in r.data], [])
        for old in olds:
            self.assertNotRegex(self.procs[old.who].log_text(), r"refusing to start job \d")

    def test_main_killed_ends_the_run_at_once_and_hands_over(self):
        self.cluster()
        gaps = []
        for _ in range(REPS):
            old = self.holder()
            t_kill = time.monotonic_ns()
            os.kill(self.procs[old.who].pid, signal.SIGKILL)
            death = self.rec.wait_for("death", who=old.who, timeout=10)
            death = [d for d in death if d.pid == old.pid][0]
            self.assertLess((death.t_ns - t_kill) / 1e6, 1000,
                            "the job must die at once when main dies")
            gaps.append(self.takeover(old))
            self.start_worker(old.who)
        self.assert_safe(report("2 kill -9 main", self.rec, gaps))

    def test_supervisor_killed_ends_the_run_and_is_replaced(self):
        self.cluster()
        gaps = []
        for _ in range(REPS):
            old = self.holder()
            t_kill = time.monotonic_ns()
            os.kill(self.supervisor_pid(old.who), signal.SIGKILL)
            gaps.append(self.takeover(old))
            death = [d for d in self.rec.records() if d.kind == "death" and d.pid == old.pid][0]
            self.assertLess((death.t_ns - t_kill) / 1e6, 1000)
            self.procs[old.who].wait_log(r"started a new supervisor", timeout=20)
            self.assertTrue(self.procs[old.who].alive())
        self.assert_safe(report("3 kill -9 supervisor", self.rec, gaps))

    def test_cut_off_for_2T_hands_over_and_for_T_over_4_runs_on(self):
        self.cluster()
        gaps = []
        for _ in range(REPS):
            old = self.holder()
            proxy = self.proxies[old.who]
            t0 = time.monotonic()
            proxy.blackhole()
            try:
                gaps.append(self.takeover(old))
                time.sleep(max(0.0, t0 + 2 * T_S - time.monotonic()))
            finally:
                proxy.heal()
            self.procs[old.who].wait_log(r"expired; opening a new one", timeout=30)
            self.procs[old.who].wait_log(r"registered as", timeout=30)
        self.assert_safe(report("4a blackhole 2T", self.rec, gaps), final=False)
        # A short blackhole is absorbed: the deadline keeps the job running.
        for _ in range(REPS):
            old = self.holder()
            starts = len(self.rec.starts())
            self.proxies[old.who].blackhole()
            time.sleep(T_S / 4)
            self.proxies[old.who].heal()
            time.sleep(T_S)
            self.assertEqual([r.pid for r in self.running()], [old.pid],
                             "a blackhole of T/4 must not interrupt the job")
            self.assertEqual(len(self.rec.starts()), starts)
        self.assert_safe(report("4b blackhole T/4 (no interruption)", self.rec, []))

    def test_zk_leader_killed_does_not_interrupt_the_run(self):
        self.cluster(ensemble=True, proxies=False)
        ens = self.zk
        for _ in range(REPS):
            old = self.holder()
            leader = ens.leader()
            ens.kill(leader)
            ens.wait_for_leader(timeout=30)
            time.sleep(T_S)
            self.assertEqual([r.pid for r in self.running()], [old.pid],
                             "a leader change must not interrupt the job")
            ens.start(leader)
            time.sleep(1.0)
        self.assertEqual(len(self.rec.starts()), 1)
        self.assert_safe(report("5 leader kill (no interruption)", self.rec, []))

    def connected_member(self, ens, name):
        """The index of the ensemble member that worker `name`'s session is connected to."""
        sid = re.findall(r"session (0x[0-9a-f]+) (?:established|reconnected)",
                         self.procs[name].log_text())[-1]
        for i, member in enumerate(ens):
            try:
                if "sid=%s," % sid in member.four_letter("cons"):
                    return i
            except Exception:
                continue
        return None

    def test_frozen_zk_server_is_left_before_the_run_is_stopped(self):
        """The server the holder talks to freezes (SIGSTOP) for 3T. The library alone would
        give up on it only after 2/3 T of silence, after the job's SIGTERM at
        T - safety_margin - kill_grace; the worker notices the stalled heartbeat at T/6 and
        moves to another server first, so the job runs on."""
        self.cluster(ensemble=True, proxies=False)
        ens = self.zk
        done = 0
        for _ in range(REPS * 4):
            if done == REPS:
                break
            old = self.holder()
            i = self.connected_member(ens, old.who)
            if i is None or i == ens.leader():
                # on the leader: move the worker to another server and look again
                self.procs[old.who].signal(signal.SIGTERM)
                self.procs[old.who].wait(timeout=10)
                self.start_worker(old.who)
                time.sleep(1.0)
                continue
            ens[i].pause()
            try:
                time.sleep(3 * T_S)
            finally:
                ens[i].resume()
            self.assertEqual([r.pid for r in self.running()], [old.pid],
                             "a frozen follower must not interrupt the job")
            self.procs[old.who].wait_log(r"moving to another server", timeout=5)
            done += 1
            time.sleep(2.0)
        self.assertEqual(done, REPS, "the holder never sat on a follower")
        self.assert_safe(report("7 frozen follower (no interruption)", self.rec, []))

    def test_grandchildren_ignoring_sigterm_die_before_the_next_run(self):
        self.cluster(rec_kw={"ignore_term": True, "grandchildren": 2}, proxies=False)
        gaps = []
        for _ in range(REPS):
            old = self.holder()
            gaps.append(self.stop_holder(old, 2 * T_S))
            self.procs[old.who].wait_log(r"registered as", timeout=30)
        # An flock overlap would show a grandchild that outlived the deadline.
        self.assert_safe(report("6 grandchildren ignore SIGTERM", self.rec, gaps))

    def daemon_escapes(self, hb_path):
        """Heartbeats of a run's setsid daemon written after another worker's later run
        started: (count, descriptions). Also SIGKILLs every daemon after the test."""
        hbs = {}  # daemon pid -> (who, parent pid, last heartbeat)
        for line in lktest.read_text(hb_path).splitlines():
            p = line.split()
            if len(p) == 5 and p[0] == "hb":
                hbs[int(p[2])] = (p[1], int(p[3]), int(p[4]))
        runs = {r.pid: r for r in self.rec.starts()}
        out = []
        for dpid, (who, parent, last) in hbs.items():
            run = runs.get(parent)
            if run is None:
                continue
            for s in self.rec.starts():
                if s.who != who and s.t_ns > run.t_ns and last > s.t_ns:
                    out.append("daemon %d of %s's run %d beat %.0f ms after %s's run %d "
                               "started" % (dpid, who, parent, (last - s.t_ns) / 1e6, s.who,
                                            s.pid))
        return len(out), out

    def kill_daemons(self, hb_path):
        for line in lktest.read_text(hb_path).splitlines():
            p = line.split()
            if len(p) == 5 and p[0] == "hb":
                try:
                    os.kill(int(p[2]), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def daemon_cluster(self, cgroups):
        if os.geteuid() != 0 or lktest.cgroup_mount() is None:
            self.skipTest("NOT RUN: needs root and a cgroup v2 hierarchy")
        hb = self.path("heartbeats")
        self.addCleanup(self.kill_daemons, hb)
        self.cluster(rec_kw={"daemon": hb}, proxies=False, worker_kw={"cgroups": cgroups})
        return hb

    def test_setsid_daemon_dies_with_its_run_in_a_cgroup(self):
        hb = self.daemon_cluster("required")
        gaps = []
        for _ in range(REPS):
            old = self.holder()
            gaps.append(self.stop_holder(old, 3 * T_S))
            self.procs[old.who].wait_log(r"registered as", timeout=30)
        n, escapes = self.daemon_escapes(hb)
        rep = report("8 setsid daemon, cgroup per run", self.rec, gaps)
        self.assertEqual(n, 0, "\n".join(escapes[:10]))
        self.assert_safe(rep)

    def test_setsid_daemon_escapes_with_cgroups_off(self):
        """The documented limit of cgroups = off: a setsid daemon outlives its run."""
        hb = self.daemon_cluster("off")
        old = self.holder()
        self.stop_holder(old, 3 * T_S)
        self.wait_until(lambda: self.daemon_escapes(hb)[0] > 0, timeout=10,
                        msg="the daemon of the stopped holder's run did not outlive it")
        rep = self.rec.check(leases=1)
        self.assertGreater(rep.flock_overlaps, 0, "the daemon kept the run's flock")
        sys.stderr.write("\nchaos: 8b cgroups = off: the setsid daemon escaped, as documented "
                         "(%d flock overlap(s))\n" % rep.flock_overlaps)


def tearDownModule():
    if RESULTS:
        sys.stderr.write("\nchaos summary (T = %.0f s, safety_margin 500 ms, kill_grace 1 s):\n"
                         % T_S)
        for line in RESULTS:
            sys.stderr.write("  %s\n" % line)


if __name__ == "__main__":
    lktest.main()

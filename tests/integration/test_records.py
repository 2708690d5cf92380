#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Runs you can see while they run, under one id: a run in progress is listed from any host
(status --json and text: job, worker, pid, since, fence, run id) from its ephemeral node
<root>/jobs/<job>/running/<run id>; the id is the one in the run's environment
(LEASEKEEPER_RUN_ID), its worker's log lines (run=), and, once it ended, its run record; the
node goes when the run ends."""

import json
import os
import re
import signal
import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"


def iso_now():
    """This host's wall clock now, as a record writes it (milliseconds, UTC)."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


def records_of(kz, job="tick"):
    """A function that reads job's run records through kazoo client kz (none before the
    folder exists)."""
    path = "/leasekeeper/jobs/%s/runs" % job

    def records():
        if not kz.exists(path):
            return []
        return [json.loads(kz.get(path + "/" + c)[0]) for c in kz.get_children(path)]
    return records


class RecordsTest(lktest.TestCase):
    def status(self, cfg, *args):
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg] + list(args),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def aborted_record(self, job):
        """The run record of job's one aborted run, once it is written."""
        kz = self.kazoo()
        path = "/leasekeeper/jobs/%s/runs" % job

        def aborted():
            if not kz.exists(path):
                return []
            recs = [json.loads(kz.get(path + "/" + c)[0]) for c in kz.get_children(path)]
            return [r for r in recs if r.get("reason") == "aborted"]

        self.wait_until(aborted, timeout=60, msg="no record of the aborted run")
        return aborted()[0]

    def running(self, cfg, job):
        st = json.loads(self.status(cfg, "--json"))
        return [x for j in st["jobs"] if j["name"] == job for x in j.get("running", [])]

    def test_a_run_in_progress_is_seen_from_any_host_under_its_one_id(self):
        self.start_zookeeper()
        out = self.path("ids")
        os.makedirs(out)
        jobs = {"cont": {"command": 'echo "$LEASEKEEPER_RUN_ID" > %s/$LEASEKEEPER_NODE; '
                                    'exec sleep 3600' % out, "restart_backoff": "1s"}}
        cfgs, procs = {}, {}
        for n in ("alpha", "beta"):
            cfgs[n] = self.write_config(name=n, zookeeper={"session_timeout": "4s"},
                                        safety=SAFETY, worker={"allow_root_jobs": True},
                                        jobs=jobs)
            procs[n] = self.worker(cfgs[n], name=n)
            procs[n].wait_log(r"registered as", timeout=30)
        run = self.wait_until(lambda: (self.running(cfgs["beta"], "cont") or [None])[0],
                              timeout=30, msg="no run in progress listed")
        holder = run["node"]
        other = "beta" if holder == "alpha" else "alpha"
        # Seen from the host that does not run it, with every fact.
        self.assertRegex(run["run_id"], r"^%s-\d+-\d+$" % holder)
        self.assertRegex(run["since"], RFC3339)
        self.assertIsInstance(run["fence"], int)
        self.assertGreater(run["pid"], 0)
        os.kill(run["pid"], 0)  # the run's process, alive
        self.assertEqual(run["session"][:2], "0x")
        self.assertNotEqual(run["session"], "0x0", "the run's node is ephemeral")
        # One id: the run's environment, the holder's log lines, status.
        self.wait_until(lambda: os.path.exists(os.path.join(out, holder)), timeout=10)
        self.assertEqual(lktest.read_text(os.path.join(out, holder)).strip(), run["run_id"])
        self.assertIn("run=%s " % run["run_id"], procs[holder].log_text())
        text = self.status(cfgs[other])
        self.assertRegex(text, r"\n    running  %s\s+pid %d\s+since %s fence %d run=%s\n" % (
            holder, run["pid"], re.escape(run["since"]), run["fence"], re.escape(run["run_id"])))
        self.assertEqual(len(self.running(cfgs[other], "cont")), 1, "one run of a mutex job")

        # The holder stops: its run ends, its node goes, its record has the same id.
        procs[holder].stop(timeout=30)
        self.wait_until(lambda: all(r["node"] != holder
                                    for r in self.running(cfgs[other], "cont")),
                        timeout=30, msg="the ended run is still listed")
        rec = self.last_run(cfgs[other], "cont")
        self.assertEqual(rec["run_id"], run["run_id"])
        self.assertEqual(rec["outcome"], "stopped")
        # The other worker takes over: its run is listed, under its own id.
        nxt = self.wait_until(lambda: (self.running(cfgs[other], "cont") or [None])[0],
                              timeout=30, msg="the other worker's run is not listed")
        self.assertEqual(nxt["node"], other)
        self.assertNotEqual(nxt["run_id"], run["run_id"])

    def tick_behind_proxy(self, session_timeout="10s"):
        """A worker behind a proxy with one job, tick (@every 2s, true): the proxy, the
        worker, a kazoo client and a function that reads tick's run records."""
        self.start_zookeeper()
        proxy = self.proxy()
        cfg = self.write_config(name="alpha", hosts=proxy.connect_string,
                                zookeeper={"session_timeout": session_timeout}, safety=SAFETY,
                                worker={"allow_root_jobs": True},
                                jobs={"tick": {"command": "true", "schedule": "@every 2s",
                                               "history": 100}})
        self.cfg = cfg
        proc = self.worker(cfg, name="alpha")
        kz = self.kazoo()
        return proxy, proc, kz, records_of(kz)

    def test_a_record_whose_answer_is_lost_is_written_once(self):
        """The connection is cut right after a run record's create reaches the server, before
        its answer comes back: the worker reconnects (same session), finds the record it
        wrote among the newest, and does not write it again. One record per run id."""
        proxy, proc, kz, records = self.tick_behind_proxy()
        # Once the folder is there (the first create of a record may fail for want of it).
        self.wait_until(records, timeout=60, msg="no run record")
        proxy.cut_after(b"/jobs/tick/runs/run-")
        self.wait_until(lambda: proxy.cuts == 1, timeout=60,
                        msg="no run record's create was cut")

        self.wait_until(lambda: len([r for r in records() if r.get("run_id")]) >= 4,
                        timeout=120, msg="fewer than 4 run records after the cut")
        proc.stop(timeout=30)
        ids = [r["run_id"] for r in records() if r.get("run_id")]
        self.assertEqual(sorted(ids), sorted(set(ids)), "a run id recorded twice")
        # No run lost either: runs 1..N of the worker, each recorded.
        self.assertEqual(sorted(int(i.rsplit("-", 1)[1]) for i in ids),
                         list(range(1, len(ids) + 1)), ids)
        self.assertIn("the run record whose answer was lost had landed", proc.log_text())

    def test_a_claim_whose_answer_is_lost_with_the_session_is_not_lost(self):
        """The connection is cut right after a tick's claim reaches the server, and held
        until the session expired: the claim landed, its worker never heard. In the next
        session the tick must not stay claimed by a worker that will not run it, neither
        run nor recorded: it is given back (and run, or recorded missed). Every tick from
        the first record to the stop is run or recorded."""
        proxy, proc, kz, records = self.tick_behind_proxy(session_timeout="4s")
        self.wait_until(lambda: len(records()) >= 2, timeout=60, msg="no run record")
        proxy.cut_after(b'"runners":["alpha"]', hold=6.0)
        self.wait_until(lambda: proxy.cuts == 1, timeout=60, msg="no claim was cut")
        proc.wait_log(r"session \S+ expired", timeout=60)
        n = len(records())
        self.wait_until(lambda: len(records()) >= n + 4, timeout=120,
                        msg="fewer than 4 records after the session came back")
        proc.stop(timeout=30)
        print("".join(ln + "\n" for ln in proc.log_text().splitlines()
                      if re.search(r"session|claim|given back|missed|catching", ln)))
        ticks = sorted(r["tick"] for r in records() if r.get("tick") is not None)
        every = list(range(ticks[0], ticks[-1] + 1, 2))
        self.assertEqual(sorted(set(every) - set(ticks)), [],
                         "ticks neither run nor recorded: %s" % ticks)
        self.assertEqual(len(ticks), len(set(ticks)), "a tick recorded twice: %s" % ticks)

    def test_a_claim_whose_worker_died_before_its_answer_is_not_lost(self):
        """A restarted worker's catch-up claim (which names the ticks it skips) reaches the
        server and lands; its connection is cut before the answer, and its main process is
        SIGKILLed then (torture finding 16, seed 6009: a main killed in a short window of
        quorum). The dead process can neither record the ticks its claim skipped nor run or
        give back the tick it claimed. The skipped ticks' records land with the claim, in
        one transaction; the worker's next process gives the claimed tick back (its journal
        says it never started it), and it is run or recorded missed. Every tick from the
        first record to the stop is run or recorded, each once, and every tick the state
        marks missed has its record."""
        proxy, proc, kz, records = self.tick_behind_proxy(session_timeout="4s")
        self.wait_until(lambda: len(records()) >= 2, timeout=60, msg="no run record")
        self.assertEqual(proc.stop(timeout=30), 0)
        time.sleep(5)  # two ticks or more pass: the next claim skips them
        proxy.cut_after(b'"runners":["alpha"]', hold=10.0)
        second = self.worker(self.cfg, name="alpha-2")
        self.wait_until(lambda: proxy.cuts == 1, timeout=60, msg="no claim was cut")
        os.kill(second.pid, signal.SIGKILL)
        second.wait(timeout=10)
        state = json.loads(kz.get("/leasekeeper/jobs/tick/state")[0])
        claimed = state["tick"]
        print("the dead process's claim: tick %d, runners %s, missed %s"
              % (claimed, state.get("runners"), state.get("missed")[-4:]))
        third = self.worker(self.cfg, name="alpha-3")
        third.wait_log(r"registered as", timeout=60)
        n = len(records())
        self.wait_until(lambda: len(records()) >= n + 3, timeout=120,
                        msg="fewer than 3 records after the restart")
        self.assertEqual(third.stop(timeout=30), 0)
        print("".join(ln + "\n" for ln in third.log_text().splitlines()
                      if re.search(r"previous process|claim|given back|missed|catching", ln)))
        recs = records()
        ticks = sorted(r["tick"] for r in recs if r.get("tick") is not None)
        self.assertIn(claimed, ticks, "the dead process's claimed tick: neither run nor "
                      "recorded")
        every = list(range(ticks[0], ticks[-1] + 1, 2))
        self.assertEqual(sorted(set(every) - set(ticks)), [],
                         "ticks neither run nor recorded: %s" % ticks)
        self.assertEqual(len(ticks), len(set(ticks)), "a tick recorded twice: %s" % ticks)
        marked = set(json.loads(kz.get("/leasekeeper/jobs/tick/state")[0])["missed"])
        self.assertEqual(sorted(marked - set(ticks)), [],
                         "ticks marked missed in the state but never recorded")

    def test_a_claim_whose_skipped_ticks_cannot_be_recorded_still_runs(self):
        """A claim and the records of the ticks it skips are one transaction; if the records
        cannot be created (a hostile client made <job>/runs read-only on an open cluster),
        the claim is made alone and the tick runs: a record must never cost a run."""
        from kazoo.security import make_acl
        proxy, proc, kz, records = self.tick_behind_proxy(session_timeout="4s")
        self.wait_until(lambda: len(records()) >= 2, timeout=60, msg="no run record")
        self.assertEqual(proc.stop(timeout=30), 0)
        kz.set_acls("/leasekeeper/jobs/tick/runs", [make_acl("world", "anyone", read=True)])
        time.sleep(5)  # two ticks or more pass: the next claim skips them
        second = self.worker(self.cfg, name="alpha-2")
        tick = second.wait_log(r"catching up the tick of ([^,\s]+)", timeout=60).group(1)
        second.wait_log(r"with the records of the ticks it skips \(not authenticated\): "
                        r"claiming it alone", timeout=60)
        second.wait_log(r"job tick: running the tick of %s" % re.escape(tick), timeout=60)
        self.assertEqual(second.stop(timeout=30), 0)

    def test_a_ticks_mark_whose_answer_is_lost_is_recorded(self):
        """A paused job's tick is marked in the tick state (so that no claim takes it) and
        recorded paused. The connection is cut right after that write reaches the server,
        before its answer comes back: the mark landed. After the reconnect the worker must
        not take the mark for another worker's and leave the tick unrecorded (torture
        finding 14): the mark and its record are one transaction, and the worker finds the
        record. Every tick in the state's missed list has its record."""
        proxy, proc, kz, records = self.tick_behind_proxy()
        path = "/leasekeeper/jobs/tick"

        def paused():
            return [r for r in records() if r.get("outcome") == "paused"]

        self.wait_until(records, timeout=60, msg="no run record")
        self.assertEqual(self.cli("pause", "tick").returncode, 0)
        self.wait_until(paused, timeout=60, msg="no paused tick recorded")
        # The next write of the state is a paused tick's mark: its data holds the list.
        proxy.cut_after(b'"missed":[')
        self.wait_until(lambda: proxy.cuts == 1, timeout=60, msg="no mark's write was cut")
        n = len(paused())
        self.wait_until(lambda: len(paused()) >= n + 3, timeout=120,
                        msg="fewer than 3 paused ticks recorded after the cut")
        proc.stop(timeout=30)
        marked = set(json.loads(kz.get(path + "/state")[0])["missed"])
        recorded = {r["tick"] for r in records() if r.get("outcome") in ("paused", "missed")}
        self.assertTrue(marked, "no tick marked")
        self.assertEqual(sorted(marked - recorded), [],
                         "ticks marked in the state but never recorded")
        ticks = [r["tick"] for r in paused()]
        self.assertEqual(sorted(ticks), sorted(set(ticks)), "a tick recorded paused twice")
        self.assertIn("whose answer was lost, had landed with its record", proc.log_text())

    def test_a_run_ended_by_its_supervisors_death_ends_when_main_saw_it(self):
        """The supervisor is SIGKILLed during a run: the run dies with it, and main, which
        sees it gone at once, kills the run's process group too; that moment is the run's
        end in its record, not the new supervisor's hello (which comes after a 200 ms pause
        and its clean-up)."""
        self.start_zookeeper()
        cfg = self.write_config(name="alpha", safety=SAFETY, worker={"allow_root_jobs": True},
                                jobs={"long": {"command": "sleep 600"}})
        proc = self.worker(cfg, name="alpha")
        proc.wait_log(r"job long: running, pid", timeout=60)
        sv = int(proc.wait_log(r"supervisor pid (\d+)", since=0).group(1))
        killed = iso_now()
        os.kill(sv, 9)
        gone = proc.wait_log(r"^(\S+) .*the supervisor \(pid %d\) is gone" % sv, timeout=30)
        new = proc.wait_log(r"^(\S+) .*started a new supervisor", timeout=30)
        rec = self.aborted_record("long")
        print("record end %s; killed %s; seen gone %s; new supervisor %s"
              % (rec["end"], killed, gone.group(1), new.group(1)))
        # All are this host's wall clock, in the same format (milliseconds, UTC).
        self.assertRegex(rec["end"], RFC3339)
        self.assertGreaterEqual(rec["end"], killed)
        self.assertLessEqual(rec["end"], gone.group(1)[:23] + "Z")
        self.assertLess(rec["end"], new.group(1)[:23] + "Z",
                        "the record's end is the new supervisor's, not the death main saw")

    def test_a_run_whose_supervisor_died_while_main_was_stopped_ends_when_it_died(self):
        """Main is stopped (SIGSTOP) when the supervisor is SIGKILLed, and continued 3 s
        later. The run died with the supervisor (PR_SET_PDEATHSIG): its record ends then,
        as the supervisor's witness saw it, not when main came back to see it. A run whose
        group still had a running process (a child that outlives the shell) ended at main's
        kill of the group, after the continue, and says so."""
        self.start_zookeeper()
        cfg = self.write_config(name="alpha", safety=SAFETY, worker={"allow_root_jobs": True},
                                zookeeper={"session_timeout": "20s"},
                                jobs={"long": {"command": "exec sleep 600"},
                                      "kept": {"command": "sleep 600 & wait"}})
        proc = self.worker(cfg, name="alpha")
        proc.wait_log(r"job long: running, pid", timeout=60)
        proc.wait_log(r"job kept: running, pid", since=0, timeout=60)  # either first
        sv = int(proc.wait_log(r"supervisor pid (\d+)", since=0).group(1))
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            killed = iso_now()
            os.kill(sv, 9)
            time.sleep(3)
            continued = iso_now()
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        proc.wait_log(r"the supervisor \(pid %d\) is gone" % sv, timeout=30)
        long_end = self.aborted_record("long")["end"]
        kept_end = self.aborted_record("kept")["end"]
        print("killed %s, continued %s; long's record ends %s, kept's %s"
              % (killed, continued, long_end, kept_end))
        self.assertGreaterEqual(long_end, killed)
        self.assertLess(long_end, continued, "the end is when main saw it, not when it died")
        self.assertGreaterEqual(kept_end, continued,
                                "kept's sleep ran on until main killed its group")

    def test_a_run_whose_daemon_outlived_its_supervisor_ends_when_the_daemon_died(self):
        """The run started a daemon that left its process group (setsid), and the supervisor
        is SIGKILLed: main's kill of the group misses the daemon, which lives on in the
        run's cgroup until the next supervisor kills it before its hello. The record's end
        is that moment, told by the new supervisor (PROTO_STALE_GONE), not main's kill."""
        if os.geteuid() != 0 or lktest.cgroup_mount() is None:
            self.skipTest("NOT RUN: needs root and a cgroup v2 hierarchy")
        self.start_zookeeper()
        pidfile = self.path("daemon.pid")
        cfg = self.write_config(
            name="alpha", safety=SAFETY, worker={"allow_root_jobs": True, "cgroups": "required"},
            jobs={"long": {"command": "setsid sleep 600 & echo $! > %s; exec sleep 600" % pidfile}})
        proc = self.worker(cfg, name="alpha")
        proc.wait_log(r"job long: running, pid", timeout=60)
        self.wait_until(lambda: os.path.exists(pidfile) and lktest.read_text(pidfile).strip(),
                        timeout=60, msg="the job never wrote its daemon's pid")
        daemon = int(lktest.read_text(pidfile))

        def own_session():
            # $! is written before the child has called setsid(): until it has, main's
            # kill of the run's group would take it too, and there would be no daemon.
            stat = lktest.read_text("/proc/%d/stat" % daemon)
            fields = stat.rsplit(")", 1)[-1].split()  # from field 3, the state
            return len(fields) > 3 and int(fields[3]) == daemon  # field 6, the session
        self.wait_until(own_session, timeout=60, msg="the daemon never left the run's session")
        sv = int(proc.wait_log(r"supervisor pid (\d+)", since=0).group(1))
        os.kill(sv, 9)
        gone = proc.wait_log(r"^(\S+) .*the supervisor \(pid %d\) is gone" % sv, timeout=30)
        killing = proc.wait_log(r"^(\S+) .*holds processes of a previous run: killing them",
                                timeout=60)
        removed = proc.wait_log(r"^(\S+) .*removed \d+ cgroup\(s\) left by a previous run",
                                timeout=60)
        self.assertFalse(os.path.exists("/proc/%d" % daemon), "the daemon outlived the clean-up")
        rec = self.aborted_record("long")
        print("record end %s; seen gone %s; daemon killed %s; clean-up done %s"
              % (rec["end"], gone.group(1), killing.group(1), removed.group(1)))
        # All four are this host's wall clock, in the same format (milliseconds, UTC).
        self.assertRegex(rec["end"], RFC3339)
        self.assertGreaterEqual(rec["end"], killing.group(1)[:23] + "Z",
                                "the record ends before its daemon was killed")
        self.assertLessEqual(rec["end"], removed.group(1)[:23] + "Z")

    def test_a_run_whose_main_died_is_recorded_by_its_next_process(self):
        """Main is SIGKILLed (torture finding 16): (1) just after it sent a tick's start to
        its supervisor, which is stopped so that the start waits in the socket; the
        supervisor, continued, starts the run and kills it at once, main being gone, before
        anything could record it: the tick was claimed, never run to a record, never
        recorded missed. (2) During a run. Each time the worker's next process (same node,
        same state_dir) records the run from its journal of open runs, once: killed,
        kill_reason main_gone, with its tick. After a clean stop no run is left in the journal."""
        self.start_zookeeper()
        cfg = self.write_config(name="alpha", safety=SAFETY, worker={"allow_root_jobs": True},
                                zookeeper={"session_timeout": "4s"},
                                jobs={"tick": {"command": "sleep 1.5", "schedule": "@every 2s",
                                               "history": 100}})
        journal = self.path("alpha", "state", "open-runs")
        kz = self.kazoo()
        records = records_of(kz)

        a = self.worker(cfg, name="alpha-1")
        a.wait_log(r"job tick: run ended", timeout=60)
        sv = int(a.wait_log(r"supervisor pid (\d+)", since=0).group(1))
        since = a.mark()
        os.kill(sv, signal.SIGSTOP)
        try:
            tick = a.wait_log(r"job tick: running the tick of (\S+)", timeout=30,
                              since=since).group(1)
            os.kill(a.pid, signal.SIGKILL)
            a.wait(timeout=10)
        finally:
            os.kill(sv, signal.SIGCONT)
        self.wait_until(lambda: not lktest.pid_alive(sv), timeout=30,
                        msg="the supervisor outlived its main")
        self.assertEqual(len(os.listdir(journal)), 1, "the journal: %s" % os.listdir(journal))

        b = self.worker(cfg, name="alpha-2")
        b.wait_log(r"recording it as killed \(main_gone\)", timeout=60)

        def of_tick(t):
            return [r for r in records() if r.get("tick_time", "")[:19] == t[:19]]

        self.wait_until(lambda: of_tick(tick), timeout=60, msg="tick %s not recorded" % tick)
        first = of_tick(tick)[0]
        self.assertEqual((first["outcome"], first.get("kill_reason"), first["node"]),
                         ("killed", "main_gone", "alpha"), first)
        self.assertNotIn("start", first, "a start no process saw")

        run = b.wait_log(r"job tick: running, pid \d+ run=(\S+)", timeout=60).group(1)
        os.kill(b.pid, signal.SIGKILL)
        b.wait(timeout=10)
        c = self.worker(cfg, name="alpha-3")
        c.wait_log(r"run %s .*recording it as killed" % re.escape(run), timeout=60)
        self.wait_until(lambda: [r for r in records() if r.get("run_id") == run], timeout=60,
                        msg="run %s not recorded" % run)
        c.wait_log(r"job tick: run ended", timeout=60)
        self.assertEqual(c.stop(timeout=30), 0)
        second = [r for r in records() if r.get("run_id") == run]
        self.assertEqual(len(second), 1, second)
        self.assertEqual((second[0]["outcome"], second[0].get("kill_reason")),
                         ("killed", "main_gone"))
        self.assertEqual(len(of_tick(tick)), 1, "tick %s recorded twice" % tick)
        ids = [r["run_id"] for r in records() if r.get("run_id")]
        self.assertEqual(sorted(ids), sorted(set(ids)), "a run recorded twice")
        # A claim in flight at the stop keeps its entry (it may land after the exit: the
        # next process gives it back); every run's entry is gone with its record.
        self.assertEqual([f for f in os.listdir(journal) if not f.startswith("+claim.")], [],
                         "runs left in the journal after a clean stop")


if __name__ == "__main__":
    lktest.main()

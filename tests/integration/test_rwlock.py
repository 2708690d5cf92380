#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=900 split
"""Read-write locks and multi-locks against a real ZooKeeper: leasekeeper's readers and
writers beside Curator's InterProcessReadWriteLock on one path, Curator's
InterProcessMultiLock beside leasekeeper holding one, the other or both of its paths,
two jobs that list the same two locks in opposite orders (no deadlock), and a holder of
two locks whose main process is stopped past its session."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("LEASEKEEPER_SOURCE_DIR",
                                               os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests", "lib"))
import lktest  # noqa: E402
from lktest.record import intervals_of  # noqa: E402

BIN = lktest.leasekeeper_bin()
T_S = 4.0
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}


def sh_quote(argv):
    import shlex
    return " ".join(shlex.quote(str(a)) for a in argv)


def conflicts(records, holds):
    """Pairs of intervals that overlap although they may not: holds(who) gives the set of
    (path, mode) a holder takes; two holders conflict on a path unless both read it."""
    ivs = intervals_of(records)
    out = []
    for i, a in enumerate(ivs):
        for b in ivs[i + 1:]:
            if b.start >= a.end:
                continue  # sorted by start: b starts after a ended (or at its end)
            if a.pid == b.pid:
                continue
            for path, ma in holds(a.who):
                for qpath, mb in holds(b.who):
                    if path == qpath and not (ma == "read" and mb == "read"):
                        out.append("%s pid %d [%d, %s] and %s pid %d [%d, %s] on %s" % (
                            a.who, a.pid, a.start, a.end, b.who, b.pid, b.start, b.end, path))
    return out


def fence_regressions(records, suffix):
    """Starts by holders whose WHO ends with suffix (one lock listed first, whose fence
    LEASEKEEPER_FENCE is) whose fence is not above every earlier one's."""
    out, best = [], None
    for iv in intervals_of(records):
        f = iv.fields.get("fence")
        if not iv.who.endswith(suffix) or f is None:
            continue
        if best is not None and int(f) <= best:
            out.append("%s pid %d: fence %s after %d" % (iv.who, iv.pid, f, best))
        best = max(best or 0, int(f))
    return out


class RwLockTest(lktest.TestCase):
    def exec_argv(self, name, command, node="n1", mode=None, lock_paths=(), timeout=None,
                  session=None):
        argv = [BIN, "exec", "--zk", self.zk.connect_string, "--node-id", node]
        if mode is not None:
            argv.append("--" + mode)
        for p in lock_paths:
            argv += ["--lock-path", p]
        if timeout is not None:
            argv += ["--timeout", timeout]
        if session is not None:
            argv += ["--session-timeout", session, "--safety-margin", "500ms",
                     "--kill-grace", "1s"]
        return argv + [name, "--"] + [str(c) for c in command]

    def run_exec(self, name, command, **kw):
        return subprocess.run(self.exec_argv(name, command, **kw), capture_output=True,
                              text=True, timeout=120)

    def exec(self, name, command, proc_name, **kw):
        return self.proc(self.exec_argv(name, command, **kw), proc_name)

    def loop(self, rec, who, cycles, hold_ms, **kw):
        """A shell loop of `cycles` exec runs of lk-record (no flock: readers share), as one
        tracked process."""
        one = sh_quote(self.exec_argv("x", rec.argv(who, hold_ms=hold_ms, lock=False),
                                      node=who, timeout="120s", **kw))
        script = "i=0; while [ $i -lt %d ]; do %s || exit 1; i=$((i+1)); done" % (cycles, one)
        return self.proc(["/bin/sh", "-c", script], who)

    def peer(self, *args, name):
        p = self.curator_peer(*args, name=name)
        p.wait_log(r"^ready$", timeout=60)
        return p

    # -- read-write lock --------------------------------------------------------------------

    def test_exec_refuses_bad_lock_options(self):
        """exec refuses --read with --leases and a --lock-path given twice (which would wait
        behind itself for ever), before it connects anywhere."""
        for extra, what in ((["--read", "--leases", "2"], "take no --leases"),
                            (["--lock-path", "/a", "--lock-path", "/a"], "given twice")):
            r = subprocess.run([BIN, "exec", "--zk", "127.0.0.1:1"] + extra + ["x", "--", "true"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 64, r.stderr)
            self.assertIn(what, r.stderr)

    def test_curator_readers_and_writers_against_exec(self):
        """Curator's read lock admits leasekeeper's readers and keeps its writers out;
        Curator's write lock keeps both out; leasekeeper's reader admits Curator's readers
        and keeps Curator's writer waiting until it ends."""
        self.start_zookeeper()
        zk, path = self.zk.connect_string, "/interop/rw"
        cur = self.peer("hold-read", zk, path, name="cur-read")
        cur.wait_log(r"^acquired$", timeout=60)
        r = self.run_exec("x", ["true"], mode="read", lock_paths=[path], timeout="20s")
        self.assertEqual(r.returncode, 0, "a reader runs beside Curator's reader: " + r.stderr)
        r = self.run_exec("x", ["true"], mode="write", lock_paths=[path], timeout="2s")
        self.assertEqual(r.returncode, 75, "a writer waits for Curator's reader")
        # The writer that gave up took its node with it: only Curator's is left.
        kids = self.kazoo().get_children(path)
        self.assertEqual(len(kids), 1, kids)
        self.assertIn("__READ__", kids[0])
        cur.write_line("release")
        cur.wait_log(r"^released$", timeout=20)

        cur = self.peer("hold-write", zk, path, name="cur-write")
        cur.wait_log(r"^acquired$", timeout=60)
        for mode in ("read", "write"):
            r = self.run_exec("x", ["true"], mode=mode, lock_paths=[path], timeout="2s")
            self.assertEqual(r.returncode, 75, "a %s waits for Curator's writer" % mode)
        cur.write_line("release")
        cur.wait_log(r"^released$", timeout=20)
        r = self.run_exec("x", ["true"], mode="write", lock_paths=[path], timeout="20s")
        self.assertEqual(r.returncode, 0, r.stderr)

        # leasekeeper's reader holds (until SIGTERM): Curator's reader joins, its writer waits.
        rec = self.record_file()
        self.exec("x", rec.argv("E", lock=False), "E", mode="read", lock_paths=[path])
        start = rec.wait_for("start", who="E", timeout=20)[0]
        cr = self.peer("hold-read", zk, path, name="cur-read2")
        cr.wait_log(r"^acquired$", timeout=20)
        cw = self.peer("hold-write", zk, path, name="cur-write2")
        time.sleep(1.0)
        self.assertNotRegex(cw.log_text(), r"(?m)^acquired$",
                            "Curator's writer must wait while leasekeeper reads")
        cr.write_line("release")
        cr.wait_log(r"^released$", timeout=20)
        time.sleep(0.5)
        self.assertNotRegex(cw.log_text(), r"(?m)^acquired$",
                            "Curator's writer must wait while leasekeeper still reads")
        os.kill(start.pid, signal.SIGTERM)
        end = rec.wait_for("end", who="E", timeout=20)[0]
        cw.wait_log(r"^acquired$", timeout=20)
        self.assertGreater(time.monotonic_ns(), end.t_ns)
        cw.write_line("release")
        cw.wait_log(r"^released$", timeout=20)

    def test_readers_share_exact_count(self):
        """Under Curator's read lock, three leasekeeper readers hold at once (exactly three
        overlapping intervals, all beside Curator's); a writer queued behind them runs
        alone, after all of them."""
        self.start_zookeeper()
        zk, path = self.zk.connect_string, "/interop/rw-count"
        rec = self.record_file()
        cur = self.peer("hold-read", zk, path, rec.path, "cur", name="cur-read")
        cur.wait_log(r"^acquired$", timeout=60)
        readers = [self.exec("x", rec.argv("r%d" % i, lock=False), "r%d" % i,
                             mode="read", lock_paths=[path]) for i in range(3)]
        for i in range(3):
            rec.wait_for("start", who="r%d" % i, timeout=30)
        w = self.exec("x", rec.argv("w", hold_ms=200, lock=False), "w", mode="write",
                      lock_paths=[path])
        time.sleep(1.5)
        self.assertEqual(rec.count("start", "w"), 0, "the writer must wait for the readers")
        cur.write_line("release")
        cur.wait_log(r"^released$", timeout=20)
        for i in range(3):
            os.kill(rec.starts("r%d" % i)[0].pid, signal.SIGTERM)
        rec.wait_for("start", who="w", timeout=30)
        self.assertEqual(w.wait(timeout=30), 0)
        for p in readers:
            p.wait(timeout=30)
        ivs = intervals_of(rec.records())
        live = [iv for iv in ivs if iv.who != "w"]
        self.assertEqual(len(live), 4)
        last_reader_start = max(iv.start for iv in live)
        self.assertEqual(sum(1 for iv in live if iv.end > last_reader_start), 4,
                         "Curator's reader and three leasekeeper readers held at once")
        self.assertEqual(conflicts(rec.records(), self.holds_rw), [])

    def test_status_shows_readers_and_writers(self):
        """status on a read-write lock: two readers hold, a writer waits, each with its
        mode, and no node is taken for a stranger."""
        self.start_zookeeper()
        rec = self.record_file()
        path = "/leasekeeper/rwlock/db"
        for who in ("r0", "r1"):
            self.exec("db", rec.argv(who, lock=False), who, node=who, mode="read")
            rec.wait_for("start", who=who, timeout=30)
        self.exec("db", rec.argv("w", lock=False), "w", node="w", mode="write")
        kz = self.kazoo()
        self.wait_until(lambda: len(kz.get_children(path)) == 3, timeout=30)
        r = subprocess.run([BIN, "status", "--zk", self.zk.connect_string, "--lock-path", path,
                            "--json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        job = json.loads(r.stdout)["jobs"][0]
        self.assertEqual(job["kind"], "read-write lock")
        got = sorted((h["node"], h["mode"], h["role"]) for h in job["holders"])
        self.assertEqual(got, [("r0", "read", "holder"), ("r1", "read", "holder")])
        got = [(h["node"], h["mode"], h["role"]) for h in job["waiters"]]
        self.assertEqual(got, [("w", "write", "waiting")])
        self.assertFalse(any("stranger" in h for h in job["holders"] + job["waiters"]), job)
        self.assertEqual(job.get("strangers", []), [])
        r = subprocess.run([BIN, "status", "--zk", self.zk.connect_string, "--lock-path", path],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("read-write lock " + path, r.stdout)
        self.assertRegex(r.stdout, r"(?m)^\s+holder\s+r1\s.* \(read\) queued since ")
        self.assertRegex(r.stdout, r"(?m)^\s+waiting\s+w\s.* \(write\) queued since ")

    @staticmethod
    def holds_rw(who):
        return [("rw", "write" if who.startswith("w") or who.startswith("cw") else "read")]

    def test_curator_and_exec_rw_loops(self):
        """Curator's readers and writer and leasekeeper's readers and writer loop on one
        path: no writer ever beside anyone; every turn taken."""
        self.start_zookeeper()
        zk, path = self.zk.connect_string, "/interop/rw-loop"
        rec = self.record_file()
        curs = [self.peer("read", zk, path, 15, 60, rec.path, "cr", name="cr"),
                self.peer("write", zk, path, 10, 20, rec.path, "cw", name="cw")]
        loops = [self.loop(rec, "r%d" % i, 15, 60, mode="read", lock_paths=[path])
                 for i in range(2)]
        loops.append(self.loop(rec, "w", 10, 20, mode="write", lock_paths=[path]))
        for p in loops + curs:
            self.assertEqual(p.wait(timeout=400), 0, p.log_text()[-2000:])
        self.assertEqual(conflicts(rec.records(), self.holds_rw), [])
        for who, n in (("cr", 15), ("cw", 10), ("r0", 15), ("r1", 15), ("w", 10)):
            self.assertEqual(len(rec.starts(who)), n, who)
        kz = self.kazoo()
        self.assertEqual(kz.get_children(path) if kz.exists(path) else [], [])

    def test_jobs_with_lock_mode_beside_curator(self):
        """Jobs with lock_mode = read and write on one lock_path, on two workers, beside
        Curator's read and write loops on it: no writer beside anyone, every job runs, and
        leasekeeper's two reader jobs run side by side at least once."""
        self.start_zookeeper()
        zk, path = self.zk.connect_string, "/interop/rw-jobs"
        rec = self.record_file()

        def jobs(n):
            return {j: {"command": rec.command("%s-%s" % (j, n), hold_ms=400, lock=False),
                        "lock_path": path, "lock_mode": mode, "schedule": "@every 2s"}
                    for j, mode in (("r1", "read"), ("r2", "read"), ("w", "write"))}
        self.start_workers(jobs)
        curs = [self.peer("read", zk, path, 10, 100, rec.path, "cr", name="cr"),
                self.peer("write", zk, path, 10, 100, rec.path, "cw", name="cw")]
        for c in curs:
            self.assertEqual(c.wait(timeout=120), 0, c.log_text()[-2000:])

        def count(job):
            return sum(rec.count("end", "%s-%s" % (job, n)) for n in ("alpha", "beta"))

        def together():
            ivs = [iv for iv in intervals_of(rec.records()) if iv.who[:2] in ("r1", "r2")]
            return sum(1 for a in ivs for b in ivs
                       if a.who[:2] == "r1" and b.who[:2] == "r2" and a.start < b.end
                       and b.start < a.end)
        # Liveness (generous): each job runs, and at some tick the two readers queue
        # together, ahead of the writer, and run side by side.
        self.wait_until(lambda: all(count(j) >= 4 for j in ("r1", "r2", "w")) and together(),
                        timeout=120,
                        msg="a job stopped running, or the readers never ran together")
        for p in self.procs.values():
            p.stop()

        def holds(who):
            return [("rw", "write" if who.startswith("w") or who == "cw" else "read")]
        self.assertEqual(conflicts(rec.records(), holds), [])

    # -- multi-lock -------------------------------------------------------------------------

    def test_curator_multilock_beside_exec(self):
        """Curator's InterProcessMultiLock over /m/x and /m/y beside leasekeeper runs that
        hold /m/x, /m/y, or both (listed in the other order): no two holders of one path."""
        self.start_zookeeper()
        zk = self.zk.connect_string
        x, y = "/m/x", "/m/y"
        rec = self.record_file()
        cur = self.peer("multi", zk, x + "," + y, 20, 20, rec.path, "cxy", name="cxy")
        loops = [self.loop(rec, "x", 20, 20, lock_paths=[x]),
                 self.loop(rec, "y", 20, 20, lock_paths=[y]),
                 self.loop(rec, "yx", 20, 20, lock_paths=[y, x])]
        for p in loops + [cur]:
            self.assertEqual(p.wait(timeout=400), 0, p.log_text()[-2000:])

        def holds(who):
            return [("/m/" + c, "write") for c in who if c in "xy"]
        self.assertEqual(conflicts(rec.records(), holds), [])
        for who in ("cxy", "x", "y", "yx"):
            self.assertEqual(len(rec.starts(who)), 20, who)

    def test_fences_name_every_lock(self):
        """LEASEKEEPER_FENCE is the first lock's, LEASEKEEPER_FENCES every lock's, in the
        order given; each is the czxid of our node."""
        self.start_zookeeper()
        r = self.run_exec("x", ["/bin/sh", "-c", 'echo "$LEASEKEEPER_FENCE $LEASEKEEPER_FENCES"'],
                          lock_paths=["/f/z", "/f/a"], timeout="20s")
        self.assertEqual(r.returncode, 0, r.stderr)
        first, fences = r.stdout.split()
        pairs = [p.split("=") for p in fences.split(",")]
        self.assertEqual([p[0] for p in pairs], ["/f/z", "/f/a"])
        self.assertEqual(first, pairs[0][1])
        # /f/a was taken first (path order), so its node is older.
        self.assertLess(int(pairs[1][1]), int(pairs[0][1]))

    def start_workers(self, jobs, names=("alpha", "beta"), rec_kw=None):
        self.procs, self.cfgs = {}, {}
        for n in names:
            self.cfgs[n] = self.write_config(
                name=n, zookeeper={"session_timeout": "%ds" % T_S}, safety=SAFETY,
                worker={"allow_root_jobs": True}, jobs=jobs(n))
            p = self.worker(self.cfgs[n], name=n)
            p.wait_log(r"registered as", timeout=T_S + 30)
            self.procs[n] = p

    def test_opposite_orders_exec_do_not_deadlock(self):
        """Two holders on each of two hosts list the same two locks in opposite orders:
        taken in path order, every run completes and no two runs overlap."""
        self.start_zookeeper()
        rec = self.record_file()
        runs = int(os.environ.get("LKTEST_RWLOCK_RUNS", "100"))
        a, b = "/d/a", "/d/b"
        loops = []
        for node in ("alpha", "beta"):
            for name, paths in (("ab", [a, b]), ("ba", [b, a])):
                who = "%s-%s" % (node, name)
                one = sh_quote(self.exec_argv(name, rec.argv(who, hold_ms=2), node=node,
                                              lock_paths=paths, timeout="60s"))
                script = ("i=0; while [ $i -lt %d ]; do %s || exit 1; i=$((i+1)); done"
                          % (runs, one))
                loops.append(self.proc(["/bin/sh", "-c", script], who))
        t0 = time.monotonic()
        for p in loops:
            self.assertEqual(p.wait(timeout=600), 0, p.log_text()[-2000:])
        print("opposite orders, exec: %d runs in %.1f s" % (4 * runs, time.monotonic() - t0))
        # LEASEKEEPER_FENCE is the first listed lock's: "ab" runs get a's, "ba" runs b's.
        rep = rec.check(leases=1)
        self.assertEqual(rep.overlaps + rep.flock_overlaps, 0, "\n".join(rep.violations[:10]))
        self.assertEqual(fence_regressions(rec.records(), "-ab"), [])
        self.assertEqual(fence_regressions(rec.records(), "-ba"), [])
        self.assertEqual(len(rep.intervals), 4 * runs)

    def test_opposite_orders_jobs_do_not_deadlock(self):
        """Jobs "ab" (locks = a, b) and "ba" (locks = b, a) on two workers, a tick every
        second: all four contend at each tick, and every tick of both jobs runs."""
        self.start_zookeeper()
        rec = self.record_file()

        def jobs(n):
            return {j: {"command": rec.command("%s-%s" % (n, j), hold_ms=100), "locks": locks,
                        "schedule": "@every 1s", "start_deadline": "5s"}
                    for j, locks in (("ab", "a, b"), ("ba", "b, a"))}
        self.start_workers(jobs)
        t0 = time.monotonic()
        want = int(os.environ.get("LKTEST_RWLOCK_TICKS", "15"))

        def runs(job):
            return sum(rec.count("end", "%s-%s" % (n, job)) for n in ("alpha", "beta"))
        self.wait_until(lambda: runs("ab") >= want and runs("ba") >= want, timeout=want + 60,
                        msg="runs stopped (deadlock?)")
        took = time.monotonic() - t0
        kz = self.kazoo()

        def recorded_ok(job):
            runs_dir = "/leasekeeper/jobs/%s/runs" % job
            return [json.loads(kz.get(runs_dir + "/" + c)[0]).get("outcome")
                    for c in kz.get_children(runs_dir)].count("ok")
        # A run's record is written after its end: wait for those of the runs counted above.
        self.wait_until(lambda: recorded_ok("ab") >= want and recorded_ok("ba") >= want,
                        timeout=60, msg="run records of the runs that ended")
        for p in self.procs.values():
            p.stop()
        print("opposite orders, jobs: %d + %d runs in %.1f s" % (runs("ab"), runs("ba"), took))
        r = subprocess.run([BIN, "logs", "--zk", self.zk.connect_string, "ba", "--last", "5"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # A run record names both locks, in the order the job lists them.
        self.assertRegex(r.stdout, r"(?m)^locks: /leasekeeper/mutex/b \(mutex\), fence \d+, "
                                   r"/leasekeeper/mutex/a \(mutex\), fence \d+$")
        # A deadlock stops every run of both jobs (the wait above). A tick may still be
        # recorded missed (reason locks) on a machine too slow to take both locks within
        # start_deadline: such misses are counted and stay the exception.
        for job in ("ab", "ba"):
            runs_dir = "/leasekeeper/jobs/%s/runs" % job
            outcomes = [json.loads(kz.get(runs_dir + "/" + c)[0]).get("outcome")
                        for c in kz.get_children(runs_dir)]
            print("job %s: %d ok, %d missed" % (job, outcomes.count("ok"),
                                                 outcomes.count("missed")))
            self.assertGreaterEqual(outcomes.count("ok"), want, job)
            self.assertLess(outcomes.count("missed"), outcomes.count("ok") // 2, job)
        # LEASEKEEPER_FENCE is the first listed lock's: "ab" runs get a's, "ba" runs b's.
        rep = rec.check(leases=1)
        self.assertEqual(rep.overlaps + rep.flock_overlaps, 0, "\n".join(rep.violations[:10]))
        self.assertEqual(fence_regressions(rec.records(), "-ab"), [])
        self.assertEqual(fence_regressions(rec.records(), "-ba"), [])

    def test_a_job_configured_with_other_locks_elsewhere_runs_on_one_worker(self):
        """One job, a mutex on alpha and lock_mode = write on beta: the two would queue in
        different folders and nothing else would keep them apart. The job record keeps the
        locks of the first worker to record them; the other does not contend and reports the
        conflict (its log once, status, the conflict metric), and the job never runs on both
        at once (exact: by flock and by the run records). Then the documented change: the
        winner configured as the loser, and `set-leases split 1`: the loser's locks are the
        record's, and the job runs again, one worker at a time."""
        self.start_zookeeper()
        rec = self.record_file()
        ports = {n: lktest.free_port() for n in ("alpha", "beta")}
        modes = {"alpha": "mutex", "beta": "write"}
        where = {"mutex": "/leasekeeper/mutex/split", "write": "/leasekeeper/rwlock/split"}

        def config(n, mode):
            job = {"command": rec.command(n, hold_ms=300), "restart_backoff": "1s"}
            if mode == "write":
                job["lock_mode"] = "write"
            return self.write_config(
                name=n, zookeeper={"session_timeout": "%ds" % T_S}, safety=SAFETY,
                worker={"allow_root_jobs": True}, jobs={"split": job},
                extra={"http": {"listen": "127.0.0.1:%d" % ports[n]}})

        def conflict_metric(n):
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % ports[n],
                                        timeout=10) as r:
                text = r.read().decode()
            m = re.search(r'^leasekeeper_job_lease_conflict\{job_name="split"\} (\d+)$', text,
                          re.M)
            return int(m.group(1)) if m else None

        def status_job(n):
            r = subprocess.run([BIN, "status", "-c", cfgs[n], "--json"], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            return [j for j in json.loads(r.stdout)["jobs"] if j["name"] == "split"][0]

        cfgs = {n: config(n, modes[n]) for n in modes}
        procs = {n: self.worker(cfgs[n], name=n) for n in modes}
        for p in procs.values():
            p.wait_log(r"registered as", timeout=T_S + 30)
        kz = self.kazoo()
        rpath = "/leasekeeper/jobs/split"

        def record_locks():
            if not kz.exists(rpath):
                return None
            return json.loads(kz.get(rpath)[0]).get("locks")
        self.wait_until(lambda: record_locks() is not None, timeout=30)
        locks = record_locks()
        winner = [n for n in modes if locks == [{"path": where[modes[n]], "mode": modes[n]}]]
        self.assertEqual(len(winner), 1, locks)
        winner = winner[0]
        loser = "beta" if winner == "alpha" else "alpha"
        said = (r"job split: its record /leasekeeper/jobs/split says the job's locks are "
                r".*, but this worker's configuration takes .*%s.*: not contending"
                % re.escape(where[modes[loser]]))
        procs[loser].wait_log(said, timeout=30)
        self.wait_until(lambda: conflict_metric(loser) == 1, timeout=30,
                        msg="the conflict metric of %s" % loser)
        self.assertEqual(conflict_metric(winner), 0)
        self.assertIn(where[modes[winner]], status_job(loser)["cluster_locks"])
        self.assertNotIn("cluster_locks", status_job(winner))
        # The winner runs it again and again, the loser never.
        self.wait_until(lambda: rec.count("start", winner) >= 3, timeout=60,
                        msg="%s's runs" % winner)
        self.assertEqual(rec.count("start", loser), 0)
        self.wait_until(lambda: kz.exists(rpath + "/runs") and kz.get_children(rpath + "/runs"),
                        timeout=30, msg="the winner's run records")
        nodes = {json.loads(kz.get(rpath + "/runs/" + c)[0]).get("node")
                 for c in kz.get_children(rpath + "/runs")}
        self.assertEqual(nodes, {winner})
        self.assertEqual(len(re.findall(said, procs[loser].log_text())), 1)
        self.assertNotIn("says the job's locks are", procs[winner].log_text())

        # The change on purpose (docs/configuration.md): every worker configured alike,
        # then set-leases, which clears the recorded locks for the first agreeing worker.
        cfgs[winner] = config(winner, modes[loser])
        procs[winner].signal(signal.SIGHUP)
        procs[winner].wait_log(r"reloaded: ", timeout=30)
        procs[winner].wait_log(said, timeout=30)  # it too now disagrees with the record
        self.assertEqual(record_locks(), locks)
        r = subprocess.run([BIN, "set-leases", "--zk", self.zk.connect_string, "split", "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("its recorded locks are cleared", r.stdout)
        want = [{"path": where[modes[loser]], "mode": modes[loser]}]
        self.wait_until(lambda: record_locks() == want, timeout=30, msg="the new locks")
        procs[loser].wait_log(r"job split: the cluster now agrees", timeout=30)
        before = len(rec.starts())
        self.wait_until(lambda: len(rec.starts()) >= before + 3, timeout=60,
                        msg="runs under the new locks")
        for n in modes:
            self.wait_until(lambda: conflict_metric(n) == 0, timeout=30,
                            msg="%s's conflict metric back to 0" % n)
            self.assertNotIn("cluster_locks", status_job(n))
        for p in procs.values():
            p.stop()
        rep = rec.check(leases=1)
        self.assertEqual(rep.overlaps + rep.flock_overlaps, 0, "\n".join(rep.violations[:10]))

    def test_tick_without_every_lock_is_missed_with_reason_locks(self):
        """A job of two locks, one of them held by Curator: no run, every tick recorded
        missed with the reason "locks" (outcome "missed"), and the lock it got given back."""
        self.start_zookeeper()
        rec = self.record_file()
        cur = self.peer("hold", self.zk.connect_string, "/leasekeeper/mutex/b", name="cur")
        cur.wait_log(r"^acquired$", timeout=60)

        def jobs(n):
            return {"ab": {"command": rec.command(n), "locks": "a, b",
                           "schedule": "@every 2s", "start_deadline": "1s"}}
        self.start_workers(jobs, names=("alpha",))
        kz = self.kazoo()
        runs = "/leasekeeper/jobs/ab/runs"

        def missed():
            if not kz.exists(runs):
                return []
            out = []
            for c in kz.get_children(runs):
                data = kz.get(runs + "/" + c)[0]
                out.append(json.loads(data))
            return out
        self.wait_until(lambda: len(missed()) >= 2, timeout=30, msg="no missed ticks recorded")
        for r in missed():
            self.assertEqual((r["reason"], r["outcome"]), ("locks", "missed"), r)
        self.assertEqual(rec.count("start"), 0, "the job ran without lock b")
        # Between ticks (2 s apart, each given up after 1 s) the worker holds nothing on a.
        self.wait_until(lambda: kz.get_children("/leasekeeper/mutex/a") == []
                        if kz.exists("/leasekeeper/mutex/a") else True, timeout=10,
                        msg="lock a was not given back")
        self.assertIn("got all its locks", self.procs["alpha"].log_text())

    def test_one_lock_lost_kills_the_run(self):
        """A run holding two locks: one lock's node deleted by someone else is a lost lease,
        the run is killed, the other lock given back, and both are taken again."""
        self.start_zookeeper()
        rec = self.record_file()

        def jobs(n):
            return {"both": {"command": rec.command(n), "locks": "p, q:3",
                             "restart_backoff": "1s"}}
        self.start_workers(jobs, names=("alpha",))
        old = rec.wait_for("start", timeout=30)[0]
        kz = self.kazoo()
        leases = "/leasekeeper/semaphore/q/leases"
        node = kz.get_children(leases)[0]
        kz.delete(leases + "/" + node)
        self.wait_until(lambda: any(r.pid == old.pid for r in rec.records()
                                    if r.kind in ("death", "end")), timeout=20,
                        msg="the run outlived one of its locks")
        self.wait_until(lambda: len(rec.starts()) >= 2, timeout=30,
                        msg="the job did not take both locks again")
        new = rec.starts()[1]
        self.assertGreater(int(new.fields["fence"]), int(old.fields["fence"]))
        self.assertIn("lease lost", self.procs["alpha"].log_text())
        # status names both locks of the job, with their kinds.
        r = subprocess.run([BIN, "status", "-c", self.cfgs["alpha"]], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^\s+locks\s+/leasekeeper/mutex/p \(mutex\), whose")
        self.assertRegex(r.stdout, r"(?m)^\s+/leasekeeper/semaphore/q \(semaphore\)$")
        # Without the configuration too, the run in progress names both locks, each with
        # its mode and fence (its node under <job>/running says them).
        zk = ["--zk", self.zk.connect_string]

        def running():
            r = subprocess.run([BIN, "status", *zk, "--json"], capture_output=True,
                               text=True, timeout=60)
            job = [j for j in json.loads(r.stdout)["jobs"] if j["name"] == "both"][0]
            return job.get("running", [])
        self.wait_until(lambda: len(running()) == 1, timeout=30,
                        msg="the new run's node under running")
        locks = running()[0]["locks"]
        self.assertEqual([(k["path"], k["mode"]) for k in locks],
                         [("/leasekeeper/mutex/p", "mutex"),
                          ("/leasekeeper/semaphore/q", "semaphore")])
        self.assertTrue(all(k["fence"] > 0 for k in locks), locks)
        r = subprocess.run([BIN, "status", *zk], capture_output=True, text=True, timeout=60)
        self.assertRegex(r.stdout, r"(?m)^\s+locks /leasekeeper/mutex/p \(mutex\) fence \d+\n"
                                   r"\s+/leasekeeper/semaphore/q \(semaphore\) fence \d+$")
        self.assertEqual(rec.check(leases=1).overlaps, 0)

    @staticmethod
    def watch_deleted(kz, path, out):
        """Append to out the time a watch on path sees it deleted (re-armed on changes)."""
        def watch(ev):
            if ev.type == "DELETED":
                out.append(time.monotonic_ns())
            elif kz.exists(path, watch=watch) is None:
                out.append(time.monotonic_ns())
        if kz.exists(path, watch=watch) is None:
            out.append(time.monotonic_ns())

    def test_holder_of_two_locks_stopped_past_its_session(self):
        """The main process of a worker holding two locks is stopped past its session: its
        run is killed before the other worker's run takes either lock."""
        self.start_zookeeper()
        rec = self.record_file()

        def jobs(n):
            return {"both": {"command": rec.command(n), "locks": "p, q:write",
                             "restart_backoff": "1s"}}
        self.start_workers(jobs)
        old = rec.wait_for("start", timeout=30)[0]
        # Watch the stopped worker's two lock nodes: no one can take either lock before
        # they are deleted (its session expired), and the run must be dead by then.
        kz = self.kazoo()
        gone = []
        for folder in ("/leasekeeper/mutex/p", "/leasekeeper/rwlock/q"):
            ours = [c for c in kz.get_children(folder)
                    if json.loads(kz.get(folder + "/" + c)[0]).get("node") == old.who]
            self.assertEqual(len(ours), 1, folder)
            self.watch_deleted(kz, folder + "/" + ours[0], gone)
        main = self.procs[old.who].pid
        os.kill(main, signal.SIGSTOP)
        try:
            self.wait_until(lambda: any(d.pid == old.pid for d in rec.records()
                                        if d.kind == "death"), timeout=30,
                            msg="the stopped worker's run never died")
            self.wait_until(lambda: any(s.who != old.who for s in rec.starts()), timeout=30,
                            msg="the other worker never took both locks")
        finally:
            os.kill(main, signal.SIGCONT)
        death = [d for d in rec.records() if d.kind == "death" and d.pid == old.pid][0]
        new = [s for s in rec.starts() if s.who != old.who][0]
        self.wait_until(lambda: len(gone) == 2, timeout=30, msg="the old lock nodes stayed")
        self.assertLess(death.t_ns, min(gone),
                        "a lock node of the stopped worker went before its run died")
        self.assertLess(death.t_ns, new.t_ns, "the new run started before the old one died")
        rep = rec.check(leases=1)
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=240 label=harness split
"""Self-test of the integration harness (tests/lib/lktest): servers, faults, clean-up,
records, Curator peers, lk-record. Does not need leasekeeper itself."""

import os
import signal
import subprocess
import sys
import threading
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest
from lktest.record import Record

MS = 1000000  # ns


class StateLog:
    """Kazoo connection states with their monotonic times."""

    def __init__(self, client):
        self.events = []
        self.lock = threading.Lock()
        client.add_listener(self)

    def __call__(self, state):
        with self.lock:
            self.events.append((str(state), time.monotonic()))

    def first(self, state, after=0.0):
        with self.lock:
            for s, t in self.events:
                if s == state and t >= after:
                    return t
        return None


class ServerTest(lktest.TestCase):
    def test_standalone_data_and_stop(self):
        t0 = time.monotonic()
        zk = self.start_zookeeper()
        started = time.monotonic() - t0
        self.assertEqual(zk.mode(), "standalone")
        self.assertTrue(zk.is_serving())
        self.assertEqual(zk.connect_string, "127.0.0.1:%d" % zk.port)
        self.assertIn("Mode: standalone", zk.four_letter("srvr"))
        k = self.kazoo()
        k.create("/a", b"hello")
        self.assertEqual(k.get("/a")[0], b"hello")
        k.stop()
        pid = zk.pid
        zk.stop()
        zk.stop()  # idempotent
        self.assertFalse(lktest.pid_alive(pid))
        self.assertFalse(zk.is_serving())
        sys.stderr.write("standalone serving after %.2f s\n" % started)

    def test_restart_keeps_data_and_port(self):
        zk = self.start_zookeeper()
        port, pid = zk.port, zk.pid
        k = self.kazoo()
        k.create("/keep", b"v1")
        k.stop()
        zk.restart()
        self.assertEqual(zk.port, port)
        self.assertNotEqual(zk.pid, pid)
        k = self.kazoo()
        self.assertEqual(k.get("/keep")[0], b"v1")

    def test_kill_pause_resume(self):
        zk = self.start_zookeeper()
        zk.pause()
        self.assertIsNone(zk.mode())  # connects (kernel backlog) but gets no answer
        zk.resume()
        self.wait_until(zk.is_serving, 5, "serving after SIGCONT")
        pid = zk.pid
        zk.kill()
        zk.kill()
        self.assertFalse(lktest.pid_alive(pid))

    def test_ensemble_leader_kill(self):
        t0 = time.monotonic()
        ens = self.start_ensemble(3)
        started = time.monotonic() - t0
        self.assertEqual(len(ens.connect_string.split(",")), 3)
        modes = sorted(s.mode() for s in ens)
        self.assertEqual(modes, ["follower", "follower", "leader"])
        k = self.kazoo()
        k.create("/e", b"before")
        old = ens.leader()
        self.assertIsNotNone(old)
        t1 = time.monotonic()
        ens.kill(old)
        new = ens.wait_for_leader(20)
        elected = time.monotonic() - t1
        self.assertNotEqual(new, old)
        self.assertEqual(self.wait_until(lambda: k.connected and k.get("/e")[0], 15), b"before")
        k.set("/e", b"after")
        ens.start(old)
        self.assertEqual(ens[old].mode(), "follower")
        self.assertEqual(ens.leader(), new)
        sys.stderr.write("ensemble serving after %.2f s, new leader after %.2f s\n"
                         % (started, elected))


class ProxyTest(lktest.TestCase):
    def setUp(self):
        super().setUp()
        self.start_zookeeper()
        self.proxy = self.proxy()

    def test_forward_blackhole_heal(self):
        k = self.kazoo(hosts=self.proxy.connect_string, timeout=6.0)
        states = StateLog(k)
        session = k.client_id
        k.create("/p", b"x")
        self.assertEqual(self.proxy.connections(), 1)
        self.assertGreater(self.proxy.bytes_up, 0)
        self.assertGreater(self.proxy.bytes_down, 0)

        k.exists("/")  # the server's session timer starts now: it expires 6 s after this
        self.proxy.blackhole()
        t_hole = time.monotonic()
        pending = k.get_async("/p")
        time.sleep(1.0)
        self.assertFalse(pending.ready(), "a reply crossed the blackhole")
        self.assertTrue(k.connected, "the client noticed the blackhole at once: closed?")
        self.assertEqual(self.proxy.connections(), 1, "the blackhole closed the connection")
        t_lost = self.wait_until(lambda: states.first("SUSPENDED"), 10, "connection loss")
        # Only the client's own read timeout (2/3 of the session timeout) notices it.
        self.assertGreater(t_lost - t_hole, 2.0)

        self.proxy.heal()
        self.wait_until(lambda: k.connected, 10, "reconnect after heal")
        self.assertEqual(k.client_id, session, "the session did not survive a 4 s partition")
        self.assertEqual(k.get("/p")[0], b"x")

    def test_new_connections_held_in_blackhole(self):
        self.proxy.blackhole()
        from kazoo.client import KazooClient

        k = KazooClient(hosts=self.proxy.connect_string, timeout=4.0)
        with self.assertRaises(Exception):
            k.start(timeout=1.5)
        k.stop()
        k.close()
        self.assertGreaterEqual(self.proxy.accepted, 1)
        self.proxy.heal()
        k = self.kazoo(hosts=self.proxy.connect_string)
        self.assertTrue(k.connected)

    def test_drop_all_and_delay(self):
        k = self.kazoo(hosts=self.proxy.connect_string, timeout=6.0)
        states = StateLog(k)
        session = k.client_id
        t = time.monotonic()
        self.assertEqual(self.proxy.drop_all(), 1)
        t_lost = self.wait_until(lambda: states.first("SUSPENDED", t), 5, "loss after drop")
        self.assertLess(t_lost - t, 1.0)
        self.wait_until(lambda: k.connected, 10, "reconnect after drop")
        self.assertEqual(k.client_id, session)
        k.exists("/")
        self.proxy.delay(150)
        t = time.monotonic()
        k.exists("/")
        delayed = time.monotonic() - t
        self.assertGreaterEqual(delayed, 0.29)  # 150 ms each way
        self.proxy.heal()
        t = time.monotonic()
        k.exists("/")
        # Healed, a round trip no longer waits 300 ms (a busy machine may still be slow).
        self.assertLess(time.monotonic() - t, delayed)

    def test_cut_after_loses_the_answer_not_the_request(self):
        from kazoo.exceptions import ConnectionLoss
        k = self.kazoo(hosts=self.proxy.connect_string, timeout=10.0)
        session = k.client_id
        self.proxy.cut_after(b"/cut-me", hold=1.0)
        k.exists("/other")  # no match: nothing cut
        self.assertEqual(self.proxy.cuts, 0)
        with self.assertRaises(ConnectionLoss):
            k.create("/cut-me", b"x")
        self.assertEqual(self.proxy.cuts, 1)
        self.wait_until(lambda: k.connected, 15, "reconnect after the cut")
        self.assertEqual(k.client_id, session)
        self.assertIsNotNone(k.exists("/cut-me"), "the server did not get the request")
        k.create("/cut-me-too", b"x")  # once only
        self.assertEqual(self.proxy.cuts, 1)

    def test_reject_new(self):
        self.proxy.reject_new()
        import socket

        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=2)
        self.assertEqual(s.recv(10), b"")  # closed at once
        s.close()


CHILD = r"""
import os, sys, time
sys.path.insert(0, %(lib)r)
import lktest
zk = lktest.%(kind)s(%(dir)r).start()
pids = [s.pid for s in getattr(zk, "servers", [zk])]
print("pids", *pids, flush=True)
time.sleep(300)
"""


class CleanupTest(lktest.TestCase):
    def child(self, kind):
        lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")
        script = self.path("child-%s.py" % kind)
        with open(script, "w") as f:
            f.write(CHILD % {"lib": lib, "dir": self.path("zk-" + kind), "kind": kind})
        p = self.proc([sys.executable, script], "child-" + kind)
        m = p.wait_log(r"^pids ([\d ]+)$", 40)
        pids = [int(x) for x in m.group(1).split()]
        for pid in pids:
            self.assertTrue(lktest.pid_alive(pid))
        return p, pids

    def assert_gone(self, pids):
        self.wait_until(lambda: not any(lktest.pid_alive(pid) for pid in pids), 10,
                        "the java servers of a dead test process to die")

    def test_sigkill_of_test_process_kills_java(self):
        p, pids = self.child("ZooKeeper")
        p.signal(signal.SIGKILL)  # the child only, not its group: PDEATHSIG must act
        self.assertEqual(p.wait(5), -signal.SIGKILL)
        self.assert_gone(pids)

    def test_sigterm_of_test_process_kills_java(self):
        p, pids = self.child("ZooKeeper")
        p.signal(signal.SIGTERM)
        self.assertEqual(p.wait(10), -signal.SIGTERM)
        self.assert_gone(pids)

    def test_sigkill_kills_whole_ensemble(self):
        p, pids = self.child("Ensemble")
        self.assertEqual(len(pids), 3)
        p.signal(signal.SIGKILL)
        p.wait(5)
        self.assert_gone(pids)

    def test_proc_wait_log_and_group(self):
        p = self.proc(["/bin/sh", "-c", "echo one; echo two; sleep 0.2; echo one; "
                       "sleep 100 & sleep 100"], "sh")
        self.assertEqual(p.wait_log(r"^one$").group(0), "one")
        p.wait_log(r"^two$")
        p.wait_log(r"^one$", 5)  # the second occurrence
        with self.assertRaises(TimeoutError):
            p.wait_log(r"^three$", 0.3)
        self.assertTrue(p.alive())
        self.assertEqual(p.stop(2), -signal.SIGTERM)
        self.assertFalse(p.group_alive())
        q = self.proc(["/bin/sh", "-c", "echo bye; exit 3"], "exit")
        with self.assertRaises(lktest.ProcExited):
            q.wait_log(r"^never$", 5)
        self.assertEqual(q.wait(1), 3)

    def test_scripts_zk(self):
        script = os.path.join(lktest.source_dir(), "scripts", "zk")
        d = self.path("zkdir")
        r = subprocess.run([script, "start", "--dir", d], capture_output=True, text=True,
                           timeout=60)
        try:
            self.assertEqual(r.returncode, 0, r.stderr)
            connect = r.stdout.strip()
            with open(os.path.join(d, "connect")) as f:
                self.assertEqual(f.read().strip(), connect)
            with open(os.path.join(d, "pids")) as f:
                pid = int(f.read())
            self.assertTrue(lktest.pid_alive(pid))
            k = self.kazoo(hosts=connect)
            self.assertTrue(k.connected)
            k.stop()
            r = subprocess.run([script, "status", "--dir", d], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0)
            self.assertIn("standalone", r.stdout)
        finally:
            subprocess.run([script, "stop", "--dir", d], timeout=30)
        self.assertFalse(lktest.pid_alive(pid))
        r = subprocess.run([script, "status", "--dir", d], capture_output=True, text=True)
        self.assertEqual(r.returncode, 3)


def rec(kind, who, pid, ms, **fields):
    return Record(kind, who, pid, ms * MS, {k: str(v) for k, v in fields.items()})


class CheckOverlapsTest(lktest.TestCase):
    def test_sequential_no_overlap(self):
        r = lktest.check_overlaps([rec("start", "a", 1, 0), rec("end", "a", 1, 10),
                                   rec("start", "b", 2, 13), rec("end", "b", 2, 20),
                                   rec("start", "a", 3, 21)])
        self.assertEqual((r.overlaps, r.flock_overlaps, r.total), (0, 0, 0))
        self.assertEqual(r.min_gap_ns, 1 * MS)
        self.assertEqual(len(r.intervals), 3)
        self.assertEqual(r.intervals[2].end, float("inf"))
        self.assertEqual(r.max_concurrent, 1)

    def test_overlap_found(self):
        r = lktest.check_overlaps([rec("start", "a", 1, 0), rec("start", "b", 2, 5),
                                   rec("end", "a", 1, 10), rec("end", "b", 2, 20)])
        self.assertEqual(r.overlaps, 1)
        self.assertEqual(r.max_concurrent, 2)
        self.assertIn("overlap", r.violations[0])

    def test_still_running_overlaps_everything_after(self):
        r = lktest.check_overlaps([rec("start", "a", 1, 0), rec("start", "b", 2, 1000),
                                   rec("end", "b", 2, 1001), rec("start", "c", 3, 2000)])
        self.assertEqual(r.overlaps, 2)

    def test_death_ends_interval_and_file_order_does_not_matter(self):
        # The death line is appended late but carries the earlier time.
        r = lktest.check_overlaps([rec("start", "a", 1, 0), rec("start", "b", 2, 50),
                                   rec("death", "a", 1, 40)])
        self.assertEqual(r.overlaps, 0)
        self.assertEqual(r.min_gap_ns, 10 * MS)
        r = lktest.check_overlaps([rec("start", "a", 1, 0), rec("start", "b", 2, 50),
                                   rec("death", "a", 1, 60), rec("end", "a", 1, 70)])
        self.assertEqual(r.overlaps, 1)  # the first of end/death counts

    def test_same_instant_is_not_overlap(self):
        r = lktest.check_overlaps([rec("start", "a", 1, 0), rec("end", "a", 1, 10),
                                   rec("start", "b", 2, 10)])
        self.assertEqual(r.overlaps, 0)
        self.assertEqual(r.min_gap_ns, 0)

    def test_pid_reuse_and_repeated_cycles(self):
        recs = []
        for i in range(5):  # one JVM, five cycles
            recs += [rec("start", "j", 7, i * 10), rec("end", "j", 7, i * 10 + 5)]
        r = lktest.check_overlaps(recs)
        self.assertEqual((r.overlaps, len(r.intervals), r.min_gap_ns), (0, 5, 5 * MS))

    def test_semaphore_limit(self):
        recs = [rec("start", "a", 1, 0), rec("start", "b", 2, 1), rec("end", "a", 1, 10),
                rec("start", "c", 3, 12), rec("end", "b", 2, 20), rec("end", "c", 3, 30)]
        r = lktest.check_overlaps(recs, leases=2)
        self.assertEqual((r.overlaps, r.max_concurrent, r.min_gap_ns), (0, 2, 2 * MS))
        self.assertEqual(lktest.check_overlaps(recs, leases=1).overlaps, 2)
        recs.append(rec("start", "d", 4, 15))
        r = lktest.check_overlaps(recs, leases=2)
        self.assertEqual((r.overlaps, r.max_concurrent), (1, 3))

    def test_flock_overlap_lines_and_filters(self):
        recs = [rec("start", "a", 1, 0, job="x"), rec("overlap", "b", 2, 5, job="x"),
                rec("start", "b", 2, 5, job="x"), rec("start", "c", 3, 6, job="y")]
        r = lktest.check_overlaps(recs, job="y")
        self.assertEqual(r.total, 0)
        r = lktest.check_overlaps(recs, job="x")
        self.assertEqual((r.overlaps, r.flock_overlaps, r.total), (1, 1, 2))

    def test_fence_regression(self):
        recs = [rec("start", "a", 1, 0, fence=100, node="n1"), rec("end", "a", 1, 1),
                rec("start", "a", 2, 2, fence=100, node="n1"), rec("end", "a", 2, 3),
                rec("start", "b", 3, 4, fence=120, node="n2"), rec("end", "b", 3, 5)]
        self.assertEqual(lktest.check_overlaps(recs).fence_regressions, 0)
        recs += [rec("start", "c", 4, 6, fence=110, node="n3"), rec("end", "c", 4, 7),
                 rec("start", "d", 5, 8, fence=120, node="n4")]
        self.assertEqual(lktest.check_overlaps(recs).fence_regressions, 2)

    def test_parse(self):
        text = ("start w1 10 100 job=j fence=5 node=n pgid=10\nend w1 10 200 reason=done\n"
                "garbage\noverlap w2 11 150\nstart w3 12 3")
        recs = lktest.parse_records(text)
        self.assertEqual([r.kind for r in recs], ["start", "end", "overlap"])
        self.assertEqual(recs[0].fields["fence"], "5")


class LkRecordTest(lktest.TestCase):
    def run_record(self, rf, who, env=None, **kw):
        e = dict(os.environ)
        e.update(env or {})
        return self.proc(rf.argv(who, **kw), who, env=e)

    def test_second_instance_sees_overlap(self):
        rf = self.record_file()
        a = self.run_record(rf, "a", env={"LEASEKEEPER_FENCE": "42", "LEASEKEEPER_NODE": "n 1",
                                          "LEASEKEEPER_JOB": "j", "LEASEKEEPER_LEASES": "1"})
        a.wait_log("^start a")
        b = self.run_record(rf, "b", hold_ms=10)
        self.assertEqual(b.wait(5), 0)
        self.assertEqual(rf.count("overlap", "b"), 1)
        start_a = rf.starts("a")[0]
        self.assertEqual(start_a.fields["fence"], "42")
        self.assertEqual(start_a.fields["node"], "n_1")
        self.assertEqual(start_a.fields["job"], "j")
        self.assertEqual(int(start_a.fields["pgid"]), a.pgid)
        a.signal(signal.SIGTERM)
        self.assertEqual(a.wait(5), 0)
        self.assertEqual([r.fields.get("reason") for r in rf.records()
                          if r.kind == "end" and r.who == "a"], ["term"])
        c = self.run_record(rf, "c", hold_ms=0)
        c.wait(5)
        self.assertEqual(rf.count("overlap", "c"), 0)
        r = rf.check()
        self.assertEqual((r.overlaps, r.flock_overlaps), (1, 1))

    def test_grandchildren_hold_the_lock(self):
        rf = self.record_file()
        a = self.run_record(rf, "a", hold_ms=50, grandchildren=2, ignore_term=True)
        self.assertEqual(a.wait(5), 0)
        self.assertTrue(a.group_alive())  # the grandchildren
        b = self.run_record(rf, "b", hold_ms=0)
        b.wait(5)
        self.assertEqual(rf.count("overlap", "b"), 1)
        a.kill_group(signal.SIGTERM)  # ignored
        time.sleep(0.1)
        self.assertTrue(a.group_alive())
        a.kill_group(signal.SIGKILL)
        self.wait_until(lambda: not a.group_alive(), 5, "grandchildren to die")
        c = self.run_record(rf, "c", hold_ms=0)
        c.wait(5)
        self.assertEqual(rf.count("overlap", "c"), 0)

    def test_ignore_term_and_death_watcher(self):
        rf = self.record_file()
        a = self.run_record(rf, "a", ignore_term=True)
        a.wait_log("^start a")
        a.signal(signal.SIGTERM)
        time.sleep(0.2)
        self.assertTrue(a.alive())
        t = time.monotonic_ns()
        a.signal(signal.SIGKILL)
        a.wait(5)
        deaths = rf.wait_for("death", who="a", timeout=5)
        self.assertEqual(deaths[0].pid, a.pid)
        self.assertGreaterEqual(deaths[0].t_ns, t)
        self.assertLess(deaths[0].t_ns - t, 1000 * MS)
        self.assertEqual(rf.count("end", "a"), 0)
        iv = rf.check().intervals[0]
        self.assertEqual(iv.end, deaths[0].t_ns)

    def test_slots(self):
        rf = self.record_file()
        a = self.run_record(rf, "a", slots=2)
        b = self.run_record(rf, "b", slots=2)
        a.wait_log("^start")
        b.wait_log("^start")
        c = self.run_record(rf, "c", slots=2, hold_ms=0, exit=7)
        self.assertEqual(c.wait(5), 7)
        self.assertEqual(rf.count("overlap"), 1)
        self.assertEqual(sorted(r.fields["slot"] for r in rf.starts()), ["-1", "0", "1"])

    def test_clock_is_python_monotonic(self):
        rf = self.record_file()
        t0 = time.monotonic_ns()
        p = self.run_record(rf, "a", hold_ms=0)
        p.wait(5)
        t1 = time.monotonic_ns()
        s = rf.starts()[0]
        self.assertTrue(t0 <= s.t_ns <= t1, (t0, s.t_ns, t1))


class CuratorTest(lktest.TestCase):
    def test_clock_agrees(self):
        t0 = time.monotonic_ns()
        p = self.curator_peer("clock", name="clock")
        t = int(p.wait_log(r"^nanotime (\d+)$", 30).group(1))
        t1 = time.monotonic_ns()
        self.assertTrue(t0 <= t <= t1, "System.nanoTime %d not in [%d, %d]" % (t, t0, t1))

    def test_mutex_peers_exclude_each_other(self):
        zk = self.start_zookeeper()
        rf = self.record_file()
        peers = [self.curator_peer("mutex", zk.connect_string, "/lk/mutex/harness", 8, 40,
                                   rf.path, "p%d" % i, name="p%d" % i) for i in range(2)]
        for p in peers:
            p.wait_log("^done$", 60)
            self.assertEqual(p.wait(10), 0)
        r = rf.check(leases=1)
        self.assertEqual(r.total, 0, r.describe())
        self.assertEqual(len(r.intervals), 16)
        self.assertGreaterEqual(r.min_gap_ns, 0)
        sys.stderr.write("curator mutex hand-over: min gap %.2f ms\n" % (r.min_gap_ns / 1e6))

    def test_semaphore_never_exceeds_n(self):
        zk = self.start_zookeeper()
        rf = self.record_file()
        peers = [self.curator_peer("semaphore", zk.connect_string, "/lk/semaphore/harness", 2,
                                   5, 60, rf.path, "s%d" % i, name="s%d" % i)
                 for i in range(3)]
        for p in peers:
            p.wait_log("^done$", 60)
        r = rf.check(leases=2)
        self.assertEqual(r.overlaps, 0, r.describe())
        self.assertEqual(r.max_concurrent, 2, r.describe())
        self.assertEqual(len(r.intervals), 15)
        self.assertGreater(rf.check(leases=1).overlaps, 0)  # the checker does see concurrency

    def test_hold_and_release(self):
        zk = self.start_zookeeper()
        a = self.curator_peer("hold", zk.connect_string, "/lk/mutex/h", name="a")
        a.wait_log("^acquired$", 30)
        b = self.curator_peer("hold", zk.connect_string, "/lk/mutex/h", name="b")
        b.wait_log("^ready$", 30)
        with self.assertRaises(TimeoutError):
            b.wait_log("^acquired$", 1.0)
        a.write_line("release")
        a.wait_log("^released$", 10)
        b.wait_log("^acquired$", 10)
        b.close_stdin()
        b.wait_log("^released$", 10)
        self.assertEqual(b.wait(10), 0)
        k = self.kazoo()
        self.assertEqual(k.get_children("/lk/mutex/h"), [])


if __name__ == "__main__":
    lktest.main()

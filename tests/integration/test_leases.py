#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=900 split
"""The lease recipes against a real ZooKeeper, through `leasekeeper exec` and `status`:
mutual exclusion under contention, the semaphore's cap and liveness, kill -9 of a holder,
acquire timeout and cancel, a connection lost during create, server restart and leader
loss, Curator interop, lease-count agreement, exit statuses and the environment."""

import json
import os
import signal
import subprocess
import threading
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

BIN = lktest.leasekeeper_bin()


def sh_quote(argv):
    import shlex
    return " ".join(shlex.quote(str(a)) for a in argv)


class LeaseTest(lktest.TestCase):
    def exec_argv(self, name, command, node="n1", zk=None, leases=None, timeout=None,
                  lock_path=None, session=None, verbose=False):
        argv = [BIN, "exec", "--zk", zk or self.zk.connect_string, "--node-id", node]
        if leases is not None:
            argv += ["--leases", str(leases)]
        if timeout is not None:
            argv += ["--timeout", timeout]
        if lock_path is not None:
            argv += ["--lock-path", lock_path]
        if session is not None:
            argv += ["--session-timeout", session, "--safety-margin", "500ms",
                     "--kill-grace", "1s"]
        if verbose:
            argv.append("-v")
        return argv + [name, "--"] + [str(c) for c in command]

    def exec(self, name, command, proc_name, **kw):
        return self.proc(self.exec_argv(name, command, **kw), proc_name)

    def run_exec(self, name, command, **kw):
        return subprocess.run(self.exec_argv(name, command, **kw), capture_output=True,
                              text=True, timeout=120)

    def loop(self, name, rec, who, cycles, hold_ms, leases=None, lock_path=None, slots=1):
        """A shell loop of `cycles` exec runs of lk-record, as one tracked process."""
        one = sh_quote(self.exec_argv(name, rec.argv(who, hold_ms=hold_ms, slots=slots),
                                      node=who, leases=leases, timeout="120s",
                                      lock_path=lock_path))
        script = "i=0; while [ $i -lt %d ]; do %s || exit 1; i=$((i+1)); done" % (cycles, one)
        return self.proc(["/bin/sh", "-c", script], who)

    def children(self, kz, path):
        return sorted(kz.get_children(path)) if kz.exists(path) else []

    def owned_by(self, kz, path, session):
        return [c for c in self.children(kz, path)
                if kz.exists(path + "/" + c).ephemeralOwner == session]

    def assert_safe(self, rep):
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))

    # -- mutual exclusion -------------------------------------------------------------------

    def test_mutex_eight_processes_hundred_cycles(self):
        self.start_zookeeper()
        rec = self.record_file()
        # LKTEST_CONTENTION_CYCLES: fewer in the sanitizer build, where each cycle costs more
        # and the point is memory checking (scripts/test sets it there).
        cycles = int(os.environ.get("LKTEST_CONTENTION_CYCLES", "100"))
        loops = [self.loop("contended", rec, "p%d" % i, cycles, 2) for i in range(8)]
        for p in loops:
            self.assertEqual(p.wait(timeout=600), 0, p.log_text()[-2000:])
        rep = rec.check(leases=1)
        self.assert_safe(rep)
        for i in range(8):
            self.assertEqual(len(rec.starts("p%d" % i)), cycles, "p%d's turns" % i)
        self.assertEqual(len(rep.intervals), 8 * cycles)
        self.assertEqual(self.children(self.kazoo(), "/leasekeeper/mutex/contended"), [])

    def test_semaphore_ten_processes_three_leases(self):
        self.start_zookeeper()
        rec = self.record_file()
        # Each hold (400 ms) is long against starting an exec process, even on a busy machine,
        # so that with ten contenders the three leases are surely in use together at times.
        loops = [self.loop("pool", rec, "p%d" % i, 15, 400, leases=3, slots=3) for i in range(10)]
        for p in loops:
            self.assertEqual(p.wait(timeout=400), 0, p.log_text()[-2000:])
        rep = rec.check(leases=3)
        self.assert_safe(rep)
        self.assertEqual(rep.max_concurrent, 3, "three leases must be used at once")
        self.assertEqual(len(rep.intervals), 150)

    def test_semaphore_release_out_of_order_wakes_a_waiter(self):
        """N = 2, holders A and B, waiters C and D: B ends first (out of order); a waiter must
        take B's lease at once although A, ahead of B, still holds its own."""
        self.start_zookeeper()
        rec = self.record_file()
        self.exec("ooo", rec.argv("A", slots=2), "A", node="A", leases=2)
        rec.wait_for("start", who="A", timeout=20)
        self.exec("ooo", rec.argv("B", hold_ms=2500, slots=2), "B", node="B", leases=2)
        rec.wait_for("start", who="B", timeout=20)
        self.exec("ooo", rec.argv("C", slots=2), "C", node="C", leases=2)
        self.exec("ooo", rec.argv("D", slots=2), "D", node="D", leases=2)
        b_end = rec.wait_for("end", who="B", timeout=20)[0]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and rec.count("start", "C") + rec.count("start", "D") == 0:
            time.sleep(0.02)
        starts = rec.starts("C") + rec.starts("D")
        self.assertEqual(len(starts), 1, "exactly one waiter takes the freed lease")
        gap_ms = (starts[0].t_ns - b_end.t_ns) / 1e6
        self.assertLess(gap_ms, 3000, "the freed lease stayed idle behind a busy one")
        self.assert_safe(rec.check(leases=2))

    # -- faults -----------------------------------------------------------------------------

    def test_kill9_holder_lease_passes_after_expiry(self):
        self.start_zookeeper()
        rec = self.record_file()
        a = self.exec("k9", rec.argv("A"), "A", node="A", session="4s")
        rec.wait_for("start", who="A", timeout=20)
        b = self.exec("k9", rec.argv("B", hold_ms=200), "B", node="B", session="4s")
        time.sleep(1.0)
        self.assertEqual(rec.count("start", "B"), 0)
        t_kill = time.monotonic_ns()
        os.kill(a.pid, signal.SIGKILL)  # the main process only
        death = rec.wait_for("death", who="A", timeout=10)[0]
        self.assertLess((death.t_ns - t_kill) / 1e9, 1.0,
                        "the supervisor must kill the job as soon as main is gone")
        start_b = rec.wait_for("start", who="B", timeout=20)[0]
        # B waited for A's session to expire on the server (about 4 s).
        self.assertGreater((start_b.t_ns - t_kill) / 1e9, 2.0)
        self.assertEqual(b.wait(timeout=20), 0)
        self.assert_safe(rec.check())

    def test_acquire_timeout_leaves_no_node(self):
        self.start_zookeeper()
        rec = self.record_file()
        self.exec("to", rec.argv("A"), "A", node="A")
        rec.wait_for("start", who="A", timeout=20)
        kz = self.kazoo()
        before = self.children(kz, "/leasekeeper/mutex/to")
        self.assertEqual(len(before), 1)
        t0 = time.monotonic()
        r = self.run_exec("to", ["true"], node="B", timeout="1500ms")
        self.assertEqual(r.returncode, 75, r.stderr)
        self.assertIn("no lease", r.stderr)
        self.assertLess(time.monotonic() - t0, 6.0)
        self.assertEqual(self.children(kz, "/leasekeeper/mutex/to"), before)

    def test_sigint_while_waiting_leaves_no_node(self):
        self.start_zookeeper()
        rec = self.record_file()
        self.exec("cancel", rec.argv("A"), "A", node="A")
        rec.wait_for("start", who="A", timeout=20)
        kz = self.kazoo()
        b = self.exec("cancel", ["true"], "B", node="B")
        self.wait_until(lambda: len(self.children(kz, "/leasekeeper/mutex/cancel")) == 2,
                        timeout=20, msg="B never queued")
        b.signal(signal.SIGINT)
        self.assertEqual(b.wait(timeout=10), 130)
        self.assertEqual(len(self.children(kz, "/leasekeeper/mutex/cancel")), 1)
        self.assertEqual(rec.count("start", "B"), 0)

    def test_connection_lost_during_create_leaves_no_orphan(self):
        """The reply to B's create is lost (the proxy holds replies back, and the connection
        is dropped the moment the node appears on the server): B must find its node by uuid
        after reconnecting, not create a second one."""
        self.start_zookeeper()
        rec = self.record_file()
        a = self.exec("orphan", rec.argv("A"), "A", node="A")
        rec.wait_for("start", who="A", timeout=20)
        kz = self.kazoo()
        folder = "/leasekeeper/mutex/orphan"
        holder = self.children(kz, folder)
        proxy = self.proxy()
        proxy.delay(400)
        dropped = threading.Event()

        def watch(children):
            if not dropped.is_set() and len(children) > len(holder):
                proxy.drop_all()
                proxy.delay(0)
                dropped.set()
            return not dropped.is_set()

        kz.ChildrenWatch(folder, watch)
        b = self.exec("orphan", rec.argv("B", hold_ms=100), "B", node="B", zk=proxy.connect_string,
                      verbose=True)
        self.assertTrue(dropped.wait(20), "B's create never reached the server")
        b.wait_log(r"connection lost while creating a node", timeout=20)
        b.wait_log(r"found our node .* after the connection loss", timeout=20)
        time.sleep(0.5)
        names = [c for c in self.children(kz, folder) if c not in holder]
        self.assertEqual(len(names), 1, "B must own exactly one node, not %s" % names)
        a.signal(signal.SIGTERM)  # A's command ends; its lease goes to B
        self.assertEqual(b.wait(timeout=20), 0)
        self.assertEqual(rec.count("start", "B"), 1)
        self.assertEqual(self.children(kz, folder), [])
        self.assert_safe(rec.check())

    def test_server_restart_keeps_the_lease(self):
        # The lease survives only if the server is back within T - safety_margin - kill_grace;
        # a restart on a busy machine was seen to take 10 s: the most the server allows
        # (tickTime 2 s: a 40 s session).
        zk = self.start_zookeeper(tick_ms=2000)
        rec = self.record_file()
        a = self.exec("restart", rec.argv("A"), "A", node="A", session="40s", verbose=True)
        rec.wait_for("start", who="A", timeout=20)
        zk.restart(timeout=30)
        a.wait_log(r"reconnected", timeout=30)
        time.sleep(1.0)
        self.assertTrue(a.alive())
        self.assertEqual(rec.count("start", "A"), 1)
        self.assertEqual(rec.count("death", "A") + rec.count("end", "A"), 0,
                         "the job must not be interrupted")
        self.assertNotIn("lease lost", a.log_text())

    def test_leader_kill_keeps_the_lease(self):
        # An election on a busy machine can take seconds: a 40 s session (tickTime 2 s).
        ens = self.start_ensemble(3, tick_ms=2000)
        rec = self.record_file()
        a = self.exec("leader", rec.argv("A"), "A", node="A", zk=ens.connect_string,
                      session="40s", verbose=True)
        rec.wait_for("start", who="A", timeout=20)
        leader = ens.leader()
        ens.kill(leader)
        ens.wait_for_leader(timeout=30)
        time.sleep(3.0)
        self.assertTrue(a.alive())
        self.assertEqual(rec.count("start", "A"), 1)
        self.assertEqual(rec.count("death", "A") + rec.count("end", "A"), 0,
                         "the job must not be interrupted by a leader change")
        b = self.run_exec("leader", ["true"], node="B", zk=ens.connect_string, timeout="2s")
        self.assertEqual(b.returncode, 75, "the lease must still be held after the election")

    # -- Curator interop --------------------------------------------------------------------

    def test_curator_mutex_excludes_exec_both_ways(self):
        self.start_zookeeper()
        path = "/interop/mutex"
        cur = self.curator_peer("hold", self.zk.connect_string, path, name="cur-hold")
        cur.wait_log(r"^acquired$", timeout=60)
        r = self.run_exec("x", ["true"], lock_path=path, timeout="2s")
        self.assertEqual(r.returncode, 75, "exec must wait while Curator holds the mutex")
        cur.write_line("release")
        cur.wait_log(r"^released$", timeout=20)
        r = self.run_exec("x", ["true"], lock_path=path, timeout="10s")
        self.assertEqual(r.returncode, 0, r.stderr)
        # The other way: exec holds (until we end its job with SIGTERM, however long the
        # JVM takes to start on a loaded machine), Curator waits.
        rec = self.record_file()
        self.exec("x", rec.argv("E"), "E", lock_path=path)
        start = rec.wait_for("start", who="E", timeout=20)[0]
        cur2 = self.curator_peer("hold", self.zk.connect_string, path, name="cur-wait")
        cur2.wait_log(r"^ready$", timeout=60)
        time.sleep(1.0)
        self.assertNotRegex(cur2.log_text(), r"(?m)^acquired$",
                            "Curator must wait while leasekeeper holds the mutex")
        os.kill(start.pid, signal.SIGTERM)
        end = rec.wait_for("end", who="E", timeout=20)[0]
        cur2.wait_log(r"^acquired$", timeout=20)
        self.assertGreater(time.monotonic_ns(), end.t_ns)

    def test_curator_mutex_and_exec_loops_never_overlap(self):
        self.start_zookeeper()
        rec = self.record_file()
        path = "/interop/loop"
        cur = self.curator_peer("mutex", self.zk.connect_string, path, 40, 10, rec.path, "curator",
                                name="cur")
        cur.wait_log(r"^ready$", timeout=60)
        loops = [self.loop("x", rec, "lk%d" % i, 25, 10, lock_path=path) for i in range(2)]
        for p in loops:
            self.assertEqual(p.wait(timeout=300), 0)
        self.assertEqual(cur.wait(timeout=300), 0)
        self.assert_safe(rec.check(leases=1))
        self.assertEqual(len(rec.starts("curator")), 40)
        self.assertEqual(len(rec.starts("lk0")) + len(rec.starts("lk1")), 50)

    def test_curator_semaphore_and_exec_share_two_leases(self):
        self.start_zookeeper()
        rec = self.record_file()
        path = "/interop/sem"
        curs = [self.curator_peer("semaphore", self.zk.connect_string, path, 2, 20, 30, rec.path,
                                  "cur%d" % i, name="cur%d" % i) for i in range(2)]
        for c in curs:
            c.wait_log(r"^ready$", timeout=60)
        loops = [self.loop("x", rec, "lk%d" % i, 20, 30, leases=2, lock_path=path, slots=2)
                 for i in range(2)]
        for p in loops + curs:
            self.assertEqual(p.wait(timeout=300), 0)
        rep = rec.check(leases=2)
        self.assert_safe(rep)
        self.assertEqual(rep.max_concurrent, 2)
        self.assertEqual(len(rep.intervals), 80)

    # -- status, agreement, exec semantics ---------------------------------------------------

    def test_status_shows_holder_and_waiters_in_order(self):
        self.start_zookeeper()
        rec = self.record_file()
        self.exec("st", rec.argv("a"), "a", node="a")
        rec.wait_for("start", who="a", timeout=20)
        kz = self.kazoo()
        self.exec("st", ["true"], "b", node="b")
        self.wait_until(lambda: len(self.children(kz, "/leasekeeper/mutex/st")) == 2, timeout=20)
        self.exec("st", ["true"], "c", node="c")
        self.wait_until(lambda: len(self.children(kz, "/leasekeeper/mutex/st")) == 3, timeout=20)
        r = subprocess.run([BIN, "status", "--zk", self.zk.connect_string, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        job = [j for j in out["jobs"] if j["name"] == "st"][0]
        self.assertEqual(job["leases"], 1)
        self.assertEqual([h["node"] for h in job["holders"]], ["a"])
        self.assertEqual([w["node"] for w in job["waiters"]], ["b", "c"])
        self.assertTrue(all("pid" in n and "since" in n for n in job["holders"] + job["waiters"]))
        r = subprocess.run([BIN, "status", "--zk", self.zk.connect_string, "--lock-path",
                            "/leasekeeper/mutex/st"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stdout.splitlines() if l.strip().startswith(("holder", "waiting"))]
        self.assertEqual([l.split()[1] for l in lines], ["a", "b", "c"])
        self.assertTrue(lines[0].strip().startswith("holder"))

    def test_status_of_a_semaphore(self):
        """N = 2: two holders; C holds the locks mutex and has its lease node (counting), D
        queues on the mutex. Status must show A, B holding and C, D waiting, in order."""
        self.start_zookeeper()
        rec = self.record_file()
        for who in ("A", "B"):
            self.exec("sem", rec.argv(who, slots=2), who, node=who, leases=2)
            rec.wait_for("start", who=who, timeout=20)
        kz = self.kazoo()
        self.exec("sem", ["true"], "C", node="C", leases=2)
        self.wait_until(lambda: len(self.children(kz, "/leasekeeper/semaphore/sem/leases")) == 3,
                        timeout=20)
        self.exec("sem", ["true"], "D", node="D", leases=2)
        self.wait_until(lambda: len(self.children(kz, "/leasekeeper/semaphore/sem/locks")) == 2,
                        timeout=20)
        r = subprocess.run([BIN, "status", "--zk", self.zk.connect_string, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        job = [j for j in json.loads(r.stdout)["jobs"] if j["name"] == "sem"][0]
        self.assertEqual(job["lock_path"], "/leasekeeper/semaphore/sem")
        self.assertEqual([h["node"] for h in job["holders"]], ["A", "B"])
        self.assertEqual([w["node"] for w in job["waiters"]], ["C", "D"])

    def test_lease_count_agreement_and_set_leases(self):
        self.start_zookeeper()
        r = self.run_exec("agree", ["true"], leases=1)
        self.assertEqual(r.returncode, 0, r.stderr)
        kz = self.kazoo()
        self.assertEqual(json.loads(kz.get("/leasekeeper/jobs/agree")[0]),
                         {"leases": 1, "lock": "/leasekeeper/mutex/agree", "v": 1})
        r = self.run_exec("agree", ["true"], leases=2, timeout="5s")
        self.assertEqual(r.returncode, 69)
        self.assertRegex(r.stderr, r"the cluster agreed on 1 lease\(s\).*--leases is 2")
        r = subprocess.run([BIN, "set-leases", "--zk", self.zk.connect_string, "agree", "2"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("leases 2 (was 1)", r.stdout)
        r = self.run_exec("agree", ["true"], leases=2, timeout="5s")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.run_exec("agree", ["true"], leases=1, timeout="5s")
        self.assertEqual(r.returncode, 69)

    def test_exec_exit_status_and_environment(self):
        self.start_zookeeper()
        self.assertEqual(self.run_exec("st1", ["sh", "-c", "exit 7"]).returncode, 7)
        self.assertEqual(self.run_exec("st1", ["sh", "-c", "kill -TERM $$"]).returncode, 143)
        self.assertEqual(self.run_exec("st1", ["/nonexistent/cmd"]).returncode, 127)
        r = self.run_exec("envjob", ["sh", "-c", "env | grep ^LEASEKEEPER_ | sort"], node="zed",
                          leases=2)
        self.assertEqual(r.returncode, 0, r.stderr)
        env = dict(l.split("=", 1) for l in r.stdout.split())
        self.assertEqual(env["LEASEKEEPER_JOB"], "envjob")
        self.assertEqual(env["LEASEKEEPER_NODE"], "zed")
        self.assertEqual(env["LEASEKEEPER_LEASES"], "2")
        self.assertGreater(int(env["LEASEKEEPER_FENCE"]), 0)
        self.assertEqual(int(env["LEASEKEEPER_DEADLINE_MS"]), 10000 - 1000)
        # A configuration of only [zookeeper] is enough: exec runs none of its jobs, so the
        # worker's "no jobs" refusal (exit 78) is not exec's.
        only_zk = self.path("only-zk.ini")
        with open(only_zk, "w") as f:
            f.write("[zookeeper]\nhosts = %s\n" % self.zk.connect_string)
        r = subprocess.run([BIN, "exec", "-c", only_zk, "zkonly", "--", "sh", "-c",
                            'echo "$LEASEKEEPER_JOB $LEASEKEEPER_FENCES"'],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^zkonly /leasekeeper/mutex/zkonly=\d+\n$")

    def test_exec_passes_sigint_to_the_whole_group(self):
        self.start_zookeeper()
        got, ready = self.path("grandchild-got-int"), self.path("grandchild-ready")
        py = ("import signal, sys, time\n"
              "signal.signal(signal.SIGINT, lambda *a: (open(%r, 'w').close(), sys.exit(0)))\n"
              "open(%r, 'w').close()\n"
              "time.sleep(100)\n" % (got, ready))
        script = ("/usr/bin/python3 -c \"$0\" & "
                  "trap 'echo parent-got-int; wait; exit 3' INT; "
                  "while :; do sleep 0.1; done")
        p = self.exec("sig", ["sh", "-c", script, py], "sig")
        self.wait_until(lambda: os.path.exists(ready), timeout=20, msg="grandchild not ready")
        p.signal(signal.SIGINT)
        self.assertEqual(p.wait(timeout=20), 3)
        self.assertIn("parent-got-int", p.log_text())
        self.assertTrue(os.path.exists(got), "a grandchild in the group did not get SIGINT")
        self.assertEqual(self.children(self.kazoo(), "/leasekeeper/mutex/sig"), [])

    def test_wrapped_sequence_is_reported_and_ordered(self):
        """A node whose suffix wrapped past 2^31 is newer than ours: we still hold the lock
        (Curator's string order would put it first) and we say so."""
        self.start_zookeeper()
        kz = self.kazoo()
        folder = "/leasekeeper/mutex/wrap"
        kz.create(folder + "/_c_00000000-0000-4000-8000-000000000000-lock--000000005",
                  b"wrapped", ephemeral=True, makepath=True)
        r = self.run_exec("wrap", ["true"], timeout="5s")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("wrapped past 2^31", r.stderr)


if __name__ == "__main__":
    lktest.main()

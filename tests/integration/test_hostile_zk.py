#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=900 split
"""Hostile data in ZooKeeper (issue 8): nodes anyone with write access can forge must not hang,
stop or flood a worker. A huge tick state with an old tick, a claim years ahead, a corrupt or
fought-over lease count, a job that restarts as fast as it can."""

import json
import re
import signal
import sys
import threading
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
MAX_RUNS_PER_MINUTE = 30  # JOBREC_MAX_RUNS in src/cluster/jobrec.c
MAX_REWRITES_PER_MINUTE = 5  # JOBREC_MAX_REWRITES in src/cluster/jobrec.c


read = lktest.read_text


class HostileZkTest(lktest.TestCase):
    def start(self, name, jobs, http=True):
        extra = {}
        self.ports = getattr(self, "ports", {})
        if http:
            self.ports[name] = lktest.free_port()
            extra["http"] = {"listen": "127.0.0.1:%d" % self.ports[name]}
        cfg = self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                worker={"allow_root_jobs": True}, jobs=jobs, extra=extra)
        p = self.worker(cfg, name=name)
        p.wait_log(r"registered as", timeout=30)
        return p

    def http_get(self, name, path, timeout=10):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.ports[name], path),
                                    timeout=timeout) as r:
            return r.status, r.read().decode()

    def ticks(self, path):
        return [line.split()[0] for line in read(path).splitlines() if line.strip()]

    def tick_job(self, out, **kw):
        return dict({"command": 'echo "$LEASEKEEPER_TICK $LEASEKEEPER_NODE" >> %s' % out,
                     "schedule": "@every 2s", "start_deadline": "1500ms"}, **kw)

    def test_huge_old_tick_state_does_not_hang_the_worker(self):
        """Item 4: {"tick":1,"missed":[0]*300000} hung every worker at full CPU."""
        self.start_zookeeper()
        kz = self.kazoo()
        hostile = json.dumps({"tick": 1, "missed": [0] * 300000}).encode()
        kz.create("/leasekeeper/jobs/tick/state", hostile, makepath=True)
        out = self.path("ticks.txt")
        p = self.start("alpha", {"tick": self.tick_job(out)})
        # The worker answers /health all along; a stalled loop would time the request out.
        began = time.monotonic()
        slowest = 0.0
        while not self.ticks(out):
            t = time.monotonic()
            code, _ = self.http_get("alpha", "/health", timeout=30)
            slowest = max(slowest, time.monotonic() - t)
            self.assertIn(code, (200, 503))
            self.assertLess(time.monotonic() - began, 60, "no tick ran in 60 s")
            time.sleep(0.2)
        first = time.monotonic() - began
        # The next ticks run, each once.
        self.wait_until(lambda: len(self.ticks(out)) >= 3, timeout=30 + 10 * first)
        ticks = self.ticks(out)
        self.assertEqual(len(ticks), len(set(ticks)), "a tick ran twice: %s" % ticks)
        state = json.loads(kz.get("/leasekeeper/jobs/tick/state")[0])
        self.assertLessEqual(len(state["missed"]), 64)
        self.assertGreater(state["tick"], 1)
        p.wait_log(r"job tick: repairing /leasekeeper/jobs/tick/state", timeout=5)
        # And it still stops on SIGTERM.
        p.signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=30), 0)
        sys.stderr.write("first tick after %.1f s, slowest /health %.2f s\n" % (first, slowest))

    def test_far_future_claim_is_overridden_and_reported(self):
        """Item 5: "tick": 4102444800 stopped the job for good, logged at debug level."""
        self.start_zookeeper()
        kz = self.kazoo()
        kz.create("/leasekeeper/jobs/tick/state",
                  json.dumps({"tick": 4102444800, "runners": ["clock-ahead"]}).encode(),
                  makepath=True)
        out = self.path("ticks.txt")
        p = self.start("alpha", {"tick": self.tick_job(out)})
        self.wait_until(lambda: len(self.ticks(out)) >= 2, timeout=60)
        p.wait_log(r"warn.*job tick: overriding /leasekeeper/jobs/tick/state.*beyond the next",
                   timeout=5)
        _, metrics = self.http_get("alpha", "/metrics")
        m = re.search(r'^leasekeeper_job_corrupt_states_total\{job_name="tick"\} (\d+)$', metrics,
                      re.MULTILINE)
        self.assertIsNotNone(m, metrics)
        self.assertGreaterEqual(int(m.group(1)), 1)
        state = json.loads(kz.get("/leasekeeper/jobs/tick/state")[0])
        self.assertLess(state["tick"], time.time() + 3600)
        # status flags such a claim while it is there.
        kz.set("/leasekeeper/jobs/tick/state",
               json.dumps({"tick": 4102444800, "runners": ["clock-ahead"]}).encode())
        cfg = self.path("alpha", "worker.ini")
        st = self.leasekeeper("status", "-c", cfg, name="status")
        self.assertEqual(st.wait(timeout=60), 0)
        self.assertRegex(st.log_text(), r"last claimed tick 2100-01-01.*CORRUPT")

    def rewrite(self, kz, path, doc, times=3):
        """Write doc (plus a note) to path `times` times a second apart: the worker reads it
        again each time (its watch)."""
        for i in range(times):
            kz.set(path, json.dumps(dict(doc, note=i)).encode())
            time.sleep(1)

    def test_invalid_lease_count_is_a_conflict_not_rewritten(self):
        """Item 6: a count above LK_MAX_LEASES was read as "no count" and rewritten. Said
        once however often the record is read, and again when it comes back after a fix."""
        said = r"warn.*/leasekeeper/jobs/work holds an invalid lease count"
        self.start_zookeeper()
        kz = self.kazoo()
        kz.create("/leasekeeper/jobs/work", json.dumps({"leases": 2000000}).encode(),
                  makepath=True)
        out = self.path("ticks.txt")
        p = self.start("alpha", {"work": self.tick_job(out)})
        time.sleep(5)
        data, stat = kz.get("/leasekeeper/jobs/work")
        self.assertEqual(stat.version, 0, "the corrupt record was rewritten: %r" % data)
        self.assertEqual(self.ticks(out), [], "ran without an agreed count")
        p.wait_log(said, timeout=30)
        st = self.leasekeeper("status", "-c", self.path("alpha", "worker.ini"), name="status")
        self.assertEqual(st.wait(timeout=60), 0)
        self.assertRegex(st.log_text(), r"work .*CORRUPT: the job record holds no valid lease")
        self.rewrite(kz, "/leasekeeper/jobs/work", {"leases": 2000000})
        self.assertEqual(len(re.findall(said, p.log_text())), 1, "said on every read")
        # Fixed on purpose, the job runs.
        kz.set("/leasekeeper/jobs/work", json.dumps({"leases": 1}).encode())
        self.wait_until(lambda: len(self.ticks(out)) >= 1, timeout=60)
        # Corrupt again: said again.
        kz.set("/leasekeeper/jobs/work", json.dumps({"leases": 2000000}).encode())
        self.wait_until(lambda: len(re.findall(said, p.log_text())) == 2, timeout=30,
                        msg="the corrupt count said again")

    def test_invalid_locks_are_a_conflict_not_rewritten(self):
        """A job record whose "locks" is not a valid list (a string here) is a conflict, as
        other locks are: no run, never written over, said in the log and by status; the
        operator's set-leases clears it, and the job runs. Said once however often the
        record is read, and again when it names other locks."""
        said = (r"job work: its record /leasekeeper/jobs/work says the job's locks are "
                r"\(not a valid list of locks\), but this worker's configuration takes "
                r".*/leasekeeper/mutex/work.*: not contending")
        self.start_zookeeper()
        kz = self.kazoo()
        bad = {"leases": 1, "lock": "/leasekeeper/mutex/work", "locks": "/leasekeeper/mutex/work"}
        kz.create("/leasekeeper/jobs/work", json.dumps(bad).encode(), makepath=True)
        out = self.path("ticks.txt")
        p = self.start("alpha", {"work": self.tick_job(out)})
        p.wait_log(said, timeout=30)
        self.rewrite(kz, "/leasekeeper/jobs/work", bad)
        # Other locks (valid ones, not ours): a new conflict, said; then the invalid ones again.
        other = dict(bad, locks=[{"path": "/leasekeeper/mutex/other", "mode": "mutex"}])
        kz.set("/leasekeeper/jobs/work", json.dumps(other).encode())
        p.wait_log(r"job work: its record /leasekeeper/jobs/work says the job's locks are "
                   r".*/leasekeeper/mutex/other", timeout=30)
        self.assertEqual(len(re.findall(said, p.log_text())), 1, "said on every read")
        kz.set("/leasekeeper/jobs/work", json.dumps(bad).encode())
        self.wait_until(lambda: len(re.findall(said, p.log_text())) == 2, timeout=30,
                        msg="the invalid locks said again after other ones")
        data, stat = kz.get("/leasekeeper/jobs/work")
        self.assertEqual(stat.version, 5, "the invalid record was rewritten: %r" % data)
        self.assertEqual(json.loads(data), bad)
        self.assertEqual(self.ticks(out), [], "ran without agreed locks")
        st = self.leasekeeper("status", "-c", self.path("alpha", "worker.ini"), name="status")
        self.assertEqual(st.wait(timeout=60), 0)
        self.assertRegex(st.log_text(), r"work .*CONFLICT: the job record's locks are "
                                        r"\(not a valid list of locks\)")
        fix = self.leasekeeper("set-leases", "-c", self.path("alpha", "worker.ini"), "work", "1",
                               name="set-leases")
        self.assertEqual(fix.wait(timeout=60), 0)
        self.wait_until(lambda: len(self.ticks(out)) >= 1, timeout=60)
        self.assertEqual(json.loads(kz.get("/leasekeeper/jobs/work")[0])["locks"],
                         [{"path": "/leasekeeper/mutex/work", "mode": "mutex"}])

    def test_record_fought_over_is_not_rewritten_in_a_loop(self):
        """Item 6: whatever another writer does, a worker's rewrites of a record are bounded."""
        self.start_zookeeper()
        kz = self.kazoo()
        kz.create("/leasekeeper/jobs/work", b"{}", makepath=True)
        theirs = []
        stop = threading.Event()

        def fight(data, stat):
            # Someone who keeps writing back a record without a count.
            if stop.is_set():
                return False
            if data is not None and data != b"{}":
                theirs.append(stat.version)
                kz.set("/leasekeeper/jobs/work", b"{}")
            return True

        kz.DataWatch("/leasekeeper/jobs/work", fight)
        p = self.start("alpha", {"work": self.tick_job(self.path("ticks.txt"))})
        self.wait_until(lambda: len(theirs) >= 1, timeout=30)
        time.sleep(8)
        stop.set()
        self.assertLessEqual(len(theirs), MAX_REWRITES_PER_MINUTE,
                             "the worker rewrote the record %d times" % len(theirs))
        p.wait_log(r"warn.*/leasekeeper/jobs/work was rewritten %d times in a minute"
                   % MAX_REWRITES_PER_MINUTE, timeout=5)

    def test_run_records_capped_per_minute(self):
        """Item 7: a job restarting at once wrote about 3,000 run records a minute."""
        self.start_zookeeper()
        kz = self.kazoo()
        out = self.path("starts.txt")
        # 1 s is the shortest restart_backoff check accepts: a run a second or so, twice the
        # cap of a minute.
        p = self.start("alpha", {"fast": {"command": "echo x >> %s" % out,
                                          "restart_backoff": "1s", "history": 1000}})
        began = time.monotonic()

        def windows():
            # Minutes begun since the first run: the cap holds per minute.
            return int((time.monotonic() - began) // 60) + 1

        # Runs past what the minutes begun so far allow (each run is an echo and a fork).
        self.wait_until(
            lambda: len(read(out).splitlines()) > windows() * MAX_RUNS_PER_MINUTE + 5,
            timeout=300)
        time.sleep(2)
        allowed = windows() * MAX_RUNS_PER_MINUTE
        runs = len(read(out).splitlines())
        names = kz.get_children("/leasekeeper/jobs/fast/runs")
        created = max(int(n[len("run-"):]) for n in names) + 1
        self.assertLessEqual(created, allowed, "%d run records for %d runs in %.0f s"
                             % (created, runs, time.monotonic() - began))
        p.wait_log(r"warn.*job fast: %d run records in the last minute" % MAX_RUNS_PER_MINUTE,
                   timeout=5)

    def wait_registered(self, kz, path, not_owner):
        """Wait until path exists, held by a session other than not_owner's; its owner."""
        def owner():
            st = kz.exists(path)
            return st.ephemeralOwner if st is not None and st.ephemeralOwner != not_owner else 0
        self.wait_until(owner, timeout=30)
        return owner()

    def test_own_node_deleted_registers_again(self):
        """Item 13: our registration node deleted by someone else went unnoticed."""
        self.start_zookeeper()
        kz = self.kazoo()
        p = self.start("alpha", {})
        path = "/leasekeeper/workers/alpha"
        me = kz.client_id[0]
        first = self.wait_registered(kz, path, me)
        kz.delete(path)
        self.assertEqual(self.wait_registered(kz, path, me), first)
        p.wait_log(r"warn.*%s was deleted by someone else: registering again" % path, timeout=5)
        self.wait_until(lambda: self.http_get("alpha", "/health")[0] == 200, timeout=30)
        # The whole root too.
        # At once, in one transaction (a recursive delete would race with the worker).
        def tree(p):
            return [n for c in kz.get_children(p) for n in tree(p + "/" + c)] + [p]
        for _ in range(20):
            t = kz.transaction()
            for n in tree("/leasekeeper"):
                t.delete(n)
            if all(r is True for r in t.commit()):
                break
        else:
            self.fail("could not delete the root")
        self.assertEqual(self.wait_registered(kz, path, me), first)
        self.assertIsNotNone(kz.exists("/leasekeeper/jobs"))
        # Registered, its node id is taken: a second worker with it is refused.
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"},
                                safety=SAFETY, worker={"allow_root_jobs": True}, jobs={})
        twin = self.worker(cfg, name="twin")
        twin.wait_log(r"is registered by another session", timeout=30)

    def test_node_under_our_id_cannot_forge_log_lines(self):
        """Issue 9: the data of another session's node under our node id, which anyone can
        write, went into our log raw: a newline in it forged a log line of its own, an escape
        sequence reached the terminal. It is now quoted and escaped, and a worker node's data
        is shown by its host, pid and start."""
        self.start_zookeeper()
        kz = self.kazoo()
        path = "/leasekeeper/workers/alpha"
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"},
                                safety=SAFETY, worker={"allow_root_jobs": True}, jobs={})
        forged = "2026-01-01T00:00:00.000Z leasekeeper[1] main info: registered as " + path
        kz.create(path, b"x\n" + forged.encode() + b"\x1b[2J", ephemeral=True, makepath=True)
        p = self.worker(cfg, name="raw")
        p.wait_log(r"is registered by another session", timeout=30)
        self.assertEqual(p.wait(timeout=30), 1)
        text = p.log_text()
        self.assertNotIn("\n" + forged, text, "a forged line in our log")
        self.assertNotIn("\x1b", text)
        line = next(l for l in text.splitlines() if "is registered by another session" in l)
        # One line: the data quoted, escaped and cut short around "...".
        self.assertRegex(line, r'\(0x[0-9a-f]+: "x\\n2026-01-01T00:.*\.\.\..*/workers/alpha'
                               r'\\x1b\[2J"\); waiting up to \d+ ms')
        # A worker node's data (JSON) by what it says of its worker, each field escaped.
        kz.set(path, json.dumps({"version": "0", "node": "alpha", "pid": 4242,
                                 "host": "h\n" + forged, "start": "2026-01-01T00:00:00.000Z",
                                 "jobs": []}).encode())
        p = self.worker(cfg, name="json")
        p.wait_log(r"is registered by another session", timeout=30)
        self.assertEqual(p.wait(timeout=30), 1)
        text = p.log_text()
        self.assertNotIn("\n" + forged, text, "a forged line in our log")
        self.assertRegex(text, r'\(0x[0-9a-f]+: host "h\\n2026-01-01T00:.*\.\.\..*/workers/'
                               r'alpha", pid 4242, started "2026-01-01T00:00:00\.000Z"\); waiting')

    def test_missing_chroot_exits_as_the_readme_says(self):
        """Item 11: a chroot that does not exist left the worker "not ready" for ever."""
        self.start_zookeeper()
        hosts = self.zk.connect_string + "/nonexistent"
        cfg = self.write_config(name="alpha", hosts=hosts, zookeeper={"session_timeout": "4s"},
                                safety=SAFETY, worker={"allow_root_jobs": True}, jobs={})
        p = self.worker(cfg, name="alpha")
        # README, exit statuses: 1 when ZooKeeper refused the registration.
        self.assertEqual(p.wait(timeout=60), 1)
        self.assertRegex(p.log_text(), r"warn: cannot register .*the chroot of \[zookeeper\] "
                                       r"hosts .*/nonexistent.* does not exist")
        # Once it exists, the same configuration runs.
        self.kazoo().create("/nonexistent")
        p = self.worker(cfg, name="alpha-again")
        p.wait_log(r"registered as", timeout=30)


if __name__ == "__main__":
    lktest.main()

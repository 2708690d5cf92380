#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""The worker's foundation against a real ZooKeeper: registration, a duplicate node id,
starting before ZooKeeper, SIGTERM, a server restart within the session timeout, session
expiry, and `leasekeeper check`."""

import json
import os
import re
import signal
import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

T_MS = 4000  # session timeout used by these tests (tickTime 500 allows 1-10 s)
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}


class WorkerTest(lktest.TestCase):
    def config(self, name="alpha", hosts=None, jobs=None, **kw):
        return self.write_config(name=name, hosts=hosts,
                                 zookeeper={"session_timeout": "%dms" % T_MS},
                                 safety=SAFETY, jobs=jobs, **kw)

    def session_of(self, kz, path):
        stat = kz.exists(path)
        return stat.ephemeralOwner if stat else None

    def test_registers_with_json(self):
        self.start_zookeeper()
        w = self.worker(self.config())
        w.wait_log(r"registered as /leasekeeper/workers/alpha", timeout=20)
        kz = self.kazoo()
        data, stat = kz.get("/leasekeeper/workers/alpha")
        info = json.loads(data)
        self.assertEqual(info["node"], "alpha")
        self.assertEqual(info["pid"], w.pid)
        self.assertEqual(info["jobs"], [])
        self.assertIn("version", info)
        self.assertIn("start", info)
        self.assertNotEqual(stat.ephemeralOwner, 0)
        for d in ("jobs", "workers", "mutex", "semaphore"):
            self.assertIsNotNone(kz.exists("/leasekeeper/" + d), d)

    def test_nested_root_is_created(self):
        self.start_zookeeper()
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s",
                                                         "root": "/a/b/lk"}, safety=SAFETY)
        w = self.worker(cfg)
        w.wait_log(r"registered as /a/b/lk/workers/alpha", timeout=20)
        self.assertIsNotNone(self.kazoo().exists("/a/b/lk/workers/alpha"))

    def test_duplicate_node_id_is_refused(self):
        self.start_zookeeper()
        first = self.worker(self.config("alpha"), name="first")
        first.wait_log(r"registered as", timeout=20)
        # The same node id from another config dir (another "host").
        cfg2 = self.write_config(name="alpha2", zookeeper={"session_timeout": "%dms" % T_MS},
                                 worker={"node_id": "alpha"}, safety=SAFETY)
        t0 = time.monotonic()
        second = self.worker(cfg2, name="second")
        second.wait_log(r"registered by another session", timeout=20)
        rc = second.wait(timeout=T_MS / 1000 + 15)
        elapsed = time.monotonic() - t0
        self.assertNotEqual(rc, 0)
        self.assertRegex(second.log_text(), r"another worker is running with node id \"alpha\"")
        self.assertRegex(second.log_text(), r"give this worker another node_id")
        # It waited about one session timeout for a dead incarnation to expire, no longer.
        self.assertLess(elapsed, T_MS / 1000 + 12)
        self.assertTrue(first.alive(), "the first worker must keep running")
        self.assertEqual(json.loads(self.kazoo().get("/leasekeeper/workers/alpha")[0])["pid"],
                         first.pid)

    def test_restart_after_kill9_waits_for_the_old_session(self):
        self.start_zookeeper()
        cfg = self.config("alpha")
        old = self.worker(cfg, name="old")
        old.wait_log(r"registered as", timeout=20)
        old.kill_group()  # kill -9 main and supervisor: the session is left to expire
        new = self.worker(cfg, name="new")
        new.wait_log(r"registered by another session", timeout=20)
        new.wait_log(r"registered as /leasekeeper/workers/alpha", timeout=T_MS / 1000 + 15)
        self.assertTrue(new.alive())

    def test_restart_over_its_predecessor_waits_out_a_lost_quorum(self):
        """A worker restarted after kill -9 finds its predecessor's node; then the ensemble
        loses its majority for longer than a session timeout (no session can expire, and
        nothing can be read). It must wait and register once the old session has expired,
        not exit 1 (docs/reliability.md, finding 6)."""
        ens = self.start_ensemble(3)
        cfg = self.config("alpha", hosts=ens.connect_string)
        old = self.worker(cfg, name="old")
        old.wait_log(r"registered as", timeout=20)
        old_session = self.session_of(self.kazoo(), "/leasekeeper/workers/alpha")
        old.kill_group()  # kill -9 main and supervisor: the session is left to expire
        old.wait(10)
        new = self.worker(cfg, name="new")
        new.wait_log(r"registered by another session", timeout=20)
        leader = ens.wait_for_leader()
        down = [leader, (leader + 1) % 3]
        for i in down:
            ens.kill(i)
        # Without the majority for twice the old fixed wait (a session timeout and 2 s).
        time.sleep(2 * (T_MS / 1000 + 2))
        self.assertTrue(new.alive(), "the new worker exited during the majority loss:\n" +
                        new.log_text()[-2000:])
        self.assertRegex(new.log_text(), r"our predecessor")
        for i in down:
            ens[i].launch()
        ens.wait_for_leader()
        new.wait_log(r"registered as /leasekeeper/workers/alpha", timeout=T_MS / 1000 + 30)
        self.assertTrue(new.alive())
        self.assertNotEqual(self.session_of(self.kazoo(), "/leasekeeper/workers/alpha"),
                            old_session)
        self.assertEqual(len(re.findall(r"still held by another session", new.log_text())),
                         1, "the wait is logged once")

    def test_a_live_duplicate_is_judged_only_while_connected(self):
        """Another live worker holds our node id and the ensemble loses its majority before
        our wait is over: the wait counts only connected time, so we exit 1 only after the
        ensemble is back, and never during the loss."""
        ens = self.start_ensemble(3)
        first = self.worker(self.config("alpha", hosts=ens.connect_string), name="first")
        first.wait_log(r"registered as", timeout=20)
        cfg2 = self.write_config(name="alpha2", hosts=ens.connect_string,
                                 zookeeper={"session_timeout": "%dms" % T_MS},
                                 worker={"node_id": "alpha"}, safety=SAFETY)
        second = self.worker(cfg2, name="second")
        second.wait_log(r"registered by another session", timeout=20)
        self.assertNotRegex(second.log_text(), r"our predecessor")
        leader = ens.wait_for_leader()
        down = [leader, (leader + 1) % 3]
        for i in down:
            ens.kill(i)
        time.sleep(2 * (T_MS / 1000 + 2))
        self.assertTrue(second.alive(), "exited while nothing could be told:\n" +
                        second.log_text()[-2000:])
        for i in down:
            ens[i].launch()
        ens.wait_for_leader()
        rc = second.wait(timeout=T_MS / 1000 + 60)
        self.assertEqual(rc, 1)
        self.assertRegex(second.log_text(), r"another worker is running with node id \"alpha\"")
        self.assertTrue(first.alive(), "the first worker must keep running")

    def test_started_before_zookeeper(self):
        port = lktest.free_port()
        cfg = self.config("alpha", hosts="127.0.0.1:%d" % port)
        w = self.worker(cfg)
        w.wait_log(r"not connected to 127\.0\.0\.1:%d for \d+ s; still trying" % port, timeout=20)
        self.assertTrue(w.alive())
        self.start_zookeeper(port=port)
        w.wait_log(r"registered as /leasekeeper/workers/alpha", timeout=20)

    def test_sigterm_closes_the_session_at_once(self):
        self.start_zookeeper()
        w = self.worker(self.config("alpha"))
        w.wait_log(r"registered as", timeout=20)
        kz = self.kazoo()
        self.assertIsNotNone(kz.exists("/leasekeeper/workers/alpha"))
        t0 = time.monotonic()
        w.signal(signal.SIGTERM)
        rc = w.wait(timeout=10)
        elapsed = time.monotonic() - t0
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, 2.0, "SIGTERM must end the worker within 2 s")
        # The node is gone now, not after a session timeout.
        self.assertIsNone(kz.exists("/leasekeeper/workers/alpha"))

    def test_sigint_exits_zero(self):
        self.start_zookeeper()
        w = self.worker(self.config("alpha"))
        w.wait_log(r"registered as", timeout=20)
        w.signal(signal.SIGINT)
        self.assertEqual(w.wait(timeout=10), 0)
        self.assertIsNone(self.kazoo().exists("/leasekeeper/workers/alpha"))

    def test_server_restart_keeps_the_session(self):
        zk = self.start_zookeeper()
        w = self.worker(self.config("alpha"))
        w.wait_log(r"registered as", timeout=20)
        kz = self.kazoo()
        owner = self.session_of(kz, "/leasekeeper/workers/alpha")
        kz.lktest_stop()
        # Well inside the 4 s session timeout: SIGTERM stops it in 1-2 s, start ~1 s.
        zk.restart()
        w.wait_log(r"session 0x[0-9a-f]+ reconnected", timeout=20)
        kz = self.kazoo()
        self.assertEqual(self.session_of(kz, "/leasekeeper/workers/alpha"), owner)
        self.assertNotRegex(w.log_text(), r"expired")

    def test_its_own_expired_session_brought_back_is_waited_out(self):
        """Our session expires while main is stopped, and its node comes back under another
        session with our own data (ZooKeeper did this after losing transactions: torture
        seed 6011, where w2 then took itself for another worker and exited 1). The node
        names this very process (its pid and its start): it is waited out, however long,
        and we register once it is gone."""
        self.start_zookeeper()
        w = self.worker(self.config("alpha"))
        w.wait_log(r"registered as", timeout=20)
        kz = self.kazoo()
        path = "/leasekeeper/workers/alpha"
        data = kz.get(path)[0]
        os.kill(w.pid, signal.SIGSTOP)  # the main process only; the server expires it
        try:
            self.wait_until(lambda: kz.exists(path) is None, timeout=T_MS / 1000 + 10,
                            msg="the server did not expire the session")
            kz.create(path, data, ephemeral=True)  # our node, back under another session
        finally:
            os.kill(w.pid, signal.SIGCONT)
        w.wait_log(r"registered by an earlier session of this very process", timeout=20)
        time.sleep(2 * (T_MS / 1000 + 2))  # the wait for another worker's session is over
        self.assertTrue(w.alive(), "took itself for another worker:\n" + w.log_text()[-2000:])
        self.assertNotRegex(w.log_text(), r"another worker is running")
        since = w.mark()
        kz.stop()  # the session that held it ends: the node goes
        w.wait_log(r"registered as /leasekeeper/workers/alpha", timeout=30, since=since)
        self.assertEqual(w.stop(timeout=30), 0)

    def test_expired_session_registers_again(self):
        self.start_zookeeper()
        w = self.worker(self.config("alpha"))
        w.wait_log(r"registered as", timeout=20)
        kz = self.kazoo()
        owner = self.session_of(kz, "/leasekeeper/workers/alpha")
        os.kill(w.pid, signal.SIGSTOP)  # the main process only; the server expires it
        try:
            self.wait_until(lambda: kz.exists("/leasekeeper/workers/alpha") is None,
                            timeout=T_MS / 1000 + 10, msg="the server did not expire the session")
        finally:
            os.kill(w.pid, signal.SIGCONT)
        w.wait_log(r"session 0x[0-9a-f]+ expired; opening a new one", timeout=20)
        w.wait_log(r"registered as /leasekeeper/workers/alpha", timeout=20)
        new_owner = self.session_of(kz, "/leasekeeper/workers/alpha")
        self.assertIsNotNone(new_owner)
        self.assertNotEqual(new_owner, owner)

    def test_auth_makes_our_nodes_ours(self):
        self.start_zookeeper()
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s",
                                                         "auth": "lk:s3cret"}, safety=SAFETY)
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=20)
        from kazoo.exceptions import NoAuthError
        stranger = self.kazoo()
        with self.assertRaises(NoAuthError):
            stranger.get("/leasekeeper/workers/alpha")
        friend = self.kazoo(auth_data=[("digest", "lk:s3cret")])
        self.assertEqual(json.loads(friend.get("/leasekeeper/workers/alpha")[0])["node"], "alpha")
        # status with the same configuration (and so the same credentials) can read it
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([x["znode"] for x in json.loads(r.stdout)["workers"]], ["alpha"])

    def test_check_prints_the_jobs(self):
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:2181",
                                worker={"allow_root_jobs": True},
                                jobs={"backup": {"command": "echo hi", "leases": 2}})
        r = subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration OK", r.stdout)
        self.assertIn("job backup", r.stdout)
        self.assertIn("/leasekeeper/semaphore/backup", r.stdout)

    def test_check_reports_every_error(self):
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:2181",
                                zookeeper={"sesion_timeout": "10s"},
                                worker={"allow_root_jobs": True},
                                jobs={"a": {"command": "true", "leases": 0},
                                      "b": {"comand": "true"}})
        r = subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("configuration OK", r.stdout)
        self.assertRegex(r.stderr, r"worker\.ini:\d+: unknown key \"sesion_timeout\".*"
                                   r"did you mean \"session_timeout\"")
        self.assertRegex(r.stderr, r"jobs\.ini:\d+: .*leases")
        self.assertRegex(r.stderr, r"jobs\.ini:\d+: unknown key \"comand\"")
        self.assertRegex(r.stderr, r"\d+ errors in the configuration")

    def test_run_refuses_a_bad_config(self):
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:2181",
                                safety={"safety_margin": "3s", "kill_grace": "3s"})
        r = subprocess.run([lktest.leasekeeper_bin(), "run", "-c", cfg], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 78)
        self.assertRegex(r.stderr, r"worker\.ini:\d+: .*safety_margin")


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""What an operator meets at the edges of running a cluster, each against a real ZooKeeper:
status of a root that holds no cluster is an error; exec gives up on a ZooKeeper it cannot
reach; a reload that removes a running job unlists it; an [http] listen address that cannot
be bound is refused at start and keeps the old listener at a reload; status shows when a
holder queued and when it took the lease. (Found while operating a cluster, issue 13.)"""

import json
import signal
import socket
import subprocess
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

BIN = lktest.leasekeeper_bin()
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}


def run(*args, timeout=60):
    return subprocess.run([BIN] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)


class OperatingEdgesTest(lktest.TestCase):
    def config(self, name="alpha", jobs=None, **kw):
        return self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                 worker={"allow_root_jobs": True}, jobs=jobs, **kw)

    def test_status_of_a_root_without_a_cluster_is_an_error(self):
        self.start_zookeeper(tick_ms=200)
        cfg = self.config(jobs={"j": {"command": "sleep 600"}})
        self.worker(cfg, name="alpha").wait_log(r"registered as", timeout=30)
        hosts = self.zk.connect_string
        r = run("status", "--zk", hosts)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.kazoo().create("/elsewhere/thing", b"", makepath=True)
        for root in ("/wrong", "/elsewhere"):
            r = run("status", "--zk", hosts, "--root", root)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("no cluster under %s: it has no workers and no jobs" % root, r.stderr)
            self.assertEqual(r.stdout, "")
        r = run("status", "-c", cfg, "--root", "/wrong", "--json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(run("status", "-c", cfg, "--json").returncode, 0)

    def test_exec_gives_up_when_zookeeper_is_unreachable(self):
        port = lktest.free_port()  # nothing listens there
        hosts = "127.0.0.1:%d" % port
        t0 = time.monotonic()
        try:
            r = run("exec", "--zk", hosts, "--session-timeout", "4s", "--safety-margin", "500ms",
                    "--kill-grace", "1s", "x", "--", "true", timeout=90)
        except subprocess.TimeoutExpired:
            self.fail("exec without --timeout kept retrying an unreachable ZooKeeper")
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 69, r.stderr)
        self.assertIn("ZooKeeper unreachable: no session with %s within 15s" % hosts, r.stderr)
        self.assertGreaterEqual(took, 14)  # the connect limit of status, set-leases, logs
        r = run("exec", "--zk", hosts, "--timeout", "2s", "x", "--", "true")
        self.assertEqual(r.returncode, 69, r.stderr)
        self.assertIn("ZooKeeper unreachable: no session with %s within 2s" % hosts, r.stderr)
        self.assertNotIn("no lease", r.stderr)

    def test_reload_removing_a_running_job_unlists_it(self):
        self.start_zookeeper(tick_ms=200)
        jobs = {"gone": {"command": "sleep 600"}, "kept": {"command": "sleep 600"},
                "changed": {"command": "sleep 600"}}
        cfg = self.config(jobs=jobs)
        w = self.worker(cfg, name="alpha")
        w.wait_log(r"registered as", timeout=30)
        w.wait_log(r"job gone: running", timeout=30)
        kz = self.kazoo()
        node = "/leasekeeper/workers/alpha"
        self.assertEqual(sorted(json.loads(kz.get(node)[0])["jobs"]), ["changed", "gone", "kept"])
        mark = w.mark()
        self.config(jobs={"kept": jobs["kept"], "changed": {"command": "sleep 599"}})
        w.signal(signal.SIGHUP)
        w.wait_log(r"reloaded: 2 job\(s\)", since=mark, timeout=30)
        w.wait_log(r"job gone: stopped", since=mark, timeout=30)
        self.wait_until(lambda: sorted(json.loads(kz.get(node)[0])["jobs"]) == ["changed", "kept"],
                        timeout=10, msg="the removed job is still listed")
        time.sleep(1)  # and stays unlisted once the old copies are gone
        self.assertEqual(sorted(json.loads(kz.get(node)[0])["jobs"]), ["changed", "kept"])

    def test_http_listen_that_cannot_be_bound(self):
        self.start_zookeeper(tick_ms=200)
        busy = socket.socket()
        self.addCleanup(busy.close)
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = "127.0.0.1:%d" % busy.getsockname()[1]
        jobs = {"j": {"command": "sleep 600"}}
        # At start: the worker runs its jobs and tries the bind again until the port is free
        # (issue 22: a busy port must not stop a host).
        cfg = self.config(jobs=jobs, http={"listen": taken})
        w = self.worker(cfg, name="refused")
        w.wait_log(r"http: cannot listen on %s \(see above\): the worker runs its jobs" % taken,
                   timeout=30)
        w.wait_log(r"registered as", timeout=30)
        busy.close()
        w.wait_log(r"http: listening on %s after \d+ failed attempt" % taken, timeout=90)
        w.stop(timeout=30)
        self.assertEqual(w.returncode, 0)
        busy = socket.socket()
        self.addCleanup(busy.close)
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = "127.0.0.1:%d" % busy.getsockname()[1]
        # At a reload: the old listener stays, and the worker says so.
        first = "127.0.0.1:%d" % lktest.free_port()
        cfg = self.config(jobs=jobs, http={"listen": first})
        w = self.worker(cfg, name="alpha")
        w.wait_log(r"registered as", timeout=30)

        def health(addr):
            return urllib.request.urlopen("http://%s/health" % addr, timeout=10).status

        self.assertEqual(health(first), 200)
        mark = w.mark()
        self.config(jobs=jobs, http={"listen": taken})
        w.signal(signal.SIGHUP)
        w.wait_log(r"reload: \[http\] listen = %s cannot be served \(see above\): still "
                   r"listening on %s" % (taken, first), since=mark, timeout=30)
        self.assertEqual(health(first), 200)
        # A new address that can be bound replaces the old one.
        second = "127.0.0.1:%d" % lktest.free_port()
        mark = w.mark()
        self.config(jobs=jobs, http={"listen": second})
        w.signal(signal.SIGHUP)
        w.wait_log(r"http: listening on %s" % second, since=mark, timeout=30)
        self.assertEqual(health(second), 200)
        with self.assertRaises(OSError):
            health(first)
        w.stop(timeout=30)
        self.assertEqual(w.returncode, 0)

    def test_status_shows_queued_since_and_holder_since(self):
        self.start_zookeeper(tick_ms=200)
        jobs = {"hold": {"command": "sleep 600"}}
        alpha = self.worker(self.config("alpha", jobs=jobs), name="alpha")
        alpha.wait_log(r"job hold: running", timeout=30)
        beta_cfg = self.config("beta", jobs=jobs)
        beta = self.worker(beta_cfg, name="beta")
        beta.wait_log(r"registered as", timeout=30)
        time.sleep(2)  # beta waits in the queue
        alpha.stop(timeout=30)
        beta.wait_log(r"job hold: running", timeout=30)

        def holder():
            r = run("status", "-c", beta_cfg, "--json")
            job = [j for j in json.loads(r.stdout)["jobs"] if j["name"] == "hold"][0]
            h = job["holders"]
            return h[0] if len(h) == 1 and "held_since" in h[0] else None

        h = self.wait_until(holder, timeout=10, msg="no held_since on the holder's node")
        self.assertEqual(h["node"], "beta")

        def ms(stamp):
            return time.mktime(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + \
                int(stamp[20:23]) / 1000

        self.assertGreaterEqual(ms(h["held_since"]) - ms(h["since"]), 1.5, h)
        r = run("status", "-c", beta_cfg)
        self.assertIn("queued since %s, holder since %s" % (h["since"], h["held_since"]),
                      r.stdout)


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=400 split
"""The cluster-wide controls against a real ZooKeeper and three workers: pause and resume
(across a worker restart), drain and undrain of the holder of a @continuous job (a hand-over
with no overlap, no new lease until undrain), forget (refused while a live worker carries the
job)."""

import json
import os
import urllib.request
import subprocess
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NAMES = ("alpha", "beta", "gamma")
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}

read = lktest.read_text


class ControlTest(lktest.TestCase):
    def start(self, name, jobs, http=None):
        extra = {}
        if http is not None:
            extra["http"] = {"listen": "127.0.0.1:%d" % http}
        cfg = self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                worker={"allow_root_jobs": True}, jobs=jobs, extra=extra)
        p = self.worker(cfg, name="%s-%d" % (name, time.monotonic_ns()))
        p.wait_log(r"registered as", timeout=30)
        return cfg, p

    def cli(self, *args):
        r = subprocess.run([lktest.leasekeeper_bin()] + list(args), capture_output=True,
                           text=True, timeout=120)
        return r

    def ok(self, *args):
        r = self.cli(*args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def ticks(self, path):
        return [line.split()[0] for line in read(path).splitlines() if line.strip()]

    def runs(self, kz, job):
        path = "/leasekeeper/jobs/%s/runs" % job
        if not kz.exists(path):
            return []
        return [json.loads(kz.get(path + "/" + c)[0]) for c in sorted(kz.get_children(path))]

    def test_pause_and_resume_across_a_worker_restart(self):
        self.start_zookeeper()
        out = self.path("ticks.txt")
        jobs = {"tick": {"command": 'echo "$LEASEKEEPER_TICK $LEASEKEEPER_NODE" >> %s' % out,
                         "schedule": "@every 1s", "start_deadline": "800ms", "history": 200}}
        procs = {}
        for n in NAMES:
            cfg, procs[n] = self.start(n, jobs)
        zk = "--zk=" + self.zk.connect_string
        self.wait_until(lambda: len(self.ticks(out)) >= 3, timeout=60)
        t_pause = int(time.time()) + 2  # ticks from here on come after the pause
        r = self.ok("pause", zk, "--by", "ops@test", "tick")
        self.assertIn("paused by ops@test", r.stdout)
        for n in NAMES:
            procs[n].wait_log(r"job tick: paused cluster-wide", timeout=20)
        # A run already under way when the pause came may still end: judge from here on.
        time.sleep(1.5)
        before = len(self.ticks(out))
        # A worker restarted meanwhile starts paused: it reads the pause at start-up.
        procs["beta"].stop()
        cfg, procs["beta"] = self.start("beta", jobs)
        procs["beta"].wait_log(r"job tick: paused cluster-wide", timeout=20)
        time.sleep(4)
        self.assertEqual(len(self.ticks(out)), before, "ticks ran while paused")
        kz = self.kazoo()
        paused = [r for r in self.runs(kz, "tick") if r["reason"] == "paused"]
        self.assertGreaterEqual(len(paused), 3)
        self.assertEqual(len({r["tick"] for r in paused}), len(paused), "a tick recorded twice")
        # On a busy machine a tick before the pause may be missed; none after it is.
        self.assertEqual([r for r in self.runs(kz, "tick")
                          if r["reason"] == "missed" and r["tick"] >= t_pause], [])
        st = json.loads(self.ok("status", "-c", cfg, "--json").stdout)
        job = [j for j in st["jobs"] if j["name"] == "tick"][0]
        self.assertEqual(job["paused"]["by"], "ops@test")
        text = self.ok("status", "-c", cfg).stdout
        self.assertIn("PAUSED by ops@test", text)
        # A paused job shows "paused", not a next tick it will not run.
        self.assertRegex(text, r"schedule @every 1s, paused\n")
        self.assertNotIn("next tick", text)
        # The record keeps its lease count and lock through the pause.
        rec = json.loads(kz.get("/leasekeeper/jobs/tick")[0])
        self.assertEqual(rec["leases"], 1)
        self.ok("resume", zk, "tick")
        self.wait_until(lambda: len(self.ticks(out)) >= before + 3, timeout=30,
                        msg="no ticks after resume")
        ticks = self.ticks(out)
        self.assertEqual(len(ticks), len(set(ticks)), "a tick ran twice")
        self.assertNotIn("paused", kz.get("/leasekeeper/jobs/tick")[0].decode())
        # Unknown job: exit 1.
        self.assertEqual(self.cli("pause", zk, "nosuchjob").returncode, 1)

    def test_drain_hands_a_continuous_job_over_and_takes_no_lease_until_undrain(self):
        self.start_zookeeper()
        rec = self.record_file()
        procs, cfgs, ports = {}, {}, {}
        for n in NAMES:
            ports[n] = lktest.free_port()
            cfgs[n], procs[n] = self.start(
                n, {"work": {"command": rec.command(n), "restart_backoff": "1s"}},
                http=ports[n])
        holder = rec.wait_for("start", timeout=30)[0].who
        # Drain the holder by its own configuration: NODE defaults to its node_id.
        t0 = time.monotonic()
        r = self.ok("drain", "-c", cfgs[holder], "--wait", "--json")
        waited = time.monotonic() - t0
        self.assertEqual(json.loads(r.stdout)["leases_held"], 0)
        nxt = rec.wait_for("start", count=2, timeout=30)[1]
        self.assertNotEqual(nxt.who, holder)
        print("\ndrain --wait returned after %.2f s" % waited)
        # The drained worker keeps its session and says so, in ZooKeeper, /status, /metrics.
        kz = self.kazoo()
        node = json.loads(kz.get("/leasekeeper/workers/" + holder)[0])
        self.assertTrue(node["drained"])
        self.assertTrue(procs[holder].alive)
        st = json.loads(self.ok("status", "-c", cfgs[holder], "--json").stdout)
        self.assertTrue([w for w in st["workers"] if w["znode"] == holder][0]["drained"])
        status = json.loads(urllib.request.urlopen(
            "http://127.0.0.1:%d/status" % ports[holder], timeout=10).read())
        self.assertTrue(status["drained"])
        metrics = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % ports[holder],
                                         timeout=10).read().decode()
        self.assertIn("leasekeeper_worker_drained 1\n", metrics)
        # The others fail in turn (kill the new holder's runs): the drained one never takes it.
        second = nxt.who
        procs[second].stop()
        third = rec.wait_for("start", count=3, timeout=30)[2].who
        self.assertNotIn(third, (holder, second))
        procs[third].stop()
        time.sleep(3)
        self.assertEqual(rec.starts(holder)[1:], [], "a drained worker took a lease")
        self.assertEqual(len(rec.starts()), 3)
        # Undrain: it takes the lease again.
        self.ok("undrain", "-c", cfgs[holder])
        rec.wait_for("start", count=4, timeout=30)
        self.assertEqual(rec.starts()[3].who, holder)
        rep = rec.check(leases=1)
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))
        self.assertNotIn("drained", kz.get("/leasekeeper/workers/" + holder)[0].decode())

    def test_drain_survives_a_restart(self):
        self.start_zookeeper()
        rec = self.record_file()
        zk = "--zk=" + self.zk.connect_string
        # No live worker has that name yet: refused (a typo), unless --force.
        r = self.cli("drain", zk, "alpha")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('no live worker is named "alpha"', r.stderr)
        self.assertIsNone(self.kazoo().exists("/leasekeeper/drain/alpha"))
        # With --json the same refusal is one JSON object on stderr, same exit status; its
        # "error" is the refusal, not the note on credentials printed before it.
        r = self.cli("drain", zk, "--json", "alpha")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        err = json.loads(r.stderr)
        self.assertEqual((err["command"], err["exit_status"]), ("drain", 1))
        self.assertIn('no live worker is named "alpha"', err["error"])
        self.assertIsNone(self.kazoo().exists("/leasekeeper/drain/alpha"))
        self.ok("drain", zk, "--force", "alpha")
        # Repeated, a control whose effect is in place exits 0 and says so.
        self.assertIn("already drained", self.ok("drain", zk, "--force", "alpha").stdout)
        cfg, p = self.start("alpha", {"work": {"command": rec.command("alpha")}})
        p.wait_log(r"drained: taking no new lease", timeout=20)
        time.sleep(2)
        self.assertEqual(rec.starts(), [])
        self.ok("undrain", zk, "alpha")
        self.assertIn("not drained", self.ok("undrain", zk, "alpha").stdout)
        self.assertFalse(json.loads(self.ok("undrain", zk, "--json", "alpha").stdout)["changed"])
        rec.wait_for("start", who="alpha", timeout=30)
        # logs: a job the cluster knows with no run recorded yet (an @continuous run that has
        # not ended) exits 0 and says so; a misspelt job exits 1 and says that.
        r = self.cli("logs", zk, "work")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("job work has no run recorded yet", r.stderr)
        r = self.cli("logs", zk, "--json", "work")
        self.assertEqual((r.returncode, json.loads(r.stdout)), (0, []), r.stderr)
        self.assertIn("no run recorded yet", json.loads(r.stderr)["warning"])
        r = self.cli("logs", zk, "wrok")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn('the cluster knows no job "wrok"', r.stderr)
        r = self.cli("logs", zk, "--json", "wrok")
        self.assertEqual((r.returncode, json.loads(r.stderr)["exit_status"]), (1, 1), r.stderr)
        self.assertIn('knows no job "wrok"', json.loads(r.stderr)["error"])

    def test_forget_refused_while_carried(self):
        self.start_zookeeper()
        out = self.path("out.txt")
        jobs = {"gone": {"command": "echo x >> %s" % out, "schedule": "@every 1s"}}
        cfg, p = self.start("alpha", jobs)
        self.wait_until(lambda: os.path.exists(out) and read(out), timeout=30)
        kz = self.kazoo()
        self.wait_until(lambda: self.runs(kz, "gone"), timeout=20)
        zk = "--zk=" + self.zk.connect_string
        r = self.cli("forget", zk, "gone")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("carried by live worker(s) \"alpha\"", r.stderr)
        self.assertIsNotNone(kz.exists("/leasekeeper/jobs/gone"))
        # Repeated pause and resume exit 0 and say the effect was in place already.
        self.assertIn("paused by", self.ok("pause", zk, "gone").stdout)
        self.assertIn("already paused", self.ok("pause", zk, "gone").stdout)
        self.assertFalse(json.loads(self.ok("pause", zk, "--json", "gone").stdout)["changed"])
        self.assertTrue(json.loads(self.ok("resume", zk, "--json", "gone").stdout)["changed"])
        self.assertIn("not paused", self.ok("resume", zk, "gone").stdout)
        self.assertFalse(json.loads(self.ok("resume", zk, "--json", "gone").stdout)["changed"])
        p.stop()
        r = self.ok("forget", zk, "gone", "--json")
        self.assertTrue(json.loads(r.stdout)["forgotten"])
        self.assertIsNone(kz.exists("/leasekeeper/jobs/gone"))
        # Repeated, a control whose effect is in place exits 0 and says so.
        r = self.ok("forget", zk, "gone", "--json")
        self.assertFalse(json.loads(r.stdout)["forgotten"])
        r = self.ok("forget", zk, "gone")
        self.assertIn("nothing to forget", r.stdout)


if __name__ == "__main__":
    lktest.main()

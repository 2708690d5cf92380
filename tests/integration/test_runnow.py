#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""run-now against a real ZooKeeper and three workers: a cron job run once between its ticks
(one manual record with "by", on one worker), --wait's exit status (the run's, 128 + its
signal), two requests at once are two runs, a paused job needs --force, a job no live worker
carries times out with exit 75 and its request is withdrawn, an @continuous copy restarted."""

import json
import os
import subprocess
import threading
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NAMES = ("alpha", "beta", "gamma")
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
# Once a year, at a time no test runs: every run seen is a manual one.
YEARLY = "0 3 1 1 *"

read = lktest.read_text


class RunNowTest(lktest.TestCase):
    def start(self, name, jobs):
        cfg = self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                worker={"allow_root_jobs": True}, jobs=jobs)
        p = self.worker(cfg, name="%s-%d" % (name, time.monotonic_ns()))
        p.wait_log(r"registered as", timeout=30)
        return cfg, p

    def cluster(self, jobs):
        self.start_zookeeper()
        procs = {}
        for n in NAMES:
            _, procs[n] = self.start(n, jobs)
        return procs

    def cli(self, *args):
        return subprocess.run([lktest.leasekeeper_bin(), "run-now",
                               "--zk=" + self.zk.connect_string] + list(args),
                              capture_output=True, text=True, timeout=120)

    def runs(self, kz, job):
        path = "/leasekeeper/jobs/%s/runs" % job
        if not kz.exists(path):
            return []
        return [json.loads(kz.get(path + "/" + c)[0]) for c in sorted(kz.get_children(path))]

    def lines(self, path):
        return read(path).split() if os.path.exists(path) else []

    def wait_record(self, kz, job):
        """Wait until every worker's job record is in: a worker creates it once registered."""
        self.wait_until(lambda: kz.exists("/leasekeeper/jobs/%s/requests" % job), timeout=30)

    def test_a_cron_job_between_ticks_runs_once_and_says_who_asked(self):
        out = self.path("out.txt")
        self.cluster({"nightly": {"command": 'echo "$LEASEKEEPER_NODE" >> %s' % out,
                                  "schedule": YEARLY},
                      "broken": {"command": "exit 7", "schedule": YEARLY},
                      "signalled": {"command": "kill -TERM $$", "schedule": YEARLY}})
        kz = self.kazoo()
        self.wait_record(kz, "nightly")
        t0 = time.monotonic()
        r = self.cli("--wait", "--by", "ops@test", "--json", "nightly")
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(res["result"]["outcome"], "ok")
        self.assertIn(res["node"], NAMES)
        # Exactly once, on the worker that took it, even though all three saw the request.
        time.sleep(max(2.0, took))
        self.assertEqual(self.lines(out), [res["node"]])
        manual = [x for x in self.runs(kz, "nightly") if x["reason"] == "manual"]
        self.assertEqual(len(manual), 1, self.runs(kz, "nightly"))
        self.assertEqual(manual[0]["by"], "ops@test")
        self.assertEqual(manual[0]["node"], res["node"])
        self.assertEqual(manual[0]["outcome"], "ok")
        self.assertEqual(manual[0]["request"], res["request"])
        self.assertNotIn("tick", manual[0])
        node = json.loads(kz.get("/leasekeeper/jobs/nightly/requests/" + res["request"])[0])
        self.assertEqual(node["claimed"]["node"], res["node"])
        self.assertEqual(node["result"]["exit_status"], 0)
        print("\nrun-now --wait of a short job: %.2f s" % took)

        # --wait exits with the run's status, or 128 + its signal; no retry of a manual run.
        r = self.cli("--wait", "broken")
        self.assertEqual(r.returncode, 7, r.stdout + r.stderr)
        self.assertIn("exit status 7", r.stdout)
        r = self.cli("--wait", "signalled")
        self.assertEqual(r.returncode, 128 + 15, r.stdout + r.stderr)
        time.sleep(1)
        self.assertEqual(len(self.runs(kz, "broken")), 1)

        # Two requests at once are two runs (not coalesced).
        results = []

        def one():
            results.append(self.cli("--wait", "--json", "nightly"))
        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for x in results:
            self.assertEqual(x.returncode, 0, x.stdout + x.stderr)
        reqs = {json.loads(x.stdout)["request"] for x in results}
        self.assertEqual(len(reqs), 2)
        time.sleep(1)
        self.assertEqual(len(self.lines(out)), 3)
        manual = [x for x in self.runs(kz, "nightly") if x["reason"] == "manual"]
        self.assertEqual(sorted(x["request"] for x in manual[1:]), sorted(reqs))

    def test_ticks_go_on_around_a_manual_run(self):
        out = self.path("out.txt")
        self.cluster({"tick": {"command": 'echo "${LEASEKEEPER_TICK:-manual}" >> %s' % out,
                               "schedule": "@every 2s", "start_deadline": "1500ms",
                               "history": 100}})
        kz = self.kazoo()
        self.wait_until(lambda: len(self.lines(out)) >= 2, timeout=60)
        r = self.cli("--wait", "--by", "ops@test", "tick")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        before = len(self.lines(out))
        self.wait_until(lambda: len(self.lines(out)) >= before + 2, timeout=30,
                        msg="ticks after the manual run")
        lines = self.lines(out)
        self.assertEqual(lines.count("manual"), 1, lines)
        ticks = [x for x in lines if x != "manual"]
        self.assertEqual(len(ticks), len(set(ticks)), "a tick ran twice")
        manual = [x for x in self.runs(kz, "tick") if x["reason"] == "manual"]
        self.assertEqual(len(manual), 1)
        self.assertEqual(manual[0]["by"], "ops@test")

    def test_a_pause_while_a_taken_request_waits_for_the_lease(self):
        """A request taken while the lease is held elsewhere, then a pause: the manual run
        still runs once the lease comes (as a paused job's run-now does), its request gets
        its result, and after resume every tick is claimed and run once, none as manual.
        Hooks follow the outcome: the manual run's ok runs on_success, and the paused ticks
        run no hook."""
        out, hooks = self.path("out.txt"), self.path("hooks.txt")
        self.cluster({"hold": {
            "command": 'echo "$LEASEKEEPER_NODE ${LEASEKEEPER_TICK:-manual}" >> %s' % out,
            # A short start_deadline: while exec holds the lease, each tick gives up soon and
            # the job spends its time waiting, free to take the request (a job contending
            # for a tick's lease takes none), however slow the machine.
            "schedule": "@every 2s", "history": 200, "start_deadline": "300ms",
            "on_success": 'echo "success $LEASEKEEPER_OUTCOME" >> %s' % hooks,
            "on_failure": 'echo "failure $LEASEKEEPER_OUTCOME" >> %s' % hooks}})
        kz = self.kazoo()
        self.wait_record(kz, "hold")

        def lines():
            return read(out).splitlines() if os.path.exists(out) else []
        held = self.path("held")
        x = self.leasekeeper("exec", "--zk", self.zk.connect_string, "--node-id", "x", "hold",
                             "--", "/bin/sh", "-c", "touch %s; exec sleep 300" % held,
                             name="exec-x")
        self.wait_until(lambda: os.path.exists(held), timeout=60, msg="exec never held it")
        n_before = len(lines())
        r = self.cli("--timeout", "60s", "--json", "--by", "ops@test", "hold")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        req = json.loads(r.stdout)["request"]
        zk = "--zk=" + self.zk.connect_string
        subprocess.run([lktest.leasekeeper_bin(), "pause", zk, "hold"], check=True,
                       capture_output=True, timeout=60)
        # The pause has reached the workers once a tick is recorded paused.
        self.wait_until(lambda: any(x.get("outcome") == "paused" for x in self.runs(kz, "hold")),
                        timeout=30, msg="no tick recorded paused")
        time.sleep(1.0)
        x.stop(timeout=10)  # the lease is free: the taken request's run goes
        path = "/leasekeeper/jobs/hold/requests/" + req
        self.wait_until(lambda: "result" in json.loads(kz.get(path)[0]), timeout=30,
                        msg="the taken request never got its result")
        node = json.loads(kz.get(path)[0])
        self.assertEqual(node["result"]["outcome"], "ok", node)
        manual = [x for x in self.runs(kz, "hold") if x["reason"] == "manual"]
        self.assertEqual(len(manual), 1, manual)
        self.assertEqual(manual[0]["request"], req)
        self.assertEqual([l for l in lines()[n_before:] if "manual" in l],
                         ["%s manual" % manual[0]["node"]])
        # Resume: ticks again, each claimed and run once, none taken for a manual run.
        subprocess.run([lktest.leasekeeper_bin(), "resume", zk, "hold"], check=True,
                       capture_output=True, timeout=60)
        n_resumed = len(lines())
        self.wait_until(lambda: len(lines()) >= n_resumed + 3, timeout=60,
                        msg="no ticks after resume")
        after = lines()[n_resumed:]
        self.assertNotIn("manual", " ".join(after))
        ticks = [l.split()[1] for l in lines() if not l.endswith("manual")]
        self.assertEqual(len(ticks), len(set(ticks)), "a tick ran twice")
        self.assertEqual(len([x for x in self.runs(kz, "hold") if x["reason"] == "manual"]), 1)
        # Hooks by outcome: on_success for the manual run (and the ticks), never on_failure.
        self.wait_until(lambda: os.path.exists(hooks) and "success ok" in read(hooks),
                        timeout=30, msg="no on_success")
        time.sleep(1.0)
        self.assertNotIn("failure", read(hooks))

    def test_paused_needs_force_and_nobody_carrying_times_out(self):
        out = self.path("out.txt")
        self.cluster({"nightly": {"command": 'echo "$LEASEKEEPER_NODE" >> %s' % out,
                                  "schedule": YEARLY}})
        kz = self.kazoo()
        self.wait_record(kz, "nightly")
        zk = "--zk=" + self.zk.connect_string
        subprocess.run([lktest.leasekeeper_bin(), "pause", zk, "nightly"], check=True,
                       capture_output=True, timeout=60)
        r = self.cli("nightly")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("--force", r.stderr)
        self.assertEqual(kz.get_children("/leasekeeper/jobs/nightly/requests"), [])
        r = self.cli("--wait", "--force", "nightly")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(self.lines(out)), 1)
        # Unknown to the cluster: exit 1, nothing created.
        self.assertEqual(self.cli("nosuchjob").returncode, 1)
        # Known to the cluster, but no live worker carries it: withdrawn after --timeout.
        kz.create("/leasekeeper/jobs/ghost", b'{"leases": 1}')
        t0 = time.monotonic()
        r = self.cli("--timeout", "2s", "--wait", "ghost")
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("no worker took", r.stderr)
        self.assertGreaterEqual(took, 2.0)
        self.assertEqual(kz.get_children("/leasekeeper/jobs/ghost/requests"), [])

    def test_a_continuous_copy_is_restarted(self):
        rec = self.record_file()
        self.start_zookeeper()
        for n in NAMES:
            self.start(n, {"work": {"command": rec.command(n), "restart_backoff": "5s"}})
        holder = rec.wait_for("start", timeout=30)[0].who
        r = self.cli("--wait", "--by", "ops@test", "--json", "work")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(res["result"]["outcome"], "restarted")
        self.assertEqual(res["node"], holder)
        # The new copy started at once (not after restart_backoff), on the same worker.
        starts = rec.wait_for("start", count=2, timeout=10)
        self.assertEqual([s.who for s in starts[:2]], [holder, holder])
        kz = self.kazoo()
        stopped = self.wait_until(lambda: [x for x in self.runs(kz, "work")
                                           if x.get("by") == "ops@test"], timeout=10)
        self.assertEqual(stopped[0]["outcome"], "stopped")
        self.assertEqual(stopped[0]["request"], res["request"])
        rep = rec.check(leases=1)
        self.assertEqual(rep.total, 0, "\n".join(rep.violations[:10]))


if __name__ == "__main__":
    lktest.main()

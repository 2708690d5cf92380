#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Containment: each run in a cgroup v2 of its own (docs/safety.md).

1. A command that exits and leaves a setsid daemon behind (one that ignores SIGTERM): the
   run, and so the lease, ends only when the daemon is gone; the next holder starts after.
2. A worker SIGKILLed (main and supervisor) while its run's setsid daemon lives, then
   started again: the old run's cgroup is emptied and removed before the worker contends.
3. The containment mode in /metrics, the worker's /status and `leasekeeper status`, and each
   run's CPU time (cpu.stat of its cgroup, there without any controller) in its run record,
   `status`, /status and /metrics: a run whose child in a session of its own burns 0.4 s of CPU is
   charged at least that.
4. `exec` runs its command in a cgroup of its own too (leasekeeper-exec-<pid>), which is
   gone when exec ends.

Needs root and a cgroup v2 hierarchy; without them the tests say NOT RUN and are skipped.
The jobs run lk-record --daemon HB_FILE: a daemon that writes a heartbeat every 20 ms.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest


class ContainmentTest(lktest.TestCase):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or lktest.cgroup_mount() is None:
            self.skipTest("NOT RUN: needs root and a cgroup v2 hierarchy")
        self.hb = self.path("heartbeats")
        self.addCleanup(self.kill_daemons)
        self.start_zookeeper()
        self.rec = self.record_file()

    def kill_daemons(self):
        for pid in lktest.heartbeats(self.hb):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def config(self, name, **job):
        return self.write_config(name=name, worker={"allow_root_jobs": True,
                                                    "cgroups": "required"},
                                 jobs={"orphan": dict({"restart_backoff": "1s"}, **job)})

    def test_lease_held_until_the_setsid_daemon_is_gone(self):
        for n in ("w1", "w2"):
            cmd = self.rec.command(n, hold_ms=300, exit=1, daemon=self.hb)
            self.worker(self.config(n, command=cmd, max_failures=1, kill_grace="2s"),
                        name=n)
        # Each run fails at once (after a cool-down the other worker takes over).
        self.wait_until(lambda: len({s.who for s in self.rec.starts()}) == 2, timeout=60,
                        msg="the second worker never ran the job")
        time.sleep(0.5)  # a daemon that outlived its run beats on meanwhile
        starts = sorted(self.rec.starts(), key=lambda s: s.t_ns)
        first, second = starts[0], [s for s in starts if s.who != starts[0].who][0]
        beats = {d: v for d, v in lktest.heartbeats(self.hb).items() if v[1] == first.pid}
        self.assertEqual(len(beats), 1, "the first run started one daemon")
        (_, _, born, last), = beats.values()
        ended = [r for r in self.rec.records() if r.kind == "end" and r.pid == first.pid][0]
        self.assertLess(last, second.t_ns, "the next run started while the daemon lived: "
                        "%.0f ms of overlap" % ((last - second.t_ns) / 1e6))
        # The daemon outlived its command by the kill grace, and the lease was held meanwhile.
        self.assertGreater(last - ended.t_ns, 1.5e9, "the daemon did not live on (test broken)")
        rep = self.rec.check(leases=1)
        self.assertEqual(rep.flock_overlaps, 0, "\n".join(rep.violations[:5]))
        sys.stderr.write("\ncontainment: daemon beat %.0f ms after its command ended; next "
                         "run %.0f ms after its last beat\n"
                         % ((last - ended.t_ns) / 1e6, (second.t_ns - last) / 1e6))

    def test_sigkilled_worker_cleans_up_before_contending(self):
        cfg = self.config("solo", command=self.rec.command("solo", daemon=self.hb))
        w = self.worker(cfg, name="solo-1")
        self.rec.wait_for("start", timeout=30)
        self.wait_until(lambda: lktest.heartbeats(self.hb), timeout=10, msg="no daemon")
        folder = lktest.cgroup_folder("solo", self.path("solo", "state"))
        runs = [d for d in os.listdir(folder) if d.startswith("run-")]
        self.assertEqual(len(runs), 1, "one run cgroup under %s" % folder)
        sv = int(w.wait_log(r"supervisor pid (\d+)").group(1))
        os.kill(sv, signal.SIGKILL)
        os.kill(w.pid, signal.SIGKILL)
        time.sleep(0.5)
        (daemon, (_, _, _, last)), = lktest.heartbeats(self.hb).items()
        self.assertGreater(last, time.monotonic_ns() - 200e6, "the daemon died with its "
                           "worker (test broken: it must outlive both processes)")
        w2 = self.worker(cfg, name="solo-2")
        self.rec.wait_for("start", count=2, timeout=60)
        new = sorted(self.rec.starts(), key=lambda s: s.t_ns)[-1]
        time.sleep(0.5)  # an old daemon still alive beats on meanwhile
        (_, _, _, last), = [v for d, v in lktest.heartbeats(self.hb).items() if d == daemon]
        self.assertLess(last, new.t_ns, "the old daemon still ran when the job started again")
        log = w2.log_text()
        removed = log.find("removed 1 cgroup(s) left by a previous run")
        acquired = log.find("lease acquired")
        self.assertGreaterEqual(removed, 0, "the old cgroup was not removed")
        self.assertLess(removed, acquired, "the worker contended before its clean-up")
        self.assertFalse(lktest.pid_alive(daemon))

    def test_containment_and_cpu_time_in_status_and_metrics(self):
        port = lktest.free_port()
        # The leader waits for a child in a session of its own that burns 0.4 s of CPU.
        burn = ('setsid /usr/bin/python3 -c "import time; t = time.process_time(); '
                'any(time.process_time() - t >= 0.4 for _ in iter(int, 1))" & wait')
        cfg = self.write_config(name="acct", worker={"allow_root_jobs": True,
                                                     "cgroups": "required"},
                                http={"listen": "127.0.0.1:%d" % port},
                                jobs={"burn": {"command": burn, "restart_backoff": "5m"}})
        w = self.worker(cfg, name="acct")
        w.wait_log(r"registered as", timeout=30)

        def get(path):
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                        timeout=30) as r:
                return r.read().decode()

        self.wait_until(lambda: w.log_text().count("run ended") >= 1, timeout=60,
                        msg="the run never ended")
        metrics = get("/metrics")
        self.assertIn('leasekeeper_containment{mode="cgroup"} 1', metrics)
        cpu = float(re.search(r'^leasekeeper_job_cpu_seconds_total\{job_name="burn"\} (\S+)$',
                              metrics, re.M).group(1))
        self.assertGreaterEqual(cpu, 0.4, "the grandchild's CPU time was not charged")
        self.assertLess(cpu, 30)
        self.assertIn('leasekeeper_job_oom_kills_total{job_name="burn"} 0', metrics)
        self.check_metrics(metrics)
        st = json.loads(get("/status"))
        self.assertEqual(st["containment"], "cgroup")
        job = [j for j in st["jobs"] if j["name"] == "burn"][0]
        self.assertGreaterEqual(job["last_cpu_usec"], 400000)
        self.assertEqual(job["ooms"], 0)
        # The run record in ZooKeeper, through `leasekeeper status`.
        run = self.last_run(cfg, "burn")
        self.assertEqual(run["reason"], "ok")
        self.assertGreaterEqual(run["cpu_usec"], 400000)
        # memory.peak needs the memory controller: where it is missing, not known (not 0)
        self.assertTrue(run.get("memory_peak") is None or run["memory_peak"] > 0)
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg],
                           capture_output=True, text=True, timeout=60)
        self.assertRegex(r.stdout, r"runs contained by cgroup")
        self.assertRegex(r.stdout, r"ok +acct +exit 0, cpu 0\.[4-9]\d\d s|ok +acct +exit 0, "
                         r"cpu [1-9]")
        sys.stderr.write("\ncontainment: the run was charged %.3f s of CPU\n" % cpu)

    def test_exec_runs_in_a_cgroup(self):
        out = self.path("exec-cgroup")
        r = subprocess.run([lktest.leasekeeper_bin(), "exec", "--zk", self.zk.connect_string,
                            "-v", "solo", "--", "/bin/sh", "-c", "cat /proc/self/cgroup > " + out],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        own = [l[3:].strip() for l in lktest.read_text(out).splitlines() if l.startswith("0::")]
        self.assertEqual(len(own), 1)
        self.assertRegex(own[0], r"/leasekeeper-exec-\d+/run-1$")
        self.assertRegex(r.stderr, r"the command used [\d.]+ s of CPU")
        folder = os.path.dirname(lktest.cgroup_mount() + own[0])
        self.assertFalse(os.path.exists(folder), "exec left its cgroup folder behind")


if __name__ == "__main__":
    lktest.main()

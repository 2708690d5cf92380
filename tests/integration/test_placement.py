#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=240 split
"""Placement and spreading against a real ZooKeeper: worker labels and job constraints (a
job runs only where it matches; registration nodes, status and reload say so; a job that no
live worker can run is reported), and jitter: every worker, one of them with its clock 3 s
behind, agrees on the shifted ticks and runs each exactly once. H is checked through `next`
against the documented hash (its ticks are minutes apart: too slow to run here)."""

import json
import os
import re
import subprocess
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
M64 = (1 << 64) - 1


def fnv1a(name):
    """docs/schedules.md: FNV-1a, 64 bits, of the job's name."""
    h = 0xcbf29ce484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001b3) & M64
    return h


def mix(seed, k):
    """docs/schedules.md: the SplitMix64 finaliser of seed + k."""
    z = (seed + k + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


class PlacementTest(lktest.TestCase):
    def config(self, name, jobs, labels=None, port=None):
        worker = {"allow_root_jobs": True}
        if labels is not None:
            worker["labels"] = labels
        http = {"listen": "127.0.0.1:%d" % port} if port else None
        return self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                 worker=worker, jobs=jobs, http=http)

    def start(self, name, jobs, labels=None, env=None, port=None):
        p = self.worker(self.config(name, jobs, labels, port), name=name, env=env)
        p.wait_log(r"registered as", timeout=30)
        return p

    def runs(self, kz, job):
        path = "/leasekeeper/jobs/%s/runs" % job
        if not kz.exists(path):
            return []
        return [json.loads(kz.get(path + "/" + c)[0]) for c in sorted(kz.get_children(path))]

    def status(self, config):
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", config, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        return out, {j["name"]: j for j in out["jobs"]}

    def test_constraints_place_jobs_and_status_reports_the_unrunnable(self):
        self.start_zookeeper(tick_ms=200)
        jobs = {
            "only-a": {"command": "true", "schedule": "@every 1s", "constraint": "zone=a",
                       "history": 100},
            "batch": {"command": "true", "schedule": "@every 1s",
                      "constraint": "role=batch, zone!=c", "history": 100},
            "nowhere": {"command": "true", "schedule": "@every 1s", "constraint": "zone=d"},
        }
        labels = {"a": "zone=a, role=batch", "b": "zone=b, role=batch", "c": "zone=c, role=batch"}
        port = lktest.free_port()
        procs = {n: self.start(n, jobs, labels[n], port=port if n == "a" else None)
                 for n in labels}
        kz = self.kazoo()
        self.wait_until(lambda: len(self.runs(kz, "only-a")) >= 4 and
                        len(self.runs(kz, "batch")) >= 4, timeout=60,
                        msg="only-a and batch did not run")
        self.assertEqual({r["node"] for r in self.runs(kz, "only-a")}, {"a"})
        self.assertLessEqual({r["node"] for r in self.runs(kz, "batch")}, {"a", "b"})
        self.assertEqual(self.runs(kz, "nowhere"), [])

        reg = {n: json.loads(kz.get("/leasekeeper/workers/" + n)[0]) for n in labels}
        self.assertEqual(reg["a"]["labels"], {"zone": "a", "role": "batch"})
        self.assertEqual(sorted(reg["a"]["jobs"]), ["batch", "only-a"])
        self.assertEqual(reg["a"]["excluded"], {"nowhere": "constraint zone=d"})
        self.assertEqual(reg["c"]["jobs"], [])
        self.assertEqual(reg["c"]["excluded"], {"only-a": "constraint zone=a",
                                                "batch": "constraint zone!=c",
                                                "nowhere": "constraint zone=d"})

        cfg = self.config("a", jobs, labels["a"])
        out, by = self.status(cfg)
        self.assertEqual(by["only-a"]["runnable_workers"], ["a"])
        self.assertEqual(sorted(by["batch"]["runnable_workers"]), ["a", "b"])
        self.assertEqual(by["nowhere"]["runnable_workers"], [])
        self.assertEqual(sorted(e["worker"] for e in by["nowhere"]["excluded_on"]),
                         ["a", "b", "c"])
        self.assertIn("job nowhere: no live worker can run it", out["warnings"])
        self.assertNotIn("job batch: no live worker can run it", out["warnings"])
        text = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("runs on  NO live worker can run it; not on a (constraint zone=d)", text)

        # The worker says so too: once in its log, and in /metrics for every job it knows.
        procs["a"].wait_log(r"job nowhere: no live worker can run it: no worker that is not "
                            r"drained matches its constraint \(zone=d fails here", timeout=30)
        def runnable():
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
                text = r.read().decode()
            found = dict(re.findall(r'^leasekeeper_job_runnable_workers\{job_name="([^"]+)"\} '
                                    r'(\d+)$', text, re.M))
            return (text, found) if len(found) == 3 and found["batch"] == "2" else None
        text, found = self.wait_until(runnable, timeout=30, msg="runnable workers in /metrics")
        self.assertEqual(found, {"only-a": "1", "batch": "2", "nowhere": "0"})
        self.check_metrics(text)
        self.assertEqual(procs["a"].log_text().count("job nowhere: no live worker can run it"),
                         1, "warned once, not at every look")

        # check says, per job, whether this worker can run it.
        r = subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("runs here        yes: constraint zone=a", r.stdout)
        self.assertIn("runs here        no: constraint zone=d, and zone=d does not hold", r.stdout)

        # Reload: c takes zone=d, so it carries nowhere and batch (zone!=c), still not only-a.
        self.config("c", jobs, "zone=d, role=batch")
        procs["c"].signal(1)  # SIGHUP
        def c_node():
            node = json.loads(kz.get("/leasekeeper/workers/c")[0])
            return node if sorted(node["jobs"]) == ["batch", "nowhere"] else None
        node = self.wait_until(c_node, timeout=30, msg="c's node after the reload")
        self.assertEqual(node["labels"], {"zone": "d", "role": "batch"})
        self.assertEqual(node["excluded"], {"only-a": "constraint zone=a"})
        self.wait_until(lambda: len(self.runs(kz, "nowhere")) >= 2, timeout=30,
                        msg="nowhere did not run on c after the reload")
        self.assertEqual({r["node"] for r in self.runs(kz, "nowhere")}, {"c"})
        out, by = self.status(cfg)
        self.assertEqual(by["nowhere"]["runnable_workers"], ["c"])
        self.assertNotIn("job nowhere: no live worker can run it", out["warnings"])
        procs["a"].wait_log(r"job nowhere: 1 live worker can run it again", timeout=30)

    def test_many_unrunnable_jobs_are_warned_of_in_a_bounded_number_of_lines(self):
        """25 jobs no live worker can run: 10 lines of their own, then one with the count
        (a worker with 10,000 such jobs must not write 10,000 lines), once."""
        self.start_zookeeper()
        jobs = {"j%02d" % i: {"command": "true", "schedule": "@every 1h",
                              "constraint": "zone=nowhere"} for i in range(25)}
        p = self.start("a", jobs, "zone=a")
        p.wait_log(r"15 more jobs \(j\d\d, \.\.\.\): no live worker can run them", timeout=30)
        time.sleep(6)  # a second look (every 5 s) says nothing new
        text = p.log_text()
        self.assertEqual(len(re.findall(r"job j\d\d: no live worker can run it", text)), 10,
                         text)
        self.assertEqual(text.count("no live worker can run them"), 1, text)

    def test_jitter_agrees_across_workers_with_a_late_clock(self):
        self.start_zookeeper(tick_ms=200)
        name, every = "spread", 4
        offset = mix(fnv1a(name), 5) % every
        jobs = {name: {"command": "true", "schedule": "@every %ds" % every,
                       "jitter": "%ds" % every, "start_deadline": "2s", "history": 100}}
        late = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME="-3s",
                    FAKETIME_DONT_FAKE_MONOTONIC="1",
                    ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
        self.start("alpha", jobs)
        self.start("beta", jobs)
        self.start("gamma", jobs, env=late)
        first = time.time()
        kz = self.kazoo()
        self.wait_until(lambda: len(self.runs(kz, name)) >= 8, timeout=90,
                        msg="fewer than 8 runs")
        last = time.time()
        runs = self.runs(kz, name)
        ticks = [r["tick"] for r in runs]
        self.assertEqual(len(set(ticks)), len(ticks), "a tick ran twice")
        self.assertEqual({t % every for t in ticks}, {offset}, "ticks off the jittered grid")
        # Every tick between the first and the last seen ran once (two workers' clocks agree).
        want = [t for t in range(int(first) + every, int(last) - every)
                if t % every == offset]
        self.assertEqual([t for t in want if t not in ticks], [], "ticks that no worker ran")

        # `next` shows the jitter and the times it gives, in line with the documented hash.
        cfg = self.config("alpha", jobs)
        r = subprocess.run([lktest.leasekeeper_bin(), "next", "-c", cfg, name, "-n", "3"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("%s: jitter: every tick %ds after the schedule" % (name, offset), r.stdout)

    def test_h_resolves_from_the_documented_hash(self):
        self.start_zookeeper(tick_ms=200)
        name = "nightly-report"
        seed = fnv1a(name)
        minute = mix(seed, 0) % 60
        hour = 1 + mix(seed, 1) % 5
        start = mix(seed, 2) % 10
        jobs = {name: {"command": "true", "schedule": "H H(1-5) H/10 * *"}}
        cfgs = [self.config(n, jobs) for n in ("alpha", "beta", "gamma")]
        want = "%s: H H(1-5) H/10 * * resolves to %d %d %d-28/10 * *" % (name, minute, hour,
                                                                        1 + start)
        outs = []
        for cfg in cfgs:
            r = subprocess.run([lktest.leasekeeper_bin(), "next", "-c", cfg, name, "-n", "4"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.splitlines()[0], want)
            outs.append(r.stdout)
        self.assertEqual(len(set(outs)), 1, "workers disagree on the times")


if __name__ == "__main__":
    lktest.main()

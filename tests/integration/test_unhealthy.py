#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""A host that cannot start jobs stops taking them (issue 20, goal 4): a worker whose job log
directory is a tmpfs without free inodes (the log file cannot be created: every start fails
for a reason of the host) beside a healthy worker. An `@every 2s` job loses no tick: each tick
runs exactly once, by the healthy worker after the sick one gave it back. The sick worker is
shown unhealthy (its node, `status --json` and the table, /readyz 503, the metric); once the
inodes are freed, a trial start works and it is healthy again and runs ticks again."""

import calendar
import errno
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
INTERVAL = 2
PROBE_S = 3


def lktest_epoch(iso):
    return calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ"))


def http_get(port, path):
    """(status, body) of GET path on the worker's listener."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class UnhealthyTest(lktest.TestCase):
    def mount_without_inodes(self):
        """A tmpfs whose inodes are all used by filler files; the fillers, to free them."""
        d = self.path("logs")
        os.mkdir(d, 0o755)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=32,mode=0755",
                            "lktest", d], capture_output=True, text=True)
        if r.returncode != 0:
            self.fail("NOT RUN: cannot mount a tmpfs (the test needs root): %s"
                      % r.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", d])
        fill = []
        for i in range(1000):
            p = os.path.join(d, "filler%d" % i)
            try:
                os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
            except OSError as e:
                self.assertEqual(e.errno, errno.ENOSPC, e)
                break
            fill.append(p)
        else:
            self.fail("the tmpfs never ran out of inodes")
        return d, fill

    def ticks(self, out):
        """{tick: [node, ...]} from the lines "TICK NODE START" the job appends."""
        runs = {}
        for line in lktest.read_text(out).splitlines():
            f = line.split()
            if len(f) == 3:
                runs.setdefault(f[0], []).append(f[1])
        return runs

    def lateness(self, out):
        """{tick: seconds from the tick to its run's start}."""
        late = {}
        for line in lktest.read_text(out).splitlines():
            f = line.split()
            if len(f) == 3:
                late[f[0]] = float(f[2]) - lktest_epoch(f[0])
        return late

    def assert_each_tick_once(self, out, since, until):
        runs = self.ticks(out)
        twice = {t: n for t, n in runs.items() if len(n) > 1}
        self.assertEqual(twice, {}, "ticks run more than once")
        want = [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
                for t in range(since - since % INTERVAL, until, INTERVAL) if t >= since]
        missing = [t for t in want if t not in runs]
        self.assertEqual(missing, [], "ticks no worker ran (of %d judged)" % len(want))
        return {t: runs[t][0] for t in want}

    def test_inode_exhausted_host_gives_its_ticks_back(self):
        logs, fill = self.mount_without_inodes()
        self.start_zookeeper()
        out = self.path("ticks.txt")
        port = lktest.free_port()
        job = {"command": 'echo "$LEASEKEEPER_TICK $LEASEKEEPER_NODE $(date +%%s.%%N)" >> %s'
                          % out,
               "schedule": "@every %ds" % INTERVAL, "start_deadline": "20s"}
        worker = {"allow_root_jobs": True, "unhealthy_after": 2,
                  "unhealthy_probe": "%ds" % PROBE_S}
        sick_cfg = self.write_config(
            name="sick", zookeeper={"session_timeout": "4s"}, safety=SAFETY, worker=worker,
            http={"listen": "127.0.0.1:%d" % port},
            jobs={"every": dict(job, log_file=os.path.join(logs, "every.log"))})
        well_cfg = self.write_config(name="well", zookeeper={"session_timeout": "4s"},
                                     safety=SAFETY, worker=worker, jobs={"every": job})
        sick = self.worker(sick_cfg, name="sick")
        well = self.worker(well_cfg, name="well")
        for w in (sick, well):
            w.wait_log(r"registered as", timeout=60)
        start = int(time.time()) + 2  # both registered, each has seen the other

        sick.wait_log(r"could not start here for a reason of this host: given back", timeout=60)
        sick.wait_log(r"worker unhealthy: 2 starts failed in a row", timeout=60)
        # About 30 s of ticks while it is sick: none lost, none twice, all by "well".
        time.sleep(30)
        end = int(time.time()) - 3  # a tick is judged once its step-ins are over
        by = self.assert_each_tick_once(out, start, end)
        self.assertEqual(set(by.values()), {"well"}, by)
        late = [self.lateness(out)[t] for t in by]
        print("ticks while sick: run %.2f s after the tick at most, %.2f s at the median"
              % (max(late), sorted(late)[len(late) // 2]), flush=True)
        self.assertLess(max(late), 20, "a tick given back ran past its start_deadline")
        given = len(re.findall(r"given back to the next worker", sick.log_text()))
        print("sick: %d tick(s) given back, %d ticks judged, every one run once by well"
              % (given, len(by)), flush=True)
        self.assertGreaterEqual(given, 2)
        self.assertRegex(well.log_text(), r"given back by the worker that claimed it: stepping "
                         r"in|still unclaimed|running the tick")

        # Shown unhealthy: the node, status (JSON and table), /readyz, the metrics.
        kz = self.kazoo()
        node = json.loads(kz.get("/leasekeeper/workers/sick")[0])
        self.assertIs(node.get("unhealthy"), True, node)
        self.assertIn("every.log", node.get("unhealthy_reason", ""))
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", well_cfg, "--json"],
                           capture_output=True, text=True, timeout=60)
        workers = {w.get("node"): w for w in json.loads(r.stdout)["workers"]}
        self.assertIs(workers["sick"].get("unhealthy"), True, workers["sick"])
        self.assertNotIn("unhealthy", workers["well"])
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", well_cfg],
                           capture_output=True, text=True, timeout=60)
        self.assertRegex(r.stdout, r"sick .*UNHEALTHY since")
        code, body = http_get(port, "/readyz")
        self.assertEqual(code, 503, body)
        self.assertIn("unhealthy", body)
        code, metrics = http_get(port, "/metrics")
        self.assertEqual(code, 200)
        self.check_metrics(metrics)
        self.assertRegex(metrics, r"(?m)^leasekeeper_worker_unhealthy 1$")
        host = int(re.search(r'(?m)^leasekeeper_start_failures_total\{kind="host"\} (\d+)$',
                             metrics).group(1))
        self.assertGreaterEqual(host, 2)

        # The inodes freed: a trial start works, it is healthy again and runs ticks again.
        for p in fill:
            os.unlink(p)
        mark = len(sick.log_text())
        sick.wait_log(r"worker healthy again", since=mark, timeout=90)
        healed = int(time.time())
        code, body = http_get(port, "/readyz")
        self.assertEqual(code, 200, body)
        self.assertRegex(http_get(port, "/metrics")[1], r"(?m)^leasekeeper_worker_unhealthy 0$")
        self.wait_until(lambda: json.loads(kz.get("/leasekeeper/workers/sick")[0])
                        .get("unhealthy") is None, timeout=30, msg="the node healthy again")
        self.wait_until(lambda: len([t for t, n in self.ticks(out).items()
                                     if "sick" in n and t >= time.strftime(
                                         "%Y-%m-%dT%H:%M:%SZ", time.gmtime(healed))]) >= 2,
                        timeout=60, msg="the healed worker runs ticks again")
        end = int(time.time()) - 3
        by = self.assert_each_tick_once(out, start, end)
        print("after healing: %d ticks judged in all, %d run by sick"
              % (len(by), sum(1 for n in by.values() if n == "sick")), flush=True)


    def test_no_healthy_worker_left_records_the_tick_missed_unhealthy(self):
        """The only worker that carries the job cannot start it: each tick it claimed is
        recorded missed, with the reason unhealthy (not handed around, not lost unsaid)."""
        logs, fill = self.mount_without_inodes()
        self.start_zookeeper()
        port = lktest.free_port()
        cfg = self.write_config(
            name="sick", zookeeper={"session_timeout": "4s"}, safety=SAFETY,
            worker={"allow_root_jobs": True, "unhealthy_after": 2},
            http={"listen": "127.0.0.1:%d" % port},
            jobs={"every": {"command": "true", "schedule": "@every 1s", "history": 50,
                            "log_file": os.path.join(logs, "every.log")}})
        sick = self.worker(cfg, name="sick")
        sick.wait_log(r"registered as", timeout=60)
        sick.wait_log(r"could not start here for a reason of this host: no healthy worker left",
                      timeout=60)
        kz = self.kazoo()

        def missed():
            path = "/leasekeeper/jobs/every/runs"
            if not kz.exists(path):
                return []
            recs = [json.loads(kz.get(path + "/" + c)[0]) for c in kz.get_children(path)]
            return [r for r in recs if r.get("outcome") == "missed"]
        self.wait_until(lambda: len(missed()) >= 3, timeout=60, msg="three ticks recorded missed")
        self.assertEqual({r.get("missed_reason") for r in missed()}, {"unhealthy"}, missed())
        sick.wait_log(r"was missed \(unhealthy\): its start failed on this host", timeout=10)
        metrics = http_get(port, "/metrics")[1]
        n = int(re.search(r'(?m)^leasekeeper_job_missed_ticks_total\{job_name="every",'
                          r'reason="unhealthy"\} (\d+)$', metrics).group(1))
        self.assertGreaterEqual(n, 3)
        self.assertRegex(metrics, r"(?m)^leasekeeper_worker_unhealthy 1$")


if __name__ == "__main__":
    lktest.main()

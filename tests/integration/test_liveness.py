#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=600 split label=timing
"""The loop never stalls (issue 20): a worker with 2,000 jobs (10 @continuous, 10 @every 10s,
1,980 @every 1h) gets a reload that changes the 1,980 idle jobs, then a storm of 100 SIGHUPs
in 10 s with nothing changed (then /metrics and /status of its 2,000 jobs, written in
slices: two held open at once, a third refused), and one with the job file touched and
changed. The 10 unchanged @continuous jobs are never sent SIGTERM (each writes "start" when
it starts and "term" on SIGTERM; the supervisor's log must not say a lease deadline came),
and /livez answers within 100 ms at the 99th percentile (measured here; the assertion is
generous for a busy machine, the kill count exact). And the clock
offset: a worker under libfaketime +30 s reports an offset of about +30 s to ZooKeeper."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("LEASEKEEPER_SOURCE_DIR",
                                               os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests", "lib"))
import lktest  # noqa: E402
from lktest import liveness  # noqa: E402

T_MS = 4000
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
N_CONT, N_TEN, N_IDLE = 10, 10, 1980
# /livez p99 bound of the goal; asserted with this factor of slack on a busy machine (the
# stall before the fix was 5-10 s, 50 to 100 times the goal).
LIVEZ_GOAL_S = 0.100
LIVEZ_SLACK = 5


class LivenessTest(lktest.TestCase):
    def start_worker(self, version=1):
        self.start_zookeeper()
        self.port = lktest.free_port()
        self.out = self.path("cont.log")
        self.cmd = liveness.continuous_command(self.out)
        self.cfg = self.write_config(
            name="alpha", zookeeper={"session_timeout": "%dms" % T_MS}, safety=SAFETY,
            worker={"allow_root_jobs": True}, http={"listen": "127.0.0.1:%d" % self.port},
            jobs=liveness.many_jobs(N_CONT, N_TEN, N_IDLE, self.cmd, version))
        self.w = self.worker(self.cfg)
        # 2,000 jobs each check their record at start-up: generous, it is not what we measure.
        self.w.wait_log(r"registered as", timeout=60)
        self.wait_until(lambda: len(liveness.term_counts(self.out)[0]) == N_CONT, timeout=120,
                        msg="every continuous job running")
        self.probe = liveness.LivezProbe(self.port)
        self.probe.start()
        self.addCleanup(self.probe.stop)

    def rewrite(self, version):
        lktest.write_config(self.dir, self.zk.connect_string, name="alpha",
                            zookeeper={"session_timeout": "%dms" % T_MS}, safety=SAFETY,
                            worker={"allow_root_jobs": True}, http={"listen": "127.0.0.1:%d" % self.port},
                            jobs=liveness.many_jobs(N_CONT, N_TEN, N_IDLE, self.cmd, version))

    def assert_no_kill(self, what):
        starts, terms = liveness.term_counts(self.out)
        self.assertEqual(terms, {}, "%s: unchanged continuous jobs got SIGTERM" % what)
        self.assertEqual(starts, {"cont%03d" % i: 1 for i in range(N_CONT)},
                         "%s: each continuous job started exactly once" % what)
        self.assertNotRegex(self.w.log_text(), r"lease deadline of job",
                            "%s: the supervisor reached a lease deadline" % what)

    def report_livez(self, what, start, end, bound=LIVEZ_GOAL_S * LIVEZ_SLACK):
        lat = self.probe.between(start, end)
        self.assertTrue(lat, "no /livez sample during " + what)
        p50, p99 = liveness.percentile(lat, 50), liveness.percentile(lat, 99)
        print("%s: /livez n=%d p50=%.1f ms p99=%.1f ms max=%.1f ms"
              % (what, len(lat), p50 * 1e3, p99 * 1e3, max(lat) * 1e3), flush=True)
        self.assertLess(p99, bound, "%s: /livez p99 %.0f ms (goal %d ms, bound %d ms)"
                        % (what, p99 * 1e3, LIVEZ_GOAL_S * 1e3, bound * 1e3))
        return p99

    def settle(self, mark, n=1):
        """Wait until the worker logged n reloads since mark and then a lease deadline and a
        half have passed, so a needless kill would have happened."""
        self.wait_until(lambda: len(re_findall(r"reloaded: \d+ job", self.w.log_text()[mark:]))
                        >= n, timeout=120, msg="%d reload(s) done" % n)
        time.sleep(1.5 * T_MS / 1000)

    def test_reload_changing_1980_idle_jobs_kills_nothing(self):
        self.start_worker(1)
        for k in range(2, 6):  # four reloads, as in the report
            mark = len(self.w.log_text())
            t0 = time.monotonic()
            self.rewrite(k)
            self.w.signal(signal.SIGHUP)
            self.settle(mark)
            self.report_livez("reload %d (1,980 changed)" % (k - 1), t0, time.monotonic())
            self.assert_no_kill("reload %d" % (k - 1))
        text = self.w.log_text()
        self.assertEqual(len(re_findall(r"reload: job idle\d+ changed", text)), 4 * N_IDLE)
        self.assertEqual(len(re_findall(r"reload: job (cont|ten)\d+", text)), 0,
                         "unchanged jobs were touched")

    def storm(self, touch):
        """100 SIGHUPs in 10 s; touch: the job file touched before each, and its content
        changed (a comment appended) before every other one."""
        self.start_worker(1)
        jobs_ini = os.path.join(self.dir, "alpha", "jobs", "jobs.ini")
        mark = len(self.w.log_text())
        t0 = time.monotonic()
        for i in range(100):  # 100 SIGHUPs in 10 s
            if touch and i % 2 == 0:
                with open(jobs_ini, "a") as f:
                    f.write("# changed %d\n" % i)  # read again: the same jobs
            elif touch:
                os.utime(jobs_ini)  # the same content: not read again
            self.w.signal(signal.SIGHUP)
            time.sleep(0.1)
        self.settle(mark)
        what = "100 SIGHUPs in 10 s%s" % (
            ", the job file touched before each, its content changed every other" if touch
            else "")
        # The read yields too (a file, or a job's section, per step): the same bound
        # whatever the files.
        self.report_livez(what, t0, time.monotonic())
        self.assert_no_kill(what)
        text = self.w.log_text()[mark:]
        n = len(re_findall(r"reloaded: \d+ job", text))
        skipped = len(re_findall(r"no file of the configuration changed", text))
        print("%s: %d reloads read the files, %d found nothing changed" % (what, n, skipped),
              flush=True)
        self.assertEqual(len(re_findall(r"reload: job ", text)), 0, "unchanged jobs touched")
        self.assertGreaterEqual(n, 1)
        self.assertLessEqual(n + skipped, 100)
        return n, skipped

    def test_sighup_storm_kills_nothing(self):
        n, skipped = self.storm(touch=False)
        self.assertEqual(n, 1, "only the first SIGHUP reads the files")
        self.sliced_replies()

    def held_scrape(self):
        """GET /metrics on a socket that reads nothing past the headers: with 2,000 jobs the
        reply (about 6 MB) cannot fit the kernel's buffers (the server's at most 4 MB, ours
        made small), so its writing stays in progress until we read."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        s.settimeout(30)
        s.connect(("127.0.0.1", self.port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(1)
            self.assertTrue(chunk, "the connection closed before the headers")
            head += chunk
        return s, head.decode("latin-1")

    def read_chunked(self, s):
        """The rest of a chunked reply on s (its headers read)."""
        f = s.makefile("rb")
        body = b""
        while True:
            size = int(f.readline().strip(), 16)
            if size == 0:
                f.readline()
                return body.decode()
            body += f.read(size)
            f.readline()

    def sliced_replies(self):
        """/metrics and /status of 2,000 jobs are written in slices and streamed: two held
        open at once keep the loop answering, a third is answered 503, each reply is whole
        and valid once read, and a reader that leaves frees its reply."""
        t0 = time.monotonic()
        a, head_a = self.held_scrape()
        b, head_b = self.held_scrape()
        for head in (head_a, head_b):
            self.assertRegex(head, r"^HTTP/1.1 200")
            self.assertRegex(head, r"(?i)transfer-encoding: chunked")
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", "/metrics")
        r = c.getresponse()
        r.read()
        self.assertEqual(r.status, 503, "a third reply while two are written")
        self.assertEqual(r.getheader("Retry-After"), "1")
        c.close()
        time.sleep(1)  # the loop answers /livez meanwhile
        self.report_livez("two /metrics replies held open", t0, time.monotonic())
        text = self.read_chunked(a)
        a.close()
        b.close()  # left unread: its reply is dropped when the write fails
        self.check_metrics(text)
        self.assertEqual(len(re.findall(r"^leasekeeper_job_running\{", text, re.M)),
                         N_CONT + N_TEN + N_IDLE)
        # A reply's head is written when it begins: the refusal shows in the next one (once
        # the unread reply was dropped, its slot free again).
        self.wait_until(lambda: liveness.metric_value(
            liveness.scrape(self.port), "leasekeeper_http_scrapes_refused_total") == 1,
            timeout=30, msg="the refusal counted")
        # /status over HTTP/1.0: streamed without chunks, to the connection's close.
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(b"GET /status HTTP/1.0\r\n\r\n")
            raw = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                raw += chunk
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertRegex(head.decode("latin-1"), r"^HTTP/1.0 200")
        st = json.loads(body)
        self.assertEqual(len(st["jobs"]), N_CONT + N_TEN + N_IDLE)
        self.assertEqual(st["node"], "alpha")
        self.assert_no_kill("/metrics and /status held open")

    def test_sighup_storm_with_touched_files_kills_nothing(self):
        n, skipped = self.storm(touch=True)
        self.assertGreater(n, 1, "the changed files were read again")
        # A file touched with its content the same is not read again.
        jobs_ini = os.path.join(self.dir, "alpha", "jobs", "jobs.ini")
        mark = len(self.w.log_text())
        os.utime(jobs_ini)
        self.w.signal(signal.SIGHUP)
        self.w.wait_log(r"no file of the configuration changed since it was read", since=mark,
                        timeout=30)
        self.assertNotIn("reloading ", self.w.log_text()[mark:])


class BusyMainTest(lktest.TestCase):
    """Main busy (here: stopped with SIGSTOP, which the supervisor cannot tell from a busy
    loop) extends no lease. Shorter than the budget of docs/safety.md (2T/3 - safety_margin -
    kill_grace, whatever the heartbeat's phase), no job is killed; longer than T -
    safety_margin - kill_grace (whatever the phase), the supervisor kills it on its own
    clock: a busy main never keeps a job alive past its deadline."""

    MARGIN_MS, GRACE_MS = 500, 1000

    def start(self):
        self.start_zookeeper()
        self.out = self.path("cont.log")
        cfg = self.write_config(
            name="busy", zookeeper={"session_timeout": "%dms" % T_MS}, safety=SAFETY,
            worker={"allow_root_jobs": True},
            jobs={"cont": {"command": liveness.continuous_command(self.out)("cont"),
                           "schedule": "@continuous"}})
        self.w = self.worker(cfg)
        self.wait_until(lambda: liveness.term_counts(self.out)[0].get("cont") == 1,
                        timeout=60, msg="the job running")

    def busy(self, seconds):
        os.kill(self.w.pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(self.w.pid, signal.SIGCONT)

    def test_busy_within_budget_kills_nothing(self):
        self.start()
        budget = (2 * T_MS / 3 - self.MARGIN_MS - self.GRACE_MS) / 1000.0
        # Half the worst-case budget: room for a loaded machine's scheduling and the
        # heartbeat's round trip, in any phase of the heartbeat.
        for i in range(5):
            time.sleep(0.37 * (i + 1))  # another phase of the heartbeat each time
            self.busy(budget / 2)
        time.sleep(T_MS / 1000.0)
        self.assertEqual(liveness.term_counts(self.out), ({"cont": 1}, {}),
                         "a job was killed while main was busy %.2f s" % (budget / 2))
        self.assertNotRegex(self.w.log_text(), r"lease deadline of job")

    def test_busy_past_the_deadline_kills_on_the_supervisors_clock(self):
        self.start()
        longest = (T_MS - self.MARGIN_MS - self.GRACE_MS) / 1000.0
        mark = len(self.w.log_text())
        self.busy(longest + 0.5)
        self.w.wait_log(r"lease deadline of job cont is near: SIGTERM", since=mark, timeout=30)
        self.wait_until(lambda: liveness.term_counts(self.out)[1].get("cont") == 1, timeout=30,
                        msg="the job got SIGTERM")
        self.w.wait_log(r"main's loop was busy: the heartbeat went out \d+ ms late",
                        since=mark, timeout=30)


def re_findall(pattern, text):
    import re
    return re.findall(pattern, text)


class ClockOffsetTest(lktest.TestCase):
    def test_faketime_plus_30s_reports_plus_30s(self):
        lib = faketime_lib()
        if lib is None:
            self.fail("libfaketime is not installed (scripts/bootstrap installs faketime)")
        self.start_zookeeper()
        port = lktest.free_port()
        cfg = self.write_config(name="skewed", zookeeper={"session_timeout": "%dms" % T_MS},
                                safety=SAFETY, http={"listen": "127.0.0.1:%d" % port})
        env = dict(os.environ, LD_PRELOAD=lib, FAKETIME="+30s", FAKETIME_DONT_RESET="1",
                   FAKETIME_NO_CACHE="1")
        # In the sanitizer build, ASan must not insist on coming first among preloads.
        env["ASAN_OPTIONS"] = ":".join(x for x in (os.environ.get("ASAN_OPTIONS"),
                                                   "verify_asan_link_order=0") if x)
        w = self.worker(cfg, name="skewed", env=env)
        w.wait_log(r"registered as", timeout=60)

        def offset():
            v = liveness.metric_value(liveness.scrape(port), "leasekeeper_clock_offset_seconds")
            return v if v is not None and abs(v) > 1 else None
        off = self.wait_until(offset, timeout=60, msg="an offset estimate")
        err = liveness.metric_value(liveness.scrape(port),
                                    "leasekeeper_clock_offset_error_seconds")
        print("faketime +30s: offset %.3f s, error bound %.3f s" % (off, err), flush=True)
        # The offset is this host's clock minus the cluster's: +30 s ahead.
        self.assertAlmostEqual(off, 30.0, delta=1.0)
        self.assertLess(err, 1.0)
        # Within the estimate of +30 s: 29.98 s is as right as 30.02 s.
        w.wait_log(r"clock is (29\.[5-9]|3[01]\.)\d+ s ahead of ZooKeeper", timeout=30, since=0)
        # status shows it, from the worker's node (rewritten with it 2 s after registering).
        def node():
            r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg, "--json"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            me = [x for x in json.loads(r.stdout)["workers"] if x.get("node") == "skewed"]
            return me[0] if me and "clock_offset_ms" in me[0] else None
        me = self.wait_until(node, timeout=60, msg="the offset in the worker's node")
        self.assertAlmostEqual(me["clock_offset_ms"] / 1000.0, 30.0, delta=1.0)
        self.assertLess(me["clock_error_ms"], 1000)
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg],
                           capture_output=True, text=True, timeout=60)
        self.assertRegex(r.stdout, r"clock \+(29\.[5-9]|30\.\d|31\.0) s")


def faketime_lib():
    for d in ("/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime",
              "/usr/lib/faketime"):
        p = os.path.join(d, "libfaketime.so.1")
        if os.path.exists(p):
            return p
    return None


if __name__ == "__main__":
    shutil  # noqa: B018
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300
"""`leasekeeper logs JOB --follow` (issue 21): the output of a run in progress, from its
worker's HTTP listener (GET /runs/<run id>/output, with the output token of its worker
node), on a root with credentials. Every line of a run that writes for about 3 s is seen
in order exactly once, then the outcome and its exit status (0 ok, 1 failed); an
@continuous job is followed from run to run, from the other worker's configuration; a follower without the credential, without
the token or through a foreign Host name is refused."""

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
CREDS = "lk:s3cret"


def counting(n, status, go):
    """Wait for the file go, then write n numbered lines 0.1 s apart, and exit so."""
    return ("while [ ! -e %s ]; do sleep 0.05; done; i=1; while [ $i -le %d ]; do "
            "echo \"line $i of $LEASEKEEPER_RUN_ID\"; i=$((i+1)); sleep 0.1; done; exit %d"
            % (go, n, status))


class LogsFollowTest(lktest.TestCase):
    def setUp(self):
        super().setUp()
        self.start_zookeeper(tick_ms=200)
        self.auth = self.path("zk.auth")
        with open(self.auth, "w") as f:
            f.write(CREDS + "\n")
        os.chmod(self.auth, 0o600)
        self.port = lktest.free_port()

    def config(self, jobs, name="alpha", port=None):
        return self.write_config(name=name, zookeeper={"session_timeout": "4s",
                                                       "auth_file": self.auth},
                                 safety=SAFETY, worker={"allow_root_jobs": True}, jobs=jobs,
                                 extra={"http": {"listen": "127.0.0.1:%d"
                                                 % (port or self.port)}})

    def running(self, kz, job):
        path = "/leasekeeper/jobs/%s/running" % job
        return kz.get_children(path) if kz.exists(path) else []

    def run_in_progress(self, kz, job):
        """(run id, its node's data) of a run of job in progress, once there is one."""
        from kazoo.exceptions import NoNodeError
        got = []

        def look():
            for run in self.running(kz, job):
                try:
                    got[:] = [run, json.loads(kz.get("/leasekeeper/jobs/%s/running/%s"
                                                     % (job, run))[0])]
                    return True
                except NoNodeError:  # it ended between the listing and the read
                    pass
            return False
        self.wait_until(look, timeout=60, msg="a run of %s in progress" % job)
        return got[0], got[1]

    def follow(self, cfg, job, *more):
        """`logs --follow JOB` started, its output to a file; (process, output path)."""
        out = self.path("follow-%s-%d.out" % (job, time.monotonic_ns()))
        f = open(out, "wb")
        p = subprocess.Popen([lktest.leasekeeper_bin(), "logs", "-c", cfg, "--follow", job]
                             + list(more), stdout=f, stderr=subprocess.PIPE)
        f.close()
        self.addCleanup(lambda: p.poll() is None and p.kill())
        return p, out

    def text(self, path):
        with open(path, "rb") as f:
            return f.read().decode()

    def follow_one(self, cfg, kz, job, n):
        """Start job's run (run-now), follow it from before its first line; (rc, stdout)."""
        go = self.path(job + ".go")
        r = subprocess.run([lktest.leasekeeper_bin(), "run-now", "-c", cfg, job],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_until(lambda: self.running(kz, job), timeout=60, msg="the run starts")
        p, out = self.follow(cfg, job)
        self.wait_until(lambda: "following" in self.text(out), timeout=30,
                        msg="the follower finds the run")
        started = time.monotonic()
        open(go, "w").close()  # the run writes from now on, 0.1 s a line
        _, err = p.communicate(timeout=60 + n * 0.1)
        self.assertGreaterEqual(time.monotonic() - started, n * 0.1 * 0.9,
                                "it followed the run to its end")
        os.unlink(go)
        return p.returncode, self.text(out), err.decode()

    def test_follow_a_run_to_its_outcome(self):
        jobs = {"count": {"command": counting(30, 0, self.path("count.go")),
                          "schedule": "0 3 1 1 *"},
                "fails": {"command": counting(10, 3, self.path("fails.go")),
                          "schedule": "0 3 1 1 *"}}
        cfg = self.config(jobs)
        w = self.worker(cfg, name="alpha")
        w.wait_log(r"registered as", timeout=30)
        kz = self.kazoo(auth_data=[("digest", CREDS)])

        # The worker node says where its runs' output is served, with its token.
        node = json.loads(kz.get("/leasekeeper/workers/alpha")[0])
        self.assertEqual(node["http"], "127.0.0.1:%d" % self.port)
        self.assertRegex(node["output_token"], r"^[0-9a-f]{32}$")
        # ... which status (and the dashboard, the same view) do not show.
        st = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg, "--json"],
                            capture_output=True, text=True, timeout=60)
        self.assertNotIn(node["output_token"], st.stdout)

        rc, out, err = self.follow_one(cfg, kz, "count", 30)
        self.assertEqual(rc, 0, out + err)
        run = re.match(r"^=== run (\S+) of count on alpha, following\n", out).group(1)
        lines = ["line %d of %s" % (i, run) for i in range(1, 31)]
        self.assertEqual(out, "=== run %s of count on alpha, following\n%s\n=== run %s ended: ok\n"
                         % (run, "\n".join(lines), run))

        rc, out, err = self.follow_one(cfg, kz, "fails", 10)
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(out, r"line 10 of \S+\n=== run \S+ ended: failed\n$")
        self.assertEqual(out.count("line "), 10)

        # No run in progress: said, status 3.
        r = subprocess.run([lktest.leasekeeper_bin(), "logs", "-c", cfg, "--follow", "count"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no run of count is in progress", r.stderr)

    def test_continuous_and_refusals(self):
        loop = ("i=1; while [ $i -le 4 ]; do echo \"tick $i of $LEASEKEEPER_RUN_ID\"; "
                "i=$((i+1)); sleep 0.2; done")
        # Two workers; the command runs with the configuration of the one that does not hold
        # the loop's lease, and finds the holder's listener in its worker node.
        ports = {"alpha": self.port, "beta": lktest.free_port()}
        cfgs = {n: self.config({"loop": {"command": loop}}, name=n, port=ports[n])
                for n in ports}
        for n in ports:
            self.worker(cfgs[n], name=n).wait_log(r"registered as", timeout=30)
        kz = self.kazoo(auth_data=[("digest", CREDS)])
        holder = self.run_in_progress(kz, "loop")[1]["node"]
        other = "beta" if holder == "alpha" else "alpha"

        # An @continuous job (as -c says): run after run, until interrupted.
        p, out = self.follow(cfgs[other], "loop")
        self.wait_until(lambda: len(re.findall(r"ended: ok\n", self.text(out))) >= 2,
                        timeout=60, msg="two runs followed to their end")
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
        p.stderr.close()
        text = self.text(out)
        runs = re.findall(r"=== run (\S+) ended: ok\n", text)
        self.assertEqual(len(set(runs)), len(runs), "each run followed once")
        self.assertIn("of loop on %s, following" % holder, text)
        for r in runs[1:]:  # the first may have been joined midway; the next ones whole
            self.assertIn("".join("tick %d of %s\n" % (i, r) for i in range(1, 5)), text)

        # Without the credential, the run and the worker node cannot be read: refused.
        r = subprocess.run([lktest.leasekeeper_bin(), "logs", "--zk", self.zk.connect_string,
                            "--follow", "loop"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 77, r.stdout + r.stderr)
        self.assertIn("NoAuth", r.stderr.replace("not authenticated", "NoAuth"))
        # The endpoint itself: no token, a wrong one, a foreign Host: refused.
        run, data = self.run_in_progress(kz, "loop")
        holder = data["node"]
        token = json.loads(kz.get("/leasekeeper/workers/" + holder)[0])["output_token"]
        url = "http://127.0.0.1:%d/runs/%s/output?from=0" % (ports[holder], run)
        for headers, code in (({}, 401), ({"Authorization": "Bearer " + "0" * 32}, 401),
                              ({"Authorization": "Bearer " + token, "Host": "evil.example"},
                               403)):
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30)
            self.assertEqual(e.exception.code, code, headers)
        with urllib.request.urlopen(urllib.request.Request(
                url, headers={"Authorization": "Bearer " + token}), timeout=30) as resp:
            self.assertIn(resp.headers["X-Run-State"], ("running", "ended"))
            body = resp.read()
            self.assertEqual(int(resp.headers["X-Output-Offset"]), 0)
            self.assertEqual(int(resp.headers["X-Output-Next"]), len(body))
            self.assertTrue(body.startswith(b"tick 1 of %s\n" % run.encode()) or not body, body)


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=600 split
"""The control plane as an attacker sees it (issue 22), against a real ZooKeeper, a running
worker and real local users: a ZooKeeper client without credentials cannot run, pause or
drain anything on an open root unless [worker] allow_open_control says so; with
credentials (`leasekeeper init-auth`) and closed ACLs it cannot even write; workers
enforce the request rules themselves (junk, sizes, field types, pause without force, the
limit and the rate, a result only the claimer writes); a port squatted by `nobody` does not
stop a worker; every HTTP answer checks Host; --json escapes C1 and bidi characters and log
lines quote names read from ZooKeeper."""

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("LEASEKEEPER_SOURCE_DIR",
                                               os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests", "lib"))
import lktest  # noqa: E402

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
YEARLY = "0 3 1 1 *"  # at a time no test runs: every run seen is a manual one
ROOT = "/leasekeeper"
RAW = "\u009b\u202e"  # a C1 control (CSI) and RIGHT-TO-LEFT OVERRIDE

read = lktest.read_text


def request(by="mallory", timeout_ms=60000, **more):
    o = {"by": by, "at": "2026-01-01T00:00:00Z", "timeout_ms": timeout_ms}
    o.update(more)
    return json.dumps(o).encode()


class ControlPlaneTest(lktest.TestCase):
    def config(self, name="alpha", jobs=None, worker=None, zookeeper=None, http=None):
        wk = {"allow_root_jobs": True, "allow_open_control": None, "allow_open_output": None}
        wk.update(worker or {})
        zk = {"session_timeout": "4s"}
        zk.update(zookeeper or {})
        extra = {"http": {"listen": "127.0.0.1:%d" % http}} if http else {}
        return self.write_config(name=name, zookeeper=zk, safety=SAFETY, worker=wk, jobs=jobs,
                                 extra=extra)

    def lk(self, *args, timeout=120):
        return subprocess.run([lktest.leasekeeper_bin()] + [str(a) for a in args],
                              capture_output=True, text=True, timeout=timeout)

    def lines(self, path):
        return read(path).split() if os.path.exists(path) else []

    def get(self, port, path, host=None):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.putrequest("GET", path, skip_host=True)
        c.putheader("Host", host or "127.0.0.1:%d" % port)
        c.endheaders()
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r.status, body

    def metric(self, port, name, **labels):
        _, text = self.get(port, "/metrics")
        lab = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
        m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape("{%s}" % lab) if lab else ""),
                      text, re.M)
        return float(m.group(1)) if m else None

    def recording_jobs(self, out):
        return {"hourly": {"command": "echo run >> %s" % out, "schedule": YEARLY},
                "ticker": {"command": "echo tick >> %s.ticks" % out, "schedule": "@every 1s",
                           "start_deadline": "900ms"}}

    # -- goal 1: no control without credentials, by default ----------------------------------

    def test_an_open_root_ignores_run_requests_pauses_and_drains(self):
        """Row 1: a client without credentials made a worker run jobs, restart and drain."""
        self.start_zookeeper()
        port = lktest.free_port()
        out = self.path("runs.txt")
        cfg = self.config(jobs=self.recording_jobs(out), http=port)
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        kz = self.kazoo()  # a stranger: no credentials
        self.wait_until(lambda: kz.exists(ROOT + "/jobs/hourly/requests"), timeout=30)
        self.wait_until(lambda: len(self.lines(out + ".ticks")) >= 2, timeout=30,
                        msg="ticker does not tick")
        kz.create(ROOT + "/jobs/hourly/requests/req-", request(), sequence=True)
        kz.create(ROOT + "/drain/alpha", b'{"by": "mallory"}', makepath=True)
        data, _ = kz.get(ROOT + "/jobs/ticker")
        rec = json.loads(data)
        rec["paused"] = {"by": "mallory", "since": "2026-01-01T00:00:00Z"}
        kz.set(ROOT + "/jobs/ticker", json.dumps(rec).encode())
        # A run request is taken within a few ms when honoured: three ticks later it was not.
        n = len(self.lines(out + ".ticks"))
        self.wait_until(lambda: len(self.lines(out + ".ticks")) >= n + 3, timeout=30,
                        msg="the forged pause or drain stopped the ticks")
        self.assertEqual(self.lines(out), [], "a stranger's run request ran the job")
        self.assertNotIn("drained", json.loads(kz.get(ROOT + "/workers/alpha")[0]))
        self.assertIn("ignoring run requests, pauses and drains: no [zookeeper] auth_file",
                      w.log_text())
        r = self.lk("check", "-c", cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("run requests, pauses and drains ignored: no credentials", r.stdout)
        # One line each, in whatever order the worker read them.
        ignored = [r'ignoring a run_request \(job "hourly", node "req-\d{10}"\)',
                   r'ignoring a drain \(job "", node "alpha"\)',
                   r'ignoring a pause \(job "ticker", node "paused"\)']
        self.wait_until(lambda: all(re.search(x, w.log_text()) for x in ignored), timeout=30,
                        msg="not every ignored record was logged")
        self.assertEqual(self.metric(port, "leasekeeper_control_honoured"), 0)
        self.assertEqual(self.metric(port, "leasekeeper_control_ignored_total",
                                     kind="run_request"), 1)
        self.assertEqual(self.metric(port, "leasekeeper_control_ignored_total", kind="drain"), 1)
        self.assertEqual(self.metric(port, "leasekeeper_control_ignored_total", kind="pause"), 1)
        # one line each, however often the worker looks again
        kz.create(ROOT + "/jobs/hourly/requests/zz", b"x")  # another listing
        time.sleep(1.0)
        self.assertEqual(len(re.findall(r"ignoring a drain", w.log_text())), 1)
        # The commands say why nothing will happen.
        r = self.lk("run-now", "--zk=" + self.zk.connect_string, "--timeout=2s", "hourly")
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("workers ignore run requests, pauses and drains on a root without "
                      "credentials", r.stderr)
        for cmd in (["pause", "ticker"], ["drain", "alpha"]):
            r = self.lk(cmd[0], "--zk=" + self.zk.connect_string, cmd[1])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("allow_open_control", r.stderr)
        self.assertEqual(self.lines(out), [])
        self.assertEqual(w.stop(timeout=15), 0)

    def test_allow_open_control_is_the_operators_opt_in(self):
        self.start_zookeeper()
        out = self.path("runs.txt")
        cfg = self.config(jobs=self.recording_jobs(out), worker={"allow_open_control": True})
        w = self.worker(cfg)
        w.wait_log(r"allow_open_control = true: run requests, pauses and drains are honoured "
                   r"although there are no credentials", timeout=30)
        w.wait_log(r"registered as", timeout=30)
        kz = self.kazoo()
        self.wait_until(lambda: kz.exists(ROOT + "/jobs/hourly/requests"), timeout=30)
        r = self.lk("run-now", "-c", cfg, "--wait", "hourly")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("allow_open_control", r.stderr)  # its config says so: no note
        self.assertEqual(self.lines(out), ["run"])
        self.assertEqual(w.stop(timeout=15), 0)

    def test_init_auth_credentials_close_the_control_records(self):
        from kazoo.exceptions import NoAuthError
        self.start_zookeeper()
        auth = self.path("zk.auth")
        r = self.lk("init-auth", auth)
        self.assertEqual(r.returncode, 0, r.stderr)
        st = os.lstat(auth)
        self.assertEqual((st.st_mode & 0o777, st.st_uid), (0o600, os.geteuid()))
        creds = read(auth)
        self.assertRegex(creds, r"^leasekeeper:[A-Za-z0-9_-]{32}\n$")
        r = self.lk("init-auth", auth)  # never overwrites a credential by accident
        self.assertEqual(r.returncode, 73, r.stderr)
        self.assertEqual(read(auth), creds)
        os.symlink(auth, self.path("link"))
        r = self.lk("init-auth", "--force", self.path("link"))
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(read(auth), creds)
        out = self.path("runs.txt")
        cfg = self.config(jobs=self.recording_jobs(out),
                          zookeeper={"auth_file": auth, "require_acl": True})
        w = self.worker(cfg)
        w.wait_log(r"ACLs checked: no one else may create or delete", timeout=30)
        w.wait_log(r"registered as", timeout=30)
        stranger = self.kazoo()
        friend = self.kazoo(auth_data=[("digest", creds.strip())])
        self.wait_until(lambda: friend.exists(ROOT + "/jobs/hourly/requests"), timeout=30)
        for path, write in ((ROOT + "/jobs/hourly/requests/req-",
                             lambda p: stranger.create(p, request(), sequence=True)),
                            (ROOT + "/drain/alpha", lambda p: stranger.create(p, b"{}")),
                            (ROOT + "/jobs/ticker", lambda p: stranger.set(p, b"{}"))):
            with self.assertRaises(NoAuthError, msg=path):
                write(path)
        r = self.lk("run-now", "-c", cfg, "--wait", "hourly")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("note:", r.stderr)
        self.assertEqual(self.lines(out), ["run"])
        self.assertNotIn("ignoring", w.log_text())
        self.assertEqual(w.stop(timeout=15), 0)

    # -- goal 2: roles -------------------------------------------------------------------------

    def test_a_read_only_identity_reads_everything_and_changes_nothing(self):
        """The dashboard and status had to hold the workers' full credential."""
        from kazoo.exceptions import NoAuthError
        self.start_zookeeper()
        wauth, rauth = self.path("zk.auth"), self.path("reader.auth")
        self.assertEqual(self.lk("init-auth", wauth).returncode, 0)
        r = self.lk("init-auth", "--user", "reader", rauth)
        self.assertEqual(r.returncode, 0, r.stderr)
        reader_id = re.search(r"^reader = (reader:\S+)$", r.stdout, re.M).group(1)
        out = self.path("runs.txt")
        cfg = self.config(jobs=self.recording_jobs(out),
                          zookeeper={"auth_file": wauth, "require_acl": True,
                                     "reader": reader_id})
        w = self.worker(cfg)
        w.wait_log(r"ACLs checked: no one else may create or delete", timeout=30)
        w.wait_log(r"registered as", timeout=30)
        reader = self.kazoo(auth_data=[("digest", read(rauth).strip())])
        runs = ROOT + "/jobs/ticker/runs"
        self.wait_until(lambda: reader.exists(runs) and reader.get_children(runs), timeout=30,
                        msg="the reader sees no run record")
        # It reads every kind of node the workers make ...
        for p in (ROOT, ROOT + "/jobs/ticker", runs + "/" + reader.get_children(runs)[0],
                  ROOT + "/workers/alpha", ROOT + "/jobs/ticker/state"):
            reader.get(p)
        r = self.lk("status", "--zk=" + self.zk.connect_string, "--auth-file", rauth, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual([x["node"] for x in doc["workers"]], ["alpha"])
        self.assertTrue([j for j in doc["jobs"] if j["name"] == "ticker"][0]["runs"])
        # ... and changes none of it.
        for what, fn in (
                ("request", lambda: reader.create(ROOT + "/jobs/hourly/requests/req-", request(),
                                                  sequence=True)),
                ("drain", lambda: reader.create(ROOT + "/drain/alpha", b"{}")),
                ("pause", lambda: reader.set(ROOT + "/jobs/ticker", b"{}")),
                ("worker node", lambda: reader.set(ROOT + "/workers/alpha", b"{}")),
                ("run record", lambda: reader.delete(runs + "/" + reader.get_children(runs)[0]))):
            with self.assertRaises(NoAuthError, msg=what):
                fn()
        self.assertEqual(self.lines(out), [])
        self.assertNotIn("others may create or delete", w.log_text())
        self.assertEqual(w.stop(timeout=15), 0)

    def test_an_operator_identity_writes_control_records_only(self):
        """Operators held the workers' credential: it can also forge worker and lock nodes."""
        from kazoo.exceptions import NoAuthError
        self.start_zookeeper()
        wauth, oauth = self.path("zk.auth"), self.path("operator.auth")
        self.assertEqual(self.lk("init-auth", wauth).returncode, 0)
        r = self.lk("init-auth", "--user", "operator", oauth)
        self.assertEqual(r.returncode, 0, r.stderr)
        op_id = re.search(r"^operator = (operator:\S+)$", r.stdout, re.M).group(1)
        out = self.path("runs.txt")
        jobs = self.recording_jobs(out)
        jobs["hold"] = {"command": "exec sleep 1000", "leases": 2}
        zk = {"auth_file": wauth, "require_acl": True}
        # A cluster made before the operator identity existed (beta, which keeps running
        # and holding its lease of hold): its folders are upgraded by the first worker that
        # has [zookeeper] operator, and no lock is lost.
        beta = self.worker(self.config(name="beta", jobs=jobs, zookeeper=dict(zk)), name="beta")
        beta.wait_log(r"job hold: running", timeout=30)
        friend = self.kazoo(auth_data=[("digest", read(wauth).strip())])
        leases = ROOT + "/semaphore/hold/leases"
        held = friend.get_children(leases)
        self.assertEqual(len(held), 1)
        zk["operator"] = op_id
        cfg = self.config(jobs=jobs, zookeeper=zk)
        w = self.worker(cfg)
        w.wait_log(r"ACLs checked: no one else may create or delete", timeout=30)
        w.wait_log(r"registered as", timeout=30)
        self.assertRegex(w.log_text(), r"gave the operator identity operator:\S+ its role on "
                                       r"\d+ folders made before \[zookeeper\] operator")
        self.wait_until(lambda: len(friend.get_children(leases)) == 2, timeout=30,
                        msg="alpha holds no lease of hold")
        self.assertIn(held[0], friend.get_children(leases))  # beta's, held all along
        self.assertEqual(beta.log_text().count("job hold: running"), 1)
        # beta's own nodes are closed to the operator until it too has the line: stop it.
        self.assertEqual(beta.stop(timeout=15), 0)
        self.wait_until(lambda: len(friend.get_children(leases)) == 1, timeout=30)
        lease = leases + "/" + friend.get_children(leases)[0]
        zkopt = ["--zk=" + self.zk.connect_string, "--auth-file", oauth]
        # The operator runs, pauses and drains with the commands ...
        r = self.lk("run-now", *zkopt, "--wait", "hourly")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.lines(out), ["run"])
        for cmd in (["pause", "ticker"], ["resume", "ticker"], ["drain", "--force", "beta"],
                    ["undrain", "beta"], ["set-leases", "hold", "2"]):
            r = self.lk(*cmd[:1], *zkopt, *cmd[1:])
            self.assertEqual(r.returncode, 0, " ".join(cmd) + ": " + r.stdout + r.stderr)
        # ... and forges nothing the workers own.
        operator = self.kazoo(auth_data=[("digest", read(oauth).strip())])
        stranger = self.kazoo()
        runs = ROOT + "/jobs/hourly/runs"  # made by the run above
        self.wait_until(lambda: friend.exists(ROOT + "/jobs/ticker/state"), timeout=30,
                        msg="ticker has no tick state")
        for who, kz in (("operator", operator), ("stranger", stranger)):
            for what, fn in (
                    ("delete worker node", lambda: kz.delete(ROOT + "/workers/alpha")),
                    ("create worker node", lambda: kz.create(ROOT + "/workers/beta", b"{}")),
                    ("set worker node", lambda: kz.set(ROOT + "/workers/alpha", b"{}")),
                    ("delete lease node", lambda: kz.delete(lease)),
                    ("create lease node", lambda: kz.create(leases + "/_c_x-lease-", b"x",
                                                            sequence=True)),
                    ("create run record", lambda: kz.create(runs + "/run-", b"{}", sequence=True)),
                    ("set tick state", lambda: kz.set(ROOT + "/jobs/ticker/state", b"{}")),
                    ("create a job record", lambda: kz.create(ROOT + "/jobs/forged", b"{}"))):
                with self.assertRaises(NoAuthError, msg=who + ": " + what):
                    fn()
        with self.assertRaises(NoAuthError, msg="stranger: run request"):
            stranger.create(ROOT + "/jobs/hourly/requests/req-", request(), sequence=True)
        self.assertTrue(friend.exists(lease))
        self.assertNotIn("others may create or delete", w.log_text())
        self.assertEqual(w.stop(timeout=15), 0)

    def test_exec_gives_the_reader_and_operator_their_roles(self):
        """exec made its job record with the workers' ACL alone: status failed for the
        operator and the reader ("not authenticated", exit 69) after one exec."""
        from kazoo.security import CREATOR_ALL_ACL
        self.start_zookeeper()
        wauth, rauth, oauth = (self.path(f) for f in ("zk.auth", "reader.auth", "op.auth"))
        self.assertEqual(self.lk("init-auth", wauth).returncode, 0)
        ids = {}
        for user, f in (("reader", rauth), ("operator", oauth)):
            r = self.lk("init-auth", "--user", user, f)
            self.assertEqual(r.returncode, 0, r.stderr)
            ids[user] = re.search(r"^%s = (%s:\S+)$" % (user, user), r.stdout,
                                  re.M).group(1)
        cfg = self.config(zookeeper={"auth_file": wauth, "reader": ids["reader"],
                                     "operator": ids["operator"]})
        r = self.lk("exec", "-c", cfg, "myexec2", "--", "true")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for f in (oauth, rauth):
            r = self.lk("status", "--zk=" + self.zk.connect_string, "--auth-file", f, "--json")
            self.assertEqual(r.returncode, 0, f + ": " + r.stderr)
            job = [j for j in json.loads(r.stdout)["jobs"] if j["name"] == "myexec2"][0]
            self.assertNotIn("warning", job)
            self.assertEqual(job["leases"], 1)
        zkopt = ["--zk=" + self.zk.connect_string, "--auth-file", oauth]
        for cmd in ("pause", "resume"):  # the operator writes the record exec made
            r = self.lk(cmd, *zkopt, "myexec2")
            self.assertEqual(r.returncode, 0, cmd + ": " + r.stdout + r.stderr)
        # A record the operator may not read (as an older exec made it): a warning on that
        # job, naming the identity; the rest of the cluster is shown and status exits 0.
        friend = self.kazoo(auth_data=[("digest", read(wauth).strip())])
        friend.create(ROOT + "/jobs/closed", b"{}", acl=CREATOR_ALL_ACL)
        r = self.lk("status", *zkopt, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        jobs = {j["name"]: j for j in doc["jobs"]}
        self.assertNotIn("warning", jobs["myexec2"])
        want = ("no permission to read %s/jobs/closed: ACL (for the identity operator)" % ROOT)
        self.assertEqual(jobs["closed"]["warning"], want)
        self.assertIn(want, doc["warnings"])
        r = self.lk("status", *zkopt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("WARNING: " + want, r.stdout)
        self.assertNotIn("not authenticated", r.stdout + r.stderr)
        # Without credentials nothing is readable: exit 69, saying why (not "not authenticated").
        r = self.lk("status", "--zk=" + self.zk.connect_string)
        self.assertEqual(r.returncode, 69, r.stdout + r.stderr)
        self.assertIn("cannot read %s: no permission (ACL) for a session without credentials"
                      % ROOT, r.stderr)

    def test_a_hook_token_reads_its_own_run_while_the_hook_runs(self):
        """Hooks had no secret: to read their run's output they needed the workers'."""
        from kazoo.exceptions import NoAuthError, NoNodeError
        self.start_zookeeper()
        wauth = self.path("zk.auth")
        self.assertEqual(self.lk("init-auth", wauth).returncode, 0)
        hook = ("env | grep ^LEASEKEEPER_ > %s/$LEASEKEEPER_JOB.tmp && "
                "mv %s/$LEASEKEEPER_JOB.tmp %s/$LEASEKEEPER_JOB.env; sleep 4")
        hook = hook % ((self.path("."),) * 3)
        jobs = {j: {"command": "echo secret-%s; exit 3" % j, "schedule": YEARLY,
                    "on_failure": hook, "hook_timeout": "60s"} for j in ("a", "b")}
        cfg = self.config(jobs=jobs, zookeeper={"auth_file": wauth, "require_acl": True})
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        kz0 = self.kazoo(auth_data=[("digest", read(wauth).strip())])
        # The job records are written after the registration: run-now needs them.
        self.wait_until(lambda: all(kz0.exists("%s/jobs/%s" % (ROOT, j)) for j in ("a", "b")),
                        timeout=30, msg="the job records")
        for j in ("a", "b"):
            r = self.lk("run-now", "-c", cfg, "--wait", j)
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)  # the run failed: its status
        env = {}
        for j in ("a", "b"):
            f = self.path(j + ".env")
            self.wait_until(lambda: os.path.exists(f), timeout=30, msg="hook of " + j)
            env[j] = dict(x.split("=", 1) for x in read(f).splitlines())
        tok = {j: env[j]["LEASEKEEPER_HOOK_TOKEN"] for j in env}
        node = {j: env[j]["LEASEKEEPER_HOOK_NODE"] for j in env}
        self.assertRegex(tok["a"], r"^lkhook:[A-Za-z0-9_-]{32}$")
        self.assertEqual(env["a"]["LEASEKEEPER_ZK"], self.zk.connect_string)
        self.assertEqual(node["a"], "%s/jobs/a/hooks/run-%010d" % (
            ROOT, int(env["a"]["LEASEKEEPER_RUN_RECORD"])))
        ka = self.kazoo(auth_data=[("digest", tok["a"])])
        # b's hook is still running (4 s) when a's token reads: a's token reads a's run only.
        rec = json.loads(ka.get(node["a"])[0])
        self.assertEqual((rec["outcome"], rec["run_id"]), ("failed", env["a"]["LEASEKEEPER_RUN_ID"]))
        self.assertIn("secret-a", rec["output"])
        runs_a = ROOT + "/jobs/a/runs/" + node["a"].rsplit("/", 1)[1]
        for what, fn in (("b's hook node", lambda: ka.get(node["b"])),
                         ("its run record", lambda: ka.get(runs_a)),
                         ("set its node", lambda: ka.set(node["a"], b"{}")),
                         ("create a request", lambda: ka.create(
                             ROOT + "/jobs/a/requests/req-", request(), sequence=True))):
            with self.assertRaises(NoAuthError, msg=what):
                fn()
        w.wait_log(r"job a: its on_failure (ended|failed) after", timeout=60)
        with self.assertRaises((NoNodeError, NoAuthError), msg="after the hook"):
            ka.get(node["a"])
        self.assertNotIn(tok["a"].split(":")[1], w.log_text())
        self.assertEqual(w.stop(timeout=30), 0)

    def test_a_children_listing_over_1_mb_is_survived(self):
        """A listing larger than jute.maxbuffer (1 MB) was said to make clients reconnect."""
        self.start_zookeeper()
        port = lktest.free_port()
        out = self.path("runs.txt")
        cfg, w, kz = self.open_worker(out, http=port)
        self.wait_until(lambda: kz.exists(ROOT + "/jobs/ticker/runs"), timeout=30)
        self.assertEqual(w.stop(timeout=15), 0)
        # 1100 names of 1000 bytes in each folder the worker and status list: 1.1 MB each.
        folders = (ROOT + "/jobs/hourly/requests", ROOT + "/jobs/ticker/runs")
        made = [kz.create_async("%s/x%05d%s" % (d, i, "y" * 994), b"")
                for d in folders for i in range(1100)]
        for m in made:
            m.get()
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        n = len(self.lines(out + ".ticks"))
        self.wait_until(lambda: len(self.lines(out + ".ticks")) >= n + 3, timeout=60,
                        msg="the worker stopped ticking")
        r = self.lk("status", "-c", cfg)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("ticker", r.stdout)
        # The junk requests are refused and deleted, a batch per listing.
        self.wait_until(lambda: not kz.get_children(folders[0]), timeout=90,
                        msg="junk requests left")
        log = w.log_text()
        self.assertEqual(log.count("zookeeper: session"), 1, "the worker reconnected")
        self.assertNotRegex(log, r"disconnected|expired|connection loss")
        self.assertEqual(w.stop(timeout=15), 0)

    # -- goal 3: workers enforce, not the command ----------------------------------------------

    def open_worker(self, out, http=None):
        cfg = self.config(jobs=self.recording_jobs(out), worker={"allow_open_control": True},
                          http=http)
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        kz = self.kazoo()
        self.wait_until(lambda: kz.exists(ROOT + "/jobs/hourly/requests"), timeout=30)
        return cfg, w, kz

    def test_junk_requests_are_refused_logged_and_deleted_at_once(self):
        """Rows 6 and 7: junk blocked run-now for 24 h; a 1 MB node was read whole."""
        self.start_zookeeper()
        port = lktest.free_port()
        out = self.path("runs.txt")
        cfg, w, kz = self.open_worker(out, http=port)
        d = ROOT + "/jobs/hourly/requests/"
        for i in range(20):
            kz.create(d + "zz-junk-%02d" % i, b"x")
        for i in range(4):
            kz.create(d + "req-", b"not json", sequence=True)
        kz.create(d + "req-", b'{"by":5,"at":"x","timeout_ms":-1}', sequence=True)
        kz.create(d + "req-", request(timeout_ms=-1), sequence=True)
        kz.create(d + "req-", request(by=""), sequence=True)
        kz.create(d + "req-", request(timeout_ms=10 ** 12), sequence=True)
        kz.create(d + "req-", request(force="yes"), sequence=True)
        big = kz.create(d + "req-", b"{" + b" " * (900 * 1024) + b"}", sequence=True)
        kz.create(d + "zz\u202e\u2028junk", b"x")  # ZooKeeper refuses C1 in names
        self.wait_until(lambda: kz.get_children(d) == [], timeout=30,
                        msg="junk left in the folder")
        log = w.log_text()
        self.assertIn('refusing run-now request "zz-junk-07": not named as a request', log)
        self.assertIn('refusing run-now request "zz\\u{202E}\\u{2028}junk"', log)
        self.assertNotIn("\u202e", log)
        self.assertIn("not a JSON object", log)
        self.assertIn('"by" is not a string', log)
        self.assertIn('"timeout_ms" is not an integer from 1 to 86400000', log)
        self.assertIn('"force" is not true or false', log)
        self.assertRegex(log, r'refusing run-now request "%s": \d+ bytes, more than a '
                              r"request's 4096" % re.escape(big.rsplit("/", 1)[1]))
        self.assertEqual(len(re.findall(r'request "zz-junk-07"', log)), 1)
        self.assertEqual(self.metric(port, "leasekeeper_run_requests_refused_total"), 31)
        self.assertEqual(self.lines(out), [], "junk ran the job")
        r = self.lk("run-now", "-c", cfg, "--wait", "hourly")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.lines(out), ["run"])
        self.assertEqual(w.stop(timeout=15), 0)

    def test_pause_limit_and_rate_are_the_workers_to_enforce(self):
        """Rows 1 and 4: 100 requests gave 67 runs in 20 s; a paused job ran a raw request."""
        self.start_zookeeper()
        out = self.path("runs.txt")
        cfg, w, kz = self.open_worker(out)
        d = ROOT + "/jobs/hourly/requests/"
        r = self.lk("pause", "-c", cfg, "hourly")
        self.assertEqual(r.returncode, 0, r.stderr)
        w.wait_log(r"job hourly: paused cluster-wide", timeout=30)
        raw = kz.create(d + "req-", request(), sequence=True)
        self.wait_until(lambda: b'"refused"' in kz.get(raw)[0], timeout=30,
                        msg="a raw request on a paused job was not refused")
        res = json.loads(kz.get(raw)[0])["result"]
        self.assertIn("paused", res["error"])
        w.wait_log(r'refusing run-now request "%s": the job is paused' % raw.rsplit("/", 1)[1],
                   timeout=10)
        r = self.lk("run-now", "-c", cfg, "--wait", "--force", "hourly")  # force still works
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.lines(out), ["run"])
        r = self.lk("resume", "-c", cfg, "hourly")
        self.assertEqual(r.returncode, 0, r.stderr)
        w.wait_log(r"job hourly: resumed cluster-wide", timeout=30)
        # 40 raw requests at once: at most 32 stay, and the rate bounds the runs.
        for c in kz.get_children(d):
            kz.delete(d + c)
        t0 = time.monotonic()
        for _ in range(40):
            kz.create(d + "req-", request(), sequence=True)
        self.wait_until(lambda: len(kz.get_children(d)) <= 32, timeout=30,
                        msg="more than 32 requests kept")
        # The bucket holds 10 (the forced run took one), then one per 3 s.
        self.wait_until(lambda: len(self.lines(out)) >= 10, timeout=60,
                        msg="the first 10 requests did not run")
        time.sleep(3.0)
        elapsed = time.monotonic() - t0
        runs = len(self.lines(out))
        # 10 at once, then one per 3 s (and one for rounding)
        self.assertLessEqual(runs, 10 + int(elapsed / 3.0) + 1, "%d runs in %.1f s" %
                             (runs, elapsed))
        self.assertRegex(w.log_text(), r"the job holds 32 requests already")
        self.assertRegex(w.log_text(), r"over the job's rate of run-now requests")
        self.assertEqual(w.stop(timeout=15), 0)

    def test_a_result_the_claimer_did_not_write_is_not_trusted(self):
        """Without credentials anyone could write a request's result before the worker."""
        self.start_zookeeper()
        kz = self.kazoo()
        kz.create(ROOT + "/jobs/ghost", b'{"leases": 1}', makepath=True)
        d = ROOT + "/jobs/ghost/requests"
        p = subprocess.Popen([lktest.leasekeeper_bin(), "run-now", "--zk=" + self.zk.connect_string,
                              "--wait", "--timeout=60s", "ghost"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.wait_until(lambda: kz.exists(d) and kz.get_children(d), timeout=30)
            node = d + "/" + kz.get_children(d)[0]
            o = json.loads(kz.get(node)[0])
            o["claimed"] = {"node": "alpha", "at": "2026-01-01T00:00:00Z"}
            o["result"] = {"outcome": "ok", "exit_status": 0}
            kz.set(node, json.dumps(o).encode(), version=0)
            stdout, stderr = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 1, stdout + stderr)
        self.assertIn("holds a result its claimer did not write", stderr)

    # -- goal 4: output is a secret -----------------------------------------------------------

    def test_output_is_not_published_on_an_open_root(self):
        """Row 2: any local user read a job's captured output (a password) through `logs`."""
        self.start_zookeeper()
        secret = "pw-%d" % time.monotonic_ns()
        cfg = self.config(jobs={"leaky": {"command": "echo %s" % secret, "schedule": "@every 1s",
                                          "start_deadline": "900ms"}})
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        kz = self.kazoo()
        runs = ROOT + "/jobs/leaky/runs"
        self.wait_until(lambda: kz.exists(runs) and len(kz.get_children(runs)) >= 2, timeout=30,
                        msg="no run records")
        for c in kz.get_children(runs):
            self.assertNotIn(secret.encode(), kz.get(runs + "/" + c)[0])
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                            lktest.leasekeeper_bin(), "logs", "--zk=" + self.zk.connect_string,
                            "--last", "2", "leaky"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(secret, r.stdout + r.stderr)
        # It is in the job's log file, which only root reads.
        log = os.path.join(os.path.dirname(cfg), "state", "jobs", "leaky.log")
        self.assertIn(secret, read(log))
        self.assertEqual(os.stat(log).st_mode & 0o077 & ~0o040, 0)
        r = self.lk("check", "-c", cfg)
        self.assertIn("output           not recorded in run records: no credentials", r.stdout)
        self.assertEqual(w.stop(timeout=15), 0)

    # -- goal 5: a busy port does not stop a host ------------------------------------------------

    def test_a_port_squatted_by_nobody_does_not_stop_the_worker(self):
        """Row 3: a local user bound the port first; the worker exited 78 and stayed down."""
        self.start_zookeeper()
        port = lktest.free_port()
        squat = subprocess.Popen(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable,
             "-c", "import socket,time,sys\n"
                   "s=socket.socket(); s.bind(('127.0.0.1', %d)); s.listen(); "
                   "print('bound', flush=True); time.sleep(600)" % port],
            stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(squat.stdout.readline().strip(), "bound")
            out = self.path("runs.txt")
            cfg = self.config(jobs=self.recording_jobs(out), http=port)
            w = self.worker(cfg)
            self.wait_until(lambda: len(self.lines(out + ".ticks")) >= 3 or not w.alive(),
                            timeout=30, msg="jobs do not run while the port is taken")
            self.assertTrue(w.alive(), "the worker exited: %s" % w.log_text()[-300:])
            self.assertGreaterEqual(len(self.lines(out + ".ticks")), 3)
            w.wait_log(r"http: cannot listen on 127.0.0.1:%d \(see above\): the worker runs "
                       r"its jobs" % port, timeout=30)
            r = self.lk("check", "-c", cfg)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("[http] listen = 127.0.0.1:%d cannot be bound now" % port, r.stderr)
            w.wait_log(r"http: still cannot listen on 127.0.0.1:%d" % port, timeout=30)
        finally:
            squat.kill()
            squat.wait()
        # back-off: 1, 2, 4, ... 60 s; the squatter is gone after a few seconds
        w.wait_log(r"http: listening on 127.0.0.1:%d after \d+ failed attempt" % port,
                   timeout=90)
        self.assertGreaterEqual(self.metric(port, "leasekeeper_http_bind_failures_total"), 2)
        self.assertEqual(self.get(port, "/health")[0], 200)
        self.assertEqual(w.stop(timeout=15), 0)

    # -- goal 6: Host, --json and log lines --------------------------------------------------------

    def test_socket_activation_takes_the_listener_from_systemd(self):
        """Optional in goal 5: a socket systemd holds from boot cannot be squatted."""
        self.start_zookeeper()
        port = lktest.free_port()
        cfg = self.config(jobs=self.recording_jobs(self.path("runs.txt")), http=port)
        # As systemd does: the listening socket as descriptor 3, LISTEN_PID our pid (exec
        # keeps it), LISTEN_FDS=1. Nothing else binds the port: only the passed socket serves.
        wrap = ("import os, socket, sys\n"
                "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                "s.bind(('127.0.0.1', %d)); s.listen(16)\n"
                "os.dup2(s.fileno(), 3) if s.fileno() != 3 else os.set_inheritable(3, True)\n"
                "os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS='1')\n"
                "os.execv(sys.argv[1], sys.argv[1:])\n" % port)
        w = self.proc(["/usr/bin/python3", "-c", wrap, lktest.leasekeeper_bin(), "run", "-c",
                       cfg], "worker")
        w.wait_log(r"http: listening on 127.0.0.1:%d \(the socket systemd passed, "
                   r"LISTEN_FDS\)" % port, timeout=30)
        w.wait_log(r"registered as", timeout=30)
        status, _ = self.get(port, "/health")
        self.assertEqual(status, 200)
        self.assertEqual(w.stop(timeout=15), 0)

    def test_every_worker_answer_checks_host(self):
        """Row 5: /status and /metrics answered any Host (DNS rebinding)."""
        self.start_zookeeper()
        port = lktest.free_port()
        cfg = self.config(jobs={"hourly": {"command": "true", "schedule": YEARLY}}, http=port)
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        for path in ("/status", "/metrics", "/health", "/readyz", "/livez", "/nothing",
                     "/runs/alpha-1-1/output?from=0"):
            status, body = self.get(port, path, host="evil.example:%d" % port)
            self.assertEqual(status, 403, path)
            self.assertNotIn("session", body)
            self.assertNotEqual(self.get(port, path)[0], 403, path)
        self.assertEqual(self.get(port, "/status", host="localhost")[0], 200)
        self.assertEqual(self.get(port, "/status", host="[::1]:%d" % port)[0], 200)
        self.assertEqual(self.get(port, "/status", host=socket.gethostname())[0], 200)
        self.assertEqual(w.stop(timeout=15), 0)

    def test_json_output_escapes_c1_and_bidi_characters(self):
        """Row 8: status --json and logs --json printed U+009B and U+202E raw."""
        self.start_zookeeper()
        cfg = self.config(jobs={"hourly": {"command": "printf 'a\\302\\233b\\342\\200\\256c\\n'",
                                           "schedule": YEARLY}},
                          worker={"allow_open_control": True, "allow_open_output": True})
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        kz = self.kazoo()
        self.wait_until(lambda: kz.exists(ROOT + "/jobs/hourly/requests"), timeout=30)
        kz.create(ROOT + "/workers/evil\u202e", json.dumps({"node": "evil" + RAW}).encode(),
                  ephemeral=True)
        r = self.lk("run-now", "-c", cfg, "--wait", "hourly")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for args in (["status", "-c", cfg, "--json"], ["logs", "-c", cfg, "--json", "hourly"]):
            r = subprocess.run([lktest.leasekeeper_bin()] + args, capture_output=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("\u009b".encode(), r.stdout, args)
            self.assertNotIn("\u202e".encode(), r.stdout, args)
            self.assertIn(b"\\u009b", r.stdout.lower(), args)
            self.assertIn(b"\\u202e", r.stdout.lower(), args)
            self.assertEqual(r.stdout.decode("ascii").strip()[:1] in "{[", True)
        self.assertEqual(w.stop(timeout=15), 0)


    def test_the_operator_grant_keeps_an_acl_changed_meanwhile(self):
        """The operator's entry is added with the ACL version read: an ACL changed between
        the read and the write (the write held on its way) is not overwritten; the worker
        reads it again and adds the entry to what is there now."""
        import struct
        from kazoo.security import ACL, Id, Permissions
        self.start_zookeeper()
        wauth, oauth = self.path("zk.auth"), self.path("operator.auth")
        self.assertEqual(self.lk("init-auth", wauth).returncode, 0)
        r = self.lk("init-auth", "--user", "operator", oauth)
        self.assertEqual(r.returncode, 0, r.stderr)
        op_id = re.search(r"^operator = (operator:\S+)$", r.stdout, re.M).group(1)
        jobs = {"hold": {"command": "exec sleep 1000"}}
        path = ROOT + "/jobs/hold"
        # The cluster made before the operator identity existed.
        beta = self.worker(self.config(name="beta", jobs=jobs,
                                       zookeeper={"auth_file": wauth}), name="beta")
        beta.wait_log(r"job hold: running", timeout=30)
        self.assertEqual(beta.stop(timeout=15), 0)
        friend = self.kazoo(auth_data=[("digest", read(wauth).strip())])
        # alpha, with the line, through a proxy that holds its setACL of the job record
        # (request header: xid, type 7; then the path).
        proxy = self.proxy()
        proxy.hold_after(struct.pack(">ii", 7, len(path)) + path.encode())
        cfg = self.write_config(name="alpha", hosts=proxy.connect_string, safety=SAFETY,
                                zookeeper={"session_timeout": "10s", "auth_file": wauth,
                                           "operator": op_id},
                                worker={"allow_root_jobs": True}, jobs=jobs)
        alpha = self.worker(cfg, name="alpha")
        self.wait_until(lambda: proxy.holds == 1, timeout=30, msg="no setACL of " + path)
        acl, stat = friend.get_acls(path)
        extra = ACL(Permissions.READ, Id("digest", "auditor:AAAAAAAAAAAAAAAAAAAAAAAAAAA="))
        friend.set_acls(path, list(acl) + [extra], version=stat.aversion)
        proxy.release()

        def operator_entry():
            return [a for a in friend.get_acls(path)[0] if a.id.id == op_id]
        self.wait_until(operator_entry, timeout=30,
                        msg="the operator was not given its role: %r" % (friend.get_acls(path),))
        final = friend.get_acls(path)[0]
        self.assertIn(extra, final, "the ACL change made meanwhile was overwritten")
        self.assertEqual(operator_entry()[0].perms, Permissions.READ | Permissions.WRITE)
        self.assertEqual(len(final), len(acl) + 2, final)
        alpha.wait_log(r"registered as", timeout=30)

if __name__ == "__main__":
    lktest.main()

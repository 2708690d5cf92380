#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=600 label=upgrade
"""Rolling upgrades: the previous release (tests/upgrade/previous-release, built from git with
`git worktree` and cmake, cached under the build directory) and this code on one root. Three
workers of the previous release run a scheduled job, an @continuous job and a semaphore job;
each is upgraded in turn (SIGTERM, wait for its exit, start this build's binary with the same
configuration). Checked: no overlap of any job, no tick run twice, no tick lost, and every
record readable by `status --json` and by the dashboard's document (`web`'s /api/cluster) of
both versions, at each step, also once this code gave the job records their "locks". Then the
other way round: a node of a newer format than this one reads (docs/upgrading.md) is refused,
said once, never written over, and no lease is dropped."""

import calendar
import collections
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

NAMES = ("alpha", "beta", "gamma")
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
TICK_S = 2
START_DEADLINE_S = 1.5
LEASES = {"tick": 1, "cont": 1, "sem": 2}
# The locks each job record gets from the first worker of this code that agrees on its count.
LOCKS = {"tick": [{"path": "/leasekeeper/mutex/tick", "mode": "mutex"}],
         "cont": [{"path": "/leasekeeper/mutex/cont", "mode": "mutex"}],
         "sem": [{"path": "/leasekeeper/semaphore/sem", "mode": "semaphore", "leases": 2}]}


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def previous_commit():
    """The previous release's commit, as tests/upgrade/previous-release records it."""
    path = os.path.join(lktest.source_dir(), "tests", "upgrade", "previous-release")
    with open(path) as f:
        lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    if len(lines) != 1 or not re.fullmatch(r"[0-9a-f]{40}", lines[0]):
        raise RuntimeError("%s: want one line, a full commit hash" % path)
    return lines[0]


def previous_binary():
    """The previous release's leasekeeper, built once per build directory (a `git worktree` of
    the commit in a temporary folder, cmake, the binary kept under <build>/upgrade/<commit>).
    Returns (path, seconds the build took, 0 when cached)."""
    commit = previous_commit()
    cache = os.path.join(lktest.build_dir(), "upgrade", commit)
    binary = os.path.join(cache, "leasekeeper")
    os.makedirs(cache, exist_ok=True)
    with open(cache + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once build it once
        if os.access(binary, os.X_OK):
            return binary, 0.0
        started = time.monotonic()
        tmp = tempfile.mkdtemp(prefix="lk-previous-")
        src, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
        git = ["git", "-C", lktest.source_dir()]
        r = subprocess.run(git + ["worktree", "add", "--detach", src, commit],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError("cannot check out the previous release %s (a clone without its "
                               "history?): %s" % (commit, r.stderr))
        try:
            # Unoptimised and without debug information: 10 CPU-s to build instead of 23 for
            # RelWithDebInfo; what the test checks (formats, hand-overs) is the same.
            for argv in (["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Debug",
                          "-DCMAKE_C_FLAGS_DEBUG=-O0", "-DLEASEKEEPER_TESTS=OFF"],
                         ["nice", "cmake", "--build", build, "-j2", "--target", "leasekeeper"]):
                r = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
                if r.returncode != 0:
                    raise RuntimeError("building the previous release %s failed: %s\n%s" %
                                       (commit, " ".join(argv), r.stdout[-3000:] + r.stderr))
            shutil.copy2(os.path.join(build, "leasekeeper"), binary + ".tmp")
            os.rename(binary + ".tmp", binary)
        finally:
            subprocess.run(git + ["worktree", "remove", "--force", src], capture_output=True,
                           timeout=120)
            shutil.rmtree(tmp, ignore_errors=True)
        return binary, time.monotonic() - started


class UpgradeTest(lktest.TestCase):
    def config(self, name, recs, ticks):
        rec = recs["tick"]
        jobs = {
            # One line per run, "TICK NODE", then a recorded hold (overlap checked by flock).
            "tick": {"command": 'echo "$LEASEKEEPER_TICK %s" >> %s; exec %s' %
                     (name, ticks, rec.command(name, hold_ms=300)),
                     "schedule": "@every %ds" % TICK_S,
                     "start_deadline": "%dms" % (START_DEADLINE_S * 1000),
                     "history": 40},
            "cont": {"command": recs["cont"].command(name), "restart_backoff": "1s"},
            "sem": {"command": recs["sem"].command(name, slots=2), "leases": 2,
                    "restart_backoff": "1s"},
        }
        return self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                 # The previous release refuses keys it does not know: a
                                 # configuration both read has none of this release's new
                                 # ones (docs/upgrading.md).
                                 worker={"allow_root_jobs": True, "allow_open_control": None,
                                         "allow_open_output": None}, jobs=jobs)

    def start(self, binary, name, cfg, version):
        p = self.proc([binary, "run", "-c", cfg], "%s-%s" % (name, version))
        p.wait_log(r"registered as", timeout=60)
        return p

    def ticks(self, path):
        out = collections.defaultdict(list)
        for line in lktest.read_text(path).splitlines():
            if line.strip():
                tick, node = line.split()
                out[tick].append(node)
        return out

    def web(self, binary, cfg, name):
        port = lktest.free_port()
        p = self.proc([binary, "web", "-c", cfg, "--listen", "127.0.0.1:%d" % port], name)
        p.wait_log(r"first view of the cluster read", timeout=60)
        # This release's dashboard wants the token it logs at its start (the previous one
        # has none, and ignores the query).
        m = re.search(r"/\?token=([A-Za-z0-9_-]+)", p.log_text())
        return "http://127.0.0.1:%d/api/cluster%s" % (port, "?token=" + m.group(1) if m else "")

    def fetch(self, url, since):
        """The dashboard's document, read after since (time.time()): generated two seconds
        or more later (its reads take milliseconds), so that it holds every record made
        before since."""
        def doc():
            with urllib.request.urlopen(url, timeout=30) as r:
                d = json.loads(r.read())
            # "generated" is RFC 3339, perhaps with a fraction: a later second is fresh.
            return d if str(d.get("generated", ""))[:19] > iso(since + 1)[:19] else None
        return self.wait_until(doc, timeout=60, msg="no fresh document from " + url)

    def status(self, binary, cfg):
        r = subprocess.run([binary, "status", "-c", cfg, "--json"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, "%s status: %s" % (binary, r.stderr))
        return json.loads(r.stdout)

    def check_readable(self, doc, who, nodes):
        """Every record the view holds was read: counts agreed, data merged, no refusal."""
        text = json.dumps(doc)
        self.assertNotIn("format_refused", text, who)
        self.assertNotIn("newer leasekeeper", text, who)
        jobs = {j.get("name"): j for j in doc["jobs"]}
        for name, leases in LEASES.items():
            job = jobs[name]
            self.assertEqual(job.get("cluster_leases"), leases, "%s: %s" % (who, name))
            self.assertNotIn("record_corrupt", job, who)
            # The @continuous jobs hold their leases throughout; the tick job, while it runs.
            held = len(job["holders"])
            if name == "tick":
                self.assertLessEqual(held, leases, "%s: %s %s" % (who, name, job))
            else:
                self.assertEqual(held, leases, "%s: %s %s" % (who, name, job))
            for h in job["holders"]:
                if h.get("node") is None and len(h) == 1:
                    continue  # a lock node released between the listing and its read
                self.assertIn(h.get("node"), NAMES, "%s: holder %s" % (who, h))
        self.assertIsInstance(jobs["tick"]["state"].get("tick"), int, who)
        # The runs shown: each one's data read (who ran it, and for a tick, which).
        for run in jobs["tick"]["runs"]:
            self.assertIn(run.get("node"), NAMES, "%s: run %s" % (who, run))
            self.assertIn("tick", run, "%s: run %s" % (who, run))
        self.assertEqual(sorted(w.get("node") for w in doc["workers"]), sorted(nodes), who)
        return jobs

    def check_everything(self, binaries, webs, cfg, kz):
        """Both versions' status and dashboard read every record; in ZooKeeper, each record
        is of the previous format (no "v") or this one's ("v": 1)."""
        formats = collections.Counter()
        for job in LEASES:
            base = "/leasekeeper/jobs/" + job
            paths = [base, base + "/state"] if job == "tick" else [base]
            if kz.exists(base + "/runs"):
                paths += [base + "/runs/" + c for c in kz.get_children(base + "/runs")]
            for p in paths:
                data = json.loads(kz.get(p)[0])
                self.assertIn(data.get("v", 0), (0, 1), p)
                formats["run" if "/runs/" in p else "other", data.get("v", 0)] += 1
        for c in kz.get_children("/leasekeeper/workers"):
            data = json.loads(kz.get("/leasekeeper/workers/" + c)[0])
            formats["worker", data.get("v", 0)] += 1
        for version, binary in binaries.items():
            self.check_readable(self.status(binary, cfg), "status of the %s" % version, NAMES)
        runs = "/leasekeeper/jobs/tick/runs"
        for version, url in webs.items():
            before = set(kz.get_children(runs))
            jobs = self.check_readable(self.fetch(url, time.time()), "web of the %s" % version,
                                       NAMES)
            # The dashboard reads up to 50 runs and the job keeps 40: every record of the
            # tick job is in its document (but those trimmed meanwhile).
            shown = {r["znode"] for r in jobs["tick"]["runs"]}
            gone = before - set(kz.get_children(runs))
            self.assertEqual(sorted(before - shown - gone), [], version)
        return formats

    def test_rolling_upgrade_of_three_workers(self):
        previous, build_s = previous_binary()
        print("previous release: %s (%s)" % (previous, "built in %.0f s" % build_s
                                              if build_s else "cached"))
        current = lktest.leasekeeper_bin()
        binaries = {"previous release": previous, "current code": current}
        self.start_zookeeper()
        kz = self.kazoo()
        recs = {job: self.record_file(job) for job in LEASES}
        ticks = self.path("ticks.txt")
        cfgs = {n: self.config(n, recs, ticks) for n in NAMES}
        claims = self.watch_claims(kz)
        procs = {n: self.start(previous, n, cfgs[n], "previous") for n in NAMES}
        stopped = {}  # the previous release's workers, stopped: their logs
        webs = {"previous release": self.web(previous, cfgs["alpha"], "web-previous"),
                "current code": self.web(current, cfgs["alpha"], "web-current")}
        first = time.time()
        self.wait_until(lambda: len(self.ticks(ticks)) >= 3, timeout=60, msg="no ticks run")
        recs["sem"].wait_for("start", count=2, timeout=60)
        recs["cont"].wait_for("start", timeout=60)
        self.check_everything(binaries, webs, cfgs["alpha"], kz)
        for n in NAMES:
            procs[n].signal(signal.SIGTERM)
            self.assertEqual(procs[n].wait(timeout=60), 0, "%s did not stop cleanly" % n)
            stopped[n] = procs[n].log_text()
            procs[n] = self.start(current, n, cfgs[n], "current")
            since = time.time()
            # A few ticks with the upgraded worker among the others, then both read it all.
            self.wait_until(lambda: len([t for t in self.ticks(ticks) if t >= iso(since)]) >= 3,
                            timeout=60, msg="no ticks after upgrading " + n)
            self.wait_until(lambda: len(self.running(recs["sem"])) == 2 and
                            len(self.running(recs["cont"])) == 1, timeout=60,
                            msg="the @continuous jobs did not run again after upgrading " + n)
            formats = self.check_everything(binaries, webs, cfgs["alpha"], kz)
            print("after upgrading %s: records by (kind, format): %s" % (n, dict(formats)))
            # The first worker of this code gave each job record (of the previous release:
            # no "locks") the job's locks; both versions read it on (check_everything).
            for job, locks in LOCKS.items():
                rec = json.loads(kz.get("/leasekeeper/jobs/" + job)[0])
                self.assertEqual(rec.get("locks"), locks, job)
        # Every worker is of this code now: every worker node and tick state is its format,
        # while the runs of the previous release are still read.
        self.assertEqual(formats["worker", 0], 0)
        self.assertEqual(formats["worker", 1], 3)
        self.assertGreater(formats["run", 0], 0, "no run record of the previous release left")
        last = time.time()
        # The tick state is rewritten at each claim: in this code's format by now.
        self.assertEqual(json.loads(kz.get("/leasekeeper/jobs/tick/state")[0]).get("v"), 1)
        for n in NAMES:
            procs[n].signal(signal.SIGTERM)
            self.assertEqual(procs[n].wait(timeout=60), 0)
        seen = self.ticks(ticks)
        self.assertEqual({t: n for t, n in seen.items() if len(n) != 1}, {},
                         "ticks run more than once")
        # Every tick between the first seen and the last: two workers were always up.
        want = [iso(t) for t in range(int(first) // TICK_S * TICK_S + TICK_S,
                                      int(last) // TICK_S * TICK_S - TICK_S, TICK_S)]
        lost = [t for t in want if t not in seen]
        excused = self.lost_by_the_previous_release(lost, claims, stopped)
        self.assertEqual([t for t in lost if t not in excused], [], "ticks that no worker ran")
        runs = [json.loads(kz.get("/leasekeeper/jobs/tick/runs/" + c)[0])
                for c in kz.get_children("/leasekeeper/jobs/tick/runs")]
        self.assertEqual([r for r in runs if r.get("reason") == "missed"], [])
        for job, leases in LEASES.items():
            rep = recs[job].check(leases=leases)
            self.assertEqual(rep.violations, [], job)
            self.assertGreaterEqual(len(rep.intervals), 2, job)
        print("ticks run: %d, from %s to %s" % (len(seen), min(seen), max(seen)))

    def watch_claims(self, kz):
        """Every version of the tick state seen (a watch): [(tick, runners)]."""
        seen, lock = [], threading.Lock()

        def changed(data, stat):
            if data:
                try:
                    st = json.loads(data)
                    with lock:
                        seen.append((st.get("tick"), tuple(st.get("runners") or ())))
                except ValueError:
                    pass
            return True
        kz.DataWatch("/leasekeeper/jobs/tick/state", changed)
        return seen

    def lost_by_the_previous_release(self, lost, claims, stopped):
        """The ticks of lost that the previous release lost as it stopped, as documented
        (docs/upgrading.md, "A limit of the previous release"): its claim of the tick was
        sent before SIGTERM and landed after the worker had let the claim go, so the tick
        stayed claimed by it, neither run nor recorded missed (this release gives such a
        tick back). Excused only with the evidence: the tick state held that claim alone,
        the worker got SIGTERM within the tick's start_deadline, and it never ran it."""
        excused = []
        for t in lost:
            tick = calendar.timegm(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ"))
            for n, log in stopped.items():
                m = re.search(r"(?m)^(\S+) leasekeeper\[\d+\] main info: received SIGTERM$",
                              log)
                if m is None or (tick, (n,)) not in claims:
                    continue
                term = calendar.timegm(time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S")) + \
                    float("0" + m.group(1)[19:-1])
                if tick <= term < tick + START_DEADLINE_S and \
                        "running the tick of %s" % t[:-1] not in log:
                    print("tick %s: claimed by %s of the previous release, which got SIGTERM "
                          "%.3f s after the tick, before its claim's answer: neither run nor "
                          "recorded missed, the previous release's limit (docs/upgrading.md): "
                          "excused" % (t, n, term - tick))
                    excused.append(t)
                    break
        return excused

    def running(self, rec):
        """pids whose latest run has started and not ended or died."""
        live = set()
        for r in rec.records():
            if r.kind == "start":
                live.add(r.pid)
            elif r.kind in ("end", "death"):
                live.discard(r.pid)
        return live

    def test_a_newer_format_is_refused_once_without_dropping_a_lease(self):
        self.start_zookeeper()
        kz = self.kazoo()
        keep, later = self.record_file("keep"), self.record_file("later")
        jobs = {"keep": {"command": keep.command("alpha"), "restart_backoff": "1s"},
                "later": {"command": later.command("alpha"), "restart_backoff": "1s"},
                "ticker": {"command": "true", "schedule": "@every 1s", "history": 100}}
        port = lktest.free_port()
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"},
                                safety=SAFETY, worker={"allow_root_jobs": True}, jobs=jobs,
                                http={"listen": "127.0.0.1:%d" % port})
        p = self.worker(cfg, name="alpha")
        p.wait_log(r"registered as", timeout=60)
        keep.wait_for("start", timeout=60)
        later.wait_for("start", timeout=60)
        keep_pid = keep.starts()[0].pid
        ticker = "/leasekeeper/jobs/ticker"
        self.wait_until(lambda: kz.exists(ticker + "/runs") and kz.get_children(ticker + "/runs"),
                        timeout=30, msg="the ticker job did not run")
        # A newer leasekeeper rewrote one job's record, and recorded a run of the other.
        newer = json.dumps({"v": 2, "leases": 1, "lock": "later", "meaning": "changed"}).encode()
        planted = p.mark()
        kz.set("/leasekeeper/jobs/later", newer)
        kz.ensure_path("/leasekeeper/jobs/keep/runs")
        kz.create("/leasekeeper/jobs/keep/runs/run-", b'{"v": 2, "node": "zeta"}', sequence=True)
        # ... and claimed a tick of a third in its own format, and asked for a run-now.
        state = json.dumps({"v": 2, "claims": {"next": 1}}).encode()
        kz.set(ticker + "/state", state)
        kz.create("/leasekeeper/jobs/keep/requests/req-",
                  b'{"v": 2, "by": "ops", "timeout_ms": 60000}', sequence=True, makepath=True)
        p.wait_log(r"job later: not contending: its record /leasekeeper/jobs/later is written "
                   r"by a newer leasekeeper \(format 2; this one reads formats 0 to 1\)",
                   timeout=30, since=planted)
        # The run of the refused job is stopped in order; nothing is written over the record.
        self.wait_until(lambda: not self.running(later), timeout=30,
                        msg="the refused job still runs")
        p.wait_log(r"job ticker: claiming no tick: its tick state /leasekeeper/jobs/ticker/state "
                   r"is written by a newer leasekeeper \(format 2", timeout=30, since=planted)
        p.wait_log(r"job keep: not taking run-now request req-\d+: it is written by a newer "
                   r"leasekeeper", timeout=30, since=planted)
        runs = len(kz.get_children(ticker + "/runs"))
        kz.set("/leasekeeper/jobs/later", newer)  # read again (its watch fires): said once
        time.sleep(3)
        self.assertEqual(kz.get("/leasekeeper/jobs/later")[0], newer)
        self.assertEqual(len(re.findall(r"job later: not contending", p.log_text())), 1)
        # No tick claimed, run or marked missed on a state it cannot read, and said once.
        self.assertEqual(kz.get(ticker + "/state")[0], state)
        self.assertEqual(len(kz.get_children(ticker + "/runs")), runs)
        self.assertEqual(len(re.findall(r"job ticker: claiming no tick", p.log_text())), 1)
        self.assertEqual(len(keep.starts()), 1)  # the request was not taken
        with urllib.request.urlopen("http://127.0.0.1:%d/status" % port, timeout=30) as r:
            st = {j["name"]: j for j in json.loads(r.read())["jobs"]}
        self.assertIn("newer leasekeeper (format 2", st["later"]["format_refused"])
        self.assertIn("newer leasekeeper (format 2", st["ticker"]["format_refused"])
        self.assertNotIn("format_refused", st["keep"])
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as r:
            metrics = r.read().decode()
        self.assertIn('leasekeeper_job_lease_conflict{job_name="later"} 1', metrics)
        self.assertIn('leasekeeper_job_lease_conflict{job_name="keep"} 0', metrics)
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        job = {j["name"]: j for j in doc["jobs"]}
        self.assertIn("written by a newer leasekeeper (format 2", job["later"]["format_refused"])
        self.assertNotIn("meaning", job["later"])
        newer_runs = [x for x in job["keep"]["runs"] if "format_refused" in x]
        self.assertEqual(len(newer_runs), 1, job["keep"]["runs"])
        self.assertNotIn("node", newer_runs[0])  # its data is not believed
        self.assertTrue(any("newer leasekeeper" in w for w in doc["warnings"]), doc["warnings"])
        text = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", cfg],
                              capture_output=True, text=True, timeout=60).stdout
        self.assertIn("NEWER FORMAT: the job record is written by a newer leasekeeper", text)
        self.assertRegex(text, r"run-\d+  written by a newer leasekeeper \(format 2")
        self.assertIn("tick state NEWER FORMAT: written by a newer leasekeeper (format 2", text)
        r = subprocess.run([lktest.leasekeeper_bin(), "logs", "-c", cfg, "keep"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"=== run \d+: written by a newer leasekeeper \(format 2")
        self.assertNotIn("zeta", r.stdout)
        # The controls refuse to write over it too.
        r = subprocess.run([lktest.leasekeeper_bin(), "pause", "-c", cfg, "later"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("written by a newer leasekeeper", r.stderr)
        self.assertEqual(kz.get("/leasekeeper/jobs/later")[0], newer)
        # The other job's lease was never dropped: the same run holds it throughout.
        self.assertEqual([s.pid for s in keep.starts()], [keep_pid])
        self.assertEqual(len(self.running(keep)), 1)
        self.assertTrue(p.alive())
        # Readable again (a downgrade of the record): the worker contends again.
        kz.set("/leasekeeper/jobs/later", b'{"leases": 1}')
        p.wait_log(r"job later: its record /leasekeeper/jobs/later is readable again",
                   timeout=30)
        later.wait_for("start", count=2, timeout=60)
        for r in (keep, later):
            self.assertEqual(r.check(leases=1).violations, [])


if __name__ == "__main__":
    lktest.main()

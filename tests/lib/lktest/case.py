# SPDX-License-Identifier: Apache-2.0
"""TestCase: a temp dir per test, every server/proxy/process tracked and cleaned up, logs on
failure. Plus main(), wait_until() and the config writers."""

import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from .paths import leasekeeper_bin, tool
from .peers import curator_peer
from .procs import Proc, cleanup_all, tail
from .proxy import Proxy
from .record import DeathWatcher, Recorder, kill_recorded
from .runrecords import job_runs
from .zk import Ensemble, ZooKeeper

__all__ = ["TestCase", "main", "wait_until", "write_ini", "write_config", "RecordFile"]

TAIL_LINES = int(os.environ.get("LKTEST_TAIL_LINES", "60"))


def wait_until(fn, timeout=10.0, msg=None, interval=0.05):
    """Call fn until it returns something true and return that; AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s (last value %r)"
                                 % (timeout, msg or getattr(fn, "__name__", "condition"), last))
        time.sleep(interval)


def read_text(path):
    """A file's text (undecodable bytes replaced), or "" if it does not exist (yet)."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _ini_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def write_ini(path, sections):
    """Write an INI file from {section: {key: value}}; section names are written as given
    ("zookeeper", "job backup"). None values are left out, True/False become true/false, and
    a list value writes the key once per item. Written mode 0600 in directories made 0700: as
    root, the worker refuses configuration others can change, and a secret others can read."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        for name, keys in sections.items():
            if keys is None:
                continue
            f.write("[%s]\n" % name)
            for k, v in keys.items():
                if v is None:
                    continue
                for item in (v if isinstance(v, (list, tuple)) else [v]):
                    f.write("%s = %s\n" % (k, _ini_value(item)))
            f.write("\n")
    return path


def write_config(dir, hosts, name="worker", zookeeper=None, worker=None, safety=None, http=None,
                 jobs=None, extra=None):
    """Write DIR/NAME/worker.ini and DIR/NAME/jobs/jobs.ini; return the worker.ini path.

    [zookeeper] gets hosts; [worker] gets node_id=NAME, jobs=<the jobs dir> and
    state_dir=DIR/NAME/state unless given (None removes a default). jobs is
    {job_name: {key: value}}, each written as a [job NAME] section. extra: more sections
    for worker.ini, {section: {key: value}}. Without jobs, [worker] gets
    allow_no_jobs = true (worker={"allow_no_jobs": None} leaves it out). Without auth or
    auth_file, [worker] gets allow_open_control = true and allow_open_output = true (None
    leaves either out).
    """
    base = os.path.join(os.path.abspath(str(dir)), name)
    jobs_dir = os.path.join(base, "jobs")
    state_dir = os.path.join(base, "state")
    os.makedirs(jobs_dir, mode=0o700, exist_ok=True)
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    zk = {"hosts": hosts}
    zk.update(zookeeper or {})
    wk = {"node_id": name, "jobs": jobs_dir, "state_dir": state_dir}
    if "auth" not in zk and "auth_file" not in zk:
        # Tests drive run-now, pause and drain on an open root: the operator's opt-in
        # (worker={"allow_open_control": None} leaves it out, as test_control_plane does).
        wk["allow_open_control"] = True
        wk["allow_open_output"] = True  # ... and read the output in run records
    if not jobs:
        wk["allow_no_jobs"] = True  # a worker without jobs is refused unless it says so
    wk.update(worker or {})
    sections = {"zookeeper": zk, "worker": wk, "safety": safety, "http": http}
    sections.update(extra or {})
    cfg = write_ini(os.path.join(base, "worker.ini"), sections)
    write_ini(os.path.join(jobs_dir, "jobs.ini"),
              {"job %s" % j: keys for j, keys in (jobs or {}).items()})
    return cfg


def cgroup_mount():
    """The cgroup v2 mount point, or None."""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, sep, right = line.partition(" - ")
                if sep and right.startswith("cgroup2 "):
                    return left.split()[4]
    except OSError:
        pass
    return None


def cgroup_folder(node_id, state_dir):
    """Where a worker started by this test process keeps its runs' cgroups (as
    cgroup_worker_name() and cgroup_setup() in src/supervisor/cgroup.c name it), or None."""
    mnt = cgroup_mount()
    if mnt is None:
        return None
    h = 2166136261
    for b in state_dir.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    own = "/"
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                own = line[3:].strip()
    return os.path.join(mnt + (own if own != "/" else ""), "leasekeeper-%s-%08x" % (node_id, h))


class CgroupSweep:
    """After a test: kill what is left in a worker's cgroup folder and remove it."""

    def __init__(self, folder):
        self.folder = folder

    def close(self):
        if not self.folder or not os.path.isdir(self.folder):
            return
        for sub in sorted(os.listdir(self.folder)):
            path = os.path.join(self.folder, sub)
            if not os.path.isdir(path):
                continue
            try:
                with open(os.path.join(path, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                pass
            wait_until(lambda: "populated 0" in read_text(os.path.join(path, "cgroup.events")),
                       timeout=10)
            os.rmdir(path)
        os.rmdir(self.folder)


class RecordFile(Recorder):
    """A record file in the test dir, with its lock file and a running DeathWatcher.

    command(who, ...) gives the shell command of an lk-record job writing to it.
    """

    def __init__(self, path):
        super().__init__(path)
        self.lock_path = self.path + ".lock"
        open(self.path, "a").close()
        self.watcher = DeathWatcher(self.path)
        self.watcher.start()

    def argv(self, who, hold_ms=None, ignore_term=False, grandchildren=0, slots=1, exit=None,
             lock=True, daemon=None):
        """lk-record's argv for one job (lock=False skips the flock check; daemon: the
        heartbeat file of a setsid daemon it starts, see lk-record.c)."""
        argv = [tool("lk-record"), self.path, self.lock_path if lock else "-", who]
        if hold_ms is not None:
            argv += ["--hold-ms", str(int(hold_ms))]
        if ignore_term:
            argv.append("--ignore-term")
        if grandchildren:
            argv += ["--grandchildren", str(int(grandchildren))]
        if slots != 1:
            argv += ["--slots", str(int(slots))]
        if exit is not None:
            argv += ["--exit", str(int(exit))]
        if daemon is not None:
            argv += ["--daemon", daemon]
        return argv

    def command(self, who, **kw):
        """The same as one shell-quoted string, for a job's `command =`."""
        return " ".join(shlex.quote(a) for a in self.argv(who, **kw))

    def close(self):
        """Stop the watcher; SIGKILL (with a warning) any lk-record it saw that is still alive
        a second later: a job that outlived its worker."""
        self.watcher.stop()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if not kill_recorded(self.watcher.pids, self.watcher.pgids, sig=0):
                return 0
            time.sleep(0.05)
        n = kill_recorded(self.watcher.pids, self.watcher.pgids)
        if n:
            sys.stderr.write("lktest: killed %d lk-record process(es) of %s left running after "
                             "the test's processes were stopped\n" % (n, self.path))
        return n


class TestCase(unittest.TestCase):
    """Base class for integration tests against a real ZooKeeper.

    Everything started through these helpers is stopped after the test, also when it fails;
    on failure the tail of every known log is printed and the test dir is kept.
    """

    keep_dir = bool(os.environ.get("LKTEST_KEEP"))

    def setUp(self):
        super().setUp()
        self._lk_init()

    def _lk_init(self):
        if getattr(self, "_lk_ready", False):
            return
        self._lk_ready = True
        self._lk_items = []  # (order, obj, how) cleaned up by order, then last-in first-out
        self._lk_logs = []
        self.zk = None
        prefix = "lk-%s-" % self._testMethodName[:40]
        self._lk_dir = tempfile.mkdtemp(prefix=prefix)
        self.addCleanup(self._lk_cleanup)

    @property
    def dir(self):
        """This test's own temp dir."""
        self._lk_init()
        return self._lk_dir

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def track(self, obj, order=5, how="close", logs=()):
        """Clean obj up after the test by calling obj.<how>(); lower order goes first."""
        self._lk_init()
        self._lk_items.append((order, obj, how))
        for p in logs:
            self.add_log(p)
        return obj

    def add_log(self, path):
        """Print this file's tail if the test fails."""
        self._lk_init()
        if path not in self._lk_logs:
            self._lk_logs.append(path)

    def _failed(self):
        """Whether the test failed so far, and how (the tracebacks, or True when unknown).
        outcome.success cannot tell: unittest resets it around each clean-up; the result's
        lists (3.11+) or outcome.errors (older) can."""
        outcome = getattr(self, "_outcome", None)
        if outcome is None:
            return False
        result = getattr(outcome, "result", None)
        if result is not None:
            found = [tb for test, tb in list(result.errors) + list(result.failures)
                     if test is self or getattr(test, "test_case", None) is self]  # subTests
            if found:
                return "\n".join(found)
        errors = getattr(outcome, "errors", None)  # Python < 3.11
        return bool(errors and any(exc for _, exc in errors))

    def _lk_cleanup(self):
        failed = self._failed()
        items = sorted(enumerate(self._lk_items), key=lambda x: (x[1][0], -x[0]))
        problems = []
        for _, (order, obj, how) in items:
            try:
                getattr(obj, how)()
            except Exception as e:  # keep cleaning up
                problems.append("%r.%s(): %s" % (obj, how, e))
        sanitizer = self._sanitizer_reports()
        if isinstance(failed, str):
            # Before the logs: a long dump must not hide why the test failed.
            sys.stderr.write("lktest: the test failed:\n%s\n" % failed)
        if failed or problems or sanitizer:
            self._dump_logs()
        for p in problems:
            sys.stderr.write("lktest: clean-up problem: %s\n" % p)
        if failed or self.keep_dir or sanitizer:
            sys.stderr.write("lktest: test dir kept: %s\n" % self._lk_dir)
        else:
            shutil.rmtree(self._lk_dir, ignore_errors=True)
        if sanitizer:
            raise AssertionError("sanitizer reports in the logs of this test:\n" +
                                 "\n".join(sanitizer))

    _SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: |"
                            r"WARNING: ThreadSanitizer")

    def _sanitizer_reports(self):
        """Lines of AddressSanitizer, LeakSanitizer or UBSan reports in any log we know."""
        found = []
        for p in self._lk_logs:
            try:
                with open(p, "r", errors="replace") as f:
                    for line in f:
                        if self._SANITIZER.search(line):
                            found.append("%s: %s" % (p, line.rstrip()))
            except OSError:
                continue
        return found

    def _dump_logs(self):
        out = sys.stderr
        for p in self._lk_logs:
            out.write("\n----- %s (last %d lines) -----\n%s\n" % (p, TAIL_LINES,
                                                                  tail(p, TAIL_LINES)))
        out.flush()

    # -- servers, proxies, processes ---------------------------------------------------------

    def start_zookeeper(self, tick_ms=500, name="zk", **kw):
        """A started standalone server (the first one also becomes self.zk)."""
        z = ZooKeeper(self.path(name), tick_ms=tick_ms, name=name, **kw)
        self.track(z, order=8, logs=z.log_files)
        z.start()
        if self.zk is None:
            self.zk = z
        return z

    def start_ensemble(self, n=3, tick_ms=500, name="ensemble", **kw):
        """A started ensemble of n servers (the first one also becomes self.zk)."""
        e = Ensemble(self.path(name), n=n, tick_ms=tick_ms, **kw)
        self.track(e, order=8, logs=e.log_files)
        e.start()
        if self.zk is None:
            self.zk = e
        return e

    def proxy(self, target=None, name="proxy"):
        """A Proxy to target: a ZooKeeper, (host, port), or self.zk (standalone) by default."""
        target = target if target is not None else self.zk
        if isinstance(target, ZooKeeper):
            host, port = target.host, target.port
        else:
            host, port = target
        return self.track(Proxy(host, port, name=name), order=3)

    def proc(self, argv, name, env=None, cwd=None, stdin=False):
        """A tracked Proc logging to <dir>/<name>.log (stopped with SIGTERM, then SIGKILL)."""
        log = self.path(name + ".log")
        p = Proc(argv, log, env=env, cwd=cwd, stdin=stdin, name=name)
        return self.track(p, order=1, how="stop", logs=[log])

    def leasekeeper(self, *args, name="leasekeeper", env=None):
        """Run the leasekeeper binary with args, tracked like proc()."""
        return self.proc([leasekeeper_bin()] + [str(a) for a in args], name, env=env)

    def worker(self, config, name="worker", env=None):
        """`leasekeeper run -c CONFIG`, tracked (its log is <dir>/<name>.log)."""
        return self.leasekeeper("run", "-c", config, name=name, env=env)

    def curator_peer(self, *args, name="curator", session_ms=None):
        """A CuratorPeer (see lktest.curator_peer), tracked, logging to <dir>/<name>.log."""
        log = self.path(name + ".log")
        p = curator_peer(*args, log_path=log, session_ms=session_ms, name=name)
        return self.track(p, order=2, how="stop", logs=[log])

    def kazoo(self, hosts=None, timeout=10.0, **kw):
        """A started KazooClient on self.zk (or hosts) for inspection; stopped after the test."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=hosts or self.zk.connect_string, timeout=timeout, **kw)

        def stop():
            try:
                client.stop()
            finally:
                client.close()

        client.lktest_stop = stop
        self.track(client, order=4, how="lktest_stop")
        client.start(timeout=timeout)
        return client

    def record_file(self, name="record"):
        """A RecordFile in the test dir with its DeathWatcher running."""
        r = RecordFile(self.path(name))
        return self.track(r, order=6, logs=[r.path])

    def write_config(self, name="worker", hosts=None, **kw):
        """write_config() into the test dir, with hosts = self.zk's by default. The worker's
        cgroup folder, if it makes one, is emptied and removed after the test."""
        state_dir = (kw.get("worker") or {}).get("state_dir",
                                                 os.path.join(self.dir, name, "state"))
        if state_dir:
            self.track(CgroupSweep(cgroup_folder(name, state_dir)), order=8)
        return write_config(self.dir, hosts or self.zk.connect_string, name=name, **kw)

    def wait_until(self, fn, timeout=10.0, msg=None, interval=0.05):
        return wait_until(fn, timeout, msg, interval)

    def cli(self, cmd, *args, timeout=120):
        """`leasekeeper CMD --zk=<this test's ZooKeeper> ARGS` run to its end: the completed
        process (returncode, stdout, stderr as text). Some tests define a cli of their own."""
        return subprocess.run([leasekeeper_bin(), cmd, "--zk=" + self.zk.connect_string]
                              + [str(a) for a in args], capture_output=True, text=True,
                              timeout=timeout)

    def runs(self, kz, job):
        """Every run record of job (a kazoo client's read: runs, missed and paused ticks alike,
        as written), oldest first."""
        return job_runs(kz, job)

    def check_metrics(self, metrics):
        """Prometheus's own promtool accepts the text; without promtool, say so."""
        promtool = shutil.which("promtool")
        if promtool is None:
            print("promtool not installed (scripts/bootstrap installs prometheus): "
                  "checked the format here only")
            return
        r = subprocess.run([promtool, "check", "metrics"], input=metrics, text=True,
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def last_run(self, config, job, timeout=30):
        """The newest run record of job, as `leasekeeper status -c config --json` shows it."""
        def record():
            r = subprocess.run([leasekeeper_bin(), "status", "-c", config, "--json"],
                               capture_output=True, text=True, timeout=60)
            jobs = json.loads(r.stdout)["jobs"] if r.returncode == 0 else []
            runs = [x for j in jobs if j["name"] == job for x in j.get("runs", [])]
            return runs[0] if runs else None
        return self.wait_until(record, timeout=timeout, msg="no run record of " + job)


def main():
    """Run the tests of __main__ with verbosity 2; exit 1 if any failed."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not os.environ.get("LKTEST_VERBOSE"):
        logging.getLogger("kazoo").setLevel(logging.ERROR)  # every reconnect is a WARNING
    try:
        prog = unittest.main(verbosity=2, exit=False, buffer=False)
        ok = prog.result.wasSuccessful()
    finally:
        cleanup_all()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(0 if ok else 1)

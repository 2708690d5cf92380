#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""A worker restarted while its predecessor's supervisor still lives keeps every run in a
cgroup (docs/reliability.md finding 3, docs/safety.md "Containment").

The predecessor's main is killed (SIGKILL) while its supervisor is frozen (the cgroup
freezer: a supervisor that notices its main's death late), and a new worker with the same node_id and
state_dir starts at once. Its supervisor waits for the old one to leave the worker's daemon
leaf. Then:

1. The old supervisor is thawed: it kills its runs and leaves. Before the fix it removed the
   worker's cgroup folder as it left, under the new supervisor, which then could not move
   into it and (cgroups = auto) ran its runs as process groups: the job's setsid daemon
   escaped its run, kept its flock and overlapped the next run. Now a supervisor whose main
   is gone leaves the folder to whoever comes next.
2. The folder is removed under the new supervisor all the same (the test does what an old
   version's supervisor did, with the new supervisor stopped meanwhile): the new supervisor
   makes it again, and does not fall back to process groups.

In both, the new worker's runs (and their daemons) are in run cgroups under the folder, and
no two runs (daemons included) ever hold the job's flock at once.
"""

import os
import re
import signal
import sys
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}


def cgroup_of(pid):
    """The cgroup v2 path of a live process ("/a/b"), or None once it is gone."""
    for line in lktest.read_text("/proc/%d/cgroup" % pid).splitlines():
        if line.startswith("0::"):
            return line[3:].strip()
    return None


def stopped(pid):
    """Whether the process is stopped (state T in /proc/PID/stat): a SIGSTOP took effect."""
    stat = lktest.read_text("/proc/%d/stat" % pid)
    return stat.rpartition(")")[2].split()[:1] == ["T"]


class RestartContainmentTest(lktest.TestCase):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or lktest.cgroup_mount() is None:
            self.skipTest("NOT RUN: needs root and a cgroup v2 hierarchy")
        self.hb = self.path("heartbeats")
        self.addCleanup(self.kill_strays)
        self.strays = []
        self.start_zookeeper()
        self.rec = self.record_file()
        self.cfg = self.write_config(
            name="w1", zookeeper={"session_timeout": "4s"}, safety=SAFETY,
            worker={"allow_root_jobs": True, "cgroups": "auto"},
            jobs={"d": {"command": self.rec.command("w1", hold_ms=700, daemon=self.hb),
                        "restart_backoff": "1s", "kill_grace": "1s"}})
        self.folder = lktest.cgroup_folder("w1", self.path("w1", "state"))
        self.leaf = os.path.join(self.folder, "daemon")

    def freeze(self, on):
        """Freeze (or thaw) the daemon leaf: the old main and supervisor in it."""
        with open(os.path.join(self.leaf, "cgroup.freeze"), "w") as f:
            f.write("1" if on else "0")
        self.wait_until(lambda: "frozen %d" % on in lktest.read_text(
            os.path.join(self.leaf, "cgroup.events")), timeout=30, msg="frozen %d" % on)

    def kill_strays(self):
        try:
            with open(os.path.join(self.leaf, "cgroup.freeze"), "w") as f:
                f.write("0")
        except OSError:
            pass
        for pid in list(lktest.heartbeats(self.hb)) + self.strays:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass

    def old_worker_dies_with_its_supervisor_frozen(self):
        """Worker w1-a runs the job, its supervisor is frozen and its main killed; w1-b is
        started at once and its supervisor is waiting for the old one: (old sv, new worker,
        new sv)."""
        a = self.worker(self.cfg, name="w1-a")
        a.wait_log(r"each run gets a cgroup of its own", timeout=30)
        self.rec.wait_for("start", timeout=30)
        self.wait_until(lambda: lktest.heartbeats(self.hb), timeout=10, msg="no daemon")
        old_sv = int(a.wait_log(r"supervisor pid (\d+)", since=0).group(1))
        self.strays.append(old_sv)
        # Frozen with the cgroup freezer, not SIGSTOP: once main is dead, the kernel sends
        # the stopped members of its orphaned process group SIGCONT. A frozen leaf's tasks
        # still die of SIGKILL.
        self.freeze(1)
        os.kill(a.pid, signal.SIGKILL)
        a.wait(timeout=10)
        b = self.worker(self.cfg, name="w1-b")
        new_sv = int(b.wait_log(r"supervisor pid (\d+)", timeout=30).group(1))
        # The new supervisor made (found) the folder and waits for the frozen one to leave
        # the leaf (it waits up to 10 s): neither it nor its main is in the leaf yet.
        time.sleep(1.5)
        self.assertIn(str(old_sv), lktest.read_text(os.path.join(self.leaf, "cgroup.procs")))
        self.assertNotEqual(cgroup_of(b.pid), cgroup_of(old_sv),
                            "the new worker is in the leaf already (test broken)")
        self.assertTrue(lktest.pid_alive(new_sv))
        return old_sv, b, new_sv

    def check_new_runs_contained(self, b, since_ns):
        """Three runs of w1-b: each (and its daemon) in a run cgroup under the folder; no
        overlap, no daemon beating when the next run starts."""
        b.wait_log(r"each run gets a cgroup of its own under " + self.folder, timeout=30)
        self.assertNotIn("process groups only", b.log_text())
        rel = self.folder[len(lktest.cgroup_mount()):]  # the folder as /proc/PID/cgroup says
        checked = set()
        deadline = time.monotonic() + 90
        while len(checked) < 3:
            self.assertLess(time.monotonic(), deadline, "w1-b ran %d runs" % len(checked))
            self.assertTrue(b.alive(), "w1-b exited")
            for s in self.rec.starts():
                if s.t_ns < since_ns or s.pid in checked:
                    continue
                where = cgroup_of(s.pid)
                daemons = [d for d, v in lktest.heartbeats(self.hb).items() if v[1] == s.pid]
                where = where or (cgroup_of(daemons[0]) if daemons else None)
                if where is None:
                    continue  # gone before it was seen; a later run is checked instead
                self.assertRegex(where, "^" + re.escape(rel) + r"/run-\d+$")
                checked.add(s.pid)
            time.sleep(0.05)
        time.sleep(0.5)  # a daemon that escaped beats on meanwhile
        rep = self.rec.check(leases=1)
        self.assertEqual(rep.flock_overlaps, 0, "\n".join(rep.violations[:5]))
        self.assertEqual(rep.overlaps, 0, "\n".join(rep.violations[:5]))
        starts = sorted(self.rec.starts(), key=lambda s: s.t_ns)
        for d, (_, parent, _, last) in lktest.heartbeats(self.hb).items():
            later = [s for s in starts if s.pid != parent and
                     s.t_ns > min(x.t_ns for x in starts if x.pid == parent)]
            if later:
                self.assertLess(last, later[0].t_ns, "daemon %d (of run pid %d) still beat when "
                                "the next run started" % (d, parent))
        self.assertEqual(b.stop(timeout=30), 0)

    def test_old_supervisor_leaves_the_folder_to_the_new_worker(self):
        old_sv, b, new_sv = self.old_worker_dies_with_its_supervisor_frozen()
        since = time.monotonic_ns()
        self.freeze(0)  # the old supervisor sees its main gone: kills its runs, leaves
        self.wait_until(lambda: not lktest.pid_alive(old_sv), timeout=30,
                        msg="the old supervisor did not exit")
        self.check_new_runs_contained(b, since)

    def test_folder_removed_under_the_new_supervisor_is_made_again(self):
        old_sv, b, new_sv = self.old_worker_dies_with_its_supervisor_frozen()
        os.kill(new_sv, signal.SIGSTOP)
        self.wait_until(lambda: stopped(new_sv), timeout=30, msg="the supervisor stopped")
        try:
            # What an old version's supervisor did as it left: its runs killed and their
            # cgroups removed, itself out of the leaf, the leaf and the folder removed.
            for sub in os.listdir(self.folder):
                path = os.path.join(self.folder, sub)
                if sub.startswith("run-"):
                    with open(os.path.join(path, "cgroup.kill"), "w") as f:
                        f.write("1")
                    self.wait_until(lambda: "populated 0" in lktest.read_text(
                        os.path.join(path, "cgroup.events")), timeout=10)
                    os.rmdir(path)
            os.kill(old_sv, signal.SIGKILL)  # (frozen: it removes nothing itself)
            self.wait_until(lambda: not lktest.read_text(
                os.path.join(self.leaf, "cgroup.procs")).strip(), timeout=30)
            os.rmdir(self.leaf)
            os.rmdir(self.folder)
        finally:
            os.kill(new_sv, signal.SIGCONT)
        since = time.monotonic_ns()
        b.wait_log(r"making it again", timeout=30)
        self.check_new_runs_contained(b, since)
        sys.stderr.write("\nrestart_containment: the folder was made again\n")


if __name__ == "__main__":
    lktest.main()

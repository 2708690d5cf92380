#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""Files root writes or trusts (issue 10, findings 1 and 5): a job user cannot make the
supervisor write through a symbolic link or into a directory the user controls, and `check`,
`run` and a reload refuse configuration that anyone but root can change, or a secret in a
file others can read."""

import os
import pwd
import signal
import stat
import struct
import subprocess
import sys
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
SECRET = b"root's secret, mode 0600\n"


read = lktest.read_text


def set_acl(path, uid, perm):
    """Give user uid perm (an octal digit) on path with a POSIX access ACL, as
    `setfacl -m u:UID:PERM` would (the mask becomes the group's bits and perm): written as the
    kernel's system.posix_acl_access attribute, so the test needs no acl package."""
    mode = os.stat(path).st_mode
    u, g, o = (mode >> 6) & 7, (mode >> 3) & 7, mode & 7
    anyone = 0xffffffff
    entries = [(0x01, u, anyone), (0x02, perm, uid), (0x04, g, anyone), (0x10, g | perm, anyone),
               (0x20, o, anyone)]
    os.setxattr(path, "system.posix_acl_access",
                struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries))


class SecurityFilesTest(lktest.TestCase):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.fail("NOT RUN: the worker checks these only when it runs as root; run the"
                      " suite as root")
        self.nobody = pwd.getpwnam("nobody")
        os.chmod(self.dir, 0o711)  # nobody may pass through, not list or write
        self.target = self.path("target")
        with open(os.open(self.target, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(SECRET)

    def target_unchanged(self):
        with open(self.target, "rb") as f:
            self.assertEqual(f.read(), SECRET, "root wrote to the link's target")
        st = os.stat(self.target)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o600))

    def start(self, jobs, **kw):
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"},
                                safety=SAFETY, jobs=jobs, **kw)
        w = self.worker(cfg)
        w.wait_log(r"registered as", timeout=30)
        return w

    def test_log_in_a_directory_the_job_user_owns_is_refused(self):
        """The attack of the issue: a nobody job whose log directory nobody can write (here:
        it is given to nobody while the job runs; `check` refuses it at load) replaces its
        log with a link to a root-owned 0600 file and exits. The restart is refused, logged
        with the reason, and the target is untouched."""
        self.start_zookeeper()
        logs = self.path("logs")
        os.mkdir(logs, 0o755)
        log = os.path.join(logs, "job.log")
        runs = self.path("runs")
        os.mkdir(runs, 0o755)
        os.chown(runs, self.nobody.pw_uid, self.nobody.pw_gid)
        attack = ("echo run >> %s/runs; until ln -s %s %s.new 2>/dev/null && mv -f %s.new %s; "
                  "do sleep 0.1; done; exit 1" % (runs, self.target, log, log, log))
        w = self.start({"attack": {"command": attack, "user": "nobody", "log_file": log,
                                   "restart_backoff": "1s", "max_failures": 100}})
        self.wait_until(lambda: read(os.path.join(runs, "runs")) == "run\n", timeout=60,
                        msg="the job never started")
        mark = w.mark()
        os.chown(logs, self.nobody.pw_uid, self.nobody.pw_gid)
        refusal = (r"job attack: could not start: job attack: cannot open log file: %s is owned "
                   r"by a user other than root: put job logs in a directory only root can "
                   r"write, such as /var/log/leasekeeper" % logs)
        w.wait_log(refusal, timeout=60, since=mark)
        self.assertTrue(os.path.islink(log), "the job did not plant its link")
        # Restarts keep being refused, and only refused (the supervisor logs each one).
        t0 = time.monotonic()
        self.wait_until(lambda: w.log_text()[mark:].count("supervisor: refusing to start job")
                        >= 3, timeout=90, msg="three refused restarts")
        sys.stderr.write("three refusals in %.1f s\n" % (time.monotonic() - t0))
        self.assertEqual(read(os.path.join(runs, "runs")), "run\n", "the job ran again")
        self.target_unchanged()
        self.assertTrue(w.alive())

    def test_log_replaced_by_a_link_is_not_followed(self):
        """A log in root's directory replaced by a symbolic link (as a job user could if the
        directory were theirs) between runs: the next start is refused and the target kept;
        at the size cap the log is rotated in the directory opened at the start."""
        self.start_zookeeper()
        logs = self.path("logs")
        os.mkdir(logs, 0o755)
        log = os.path.join(logs, "job.log")
        pids = self.path("pids")
        os.mkdir(pids, 0o755)
        os.chown(pids, self.nobody.pw_uid, self.nobody.pw_gid)
        pidfile = os.path.join(pids, "pid")
        cmd = "echo $$ > %s; echo hello; exec sleep 1000" % pidfile
        w = self.start({"victim": {"command": cmd, "user": "nobody", "log_file": log,
                                   "restart_backoff": "1s", "max_failures": 100}})
        self.wait_until(lambda: "hello" in read(log), timeout=60, msg="the job never logged")
        os.unlink(log)
        os.symlink(self.target, log)
        mark = w.mark()
        os.kill(int(read(pidfile)), signal.SIGKILL)
        w.wait_log(r"job victim: could not start: job victim: cannot open log file: %s is a "
                   r"symbolic link, which is not followed" % log, timeout=60, since=mark)
        self.target_unchanged()
        self.assertTrue(os.path.islink(log))

    def test_log_that_is_a_fifo_is_refused(self):
        """A FIFO in the log's place would block the supervisor on open: refused at once."""
        self.start_zookeeper()
        logs = self.path("logs")
        os.mkdir(logs, 0o755)
        log = os.path.join(logs, "job.log")
        os.mkfifo(log, 0o600)
        w = self.start({"fifo": {"command": "sleep 1000", "log_file": log}},
                       worker={"allow_root_jobs": True})
        w.wait_log(r"job fifo: could not start: job fifo: cannot open log file: %s is not a "
                   r"regular file" % log, timeout=60)
        self.assertTrue(w.alive())

    def check(self, cfg):
        return subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg],
                              capture_output=True, text=True, timeout=60)

    def test_check_refuses_a_job_file_anyone_can_write(self):
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:1",
                                jobs={"a": {"command": "true", "user": "nobody"}})
        jobs = self.path("alpha", "jobs", "jobs.ini")
        r = self.check(cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        os.chmod(jobs, 0o666)
        r = self.check(cfg)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn('%s: is writable by others (mode 0666): whoever can write a configuration '
                      'file runs commands as root: chmod 0640 %s' % (jobs, jobs), r.stderr)
        self.assertNotIn("configuration OK", r.stdout + r.stderr)
        # run refuses it the same way, before it connects anywhere
        r = subprocess.run([lktest.leasekeeper_bin(), "run", "-c", cfg], capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("%s: is writable by others" % jobs, r.stderr)

    def test_check_refuses_a_secret_others_can_read(self):
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:1",
                                zookeeper={"auth": "leasekeeper:hunter2"},
                                jobs={"a": {"command": "true", "user": "nobody"}})
        r = self.check(cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        os.chmod(cfg, 0o640)  # group root may read it, as installed
        r = self.check(cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        os.chmod(cfg, 0o644)
        r = self.check(cfg)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertRegex(r.stderr, r'%s:\d+: auth: the secret is in a file anyone can read '
                                   r'\(mode 0644\): chmod 0640 %s\n' % (cfg, cfg))
        self.assertNotIn("hunter2", r.stdout + r.stderr)

    def test_check_refuses_what_an_acl_lets_nobody_write(self):
        """Review F3: an ACL entry for a user shows only as the group bits (its mask), so a
        root:root 0660 job file, a 0775 jobs directory or log directory passed while nobody
        could append to the file or create jobs/evil.ini. Each is refused, naming the fix."""
        logs = self.path("logs")
        os.mkdir(logs, 0o755)
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:1",
                                jobs={"a": {"command": "true", "user": "nobody",
                                            "log_file": os.path.join(logs, "a.log")}})
        jobs_dir = self.path("alpha", "jobs")
        jobs = os.path.join(jobs_dir, "jobs.ini")
        os.chmod(jobs, 0o640)
        os.chmod(jobs_dir, 0o755)
        r = self.check(cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        for path, perm, want in (
                (jobs, 6, "%s: is writable by another user through an ACL (mode 0660): whoever can"
                          " write a configuration file runs commands as root: setfacl -b %s"
                          % (jobs, jobs)),
                (jobs_dir, 7, "the directory %s, which holds configuration, is writable by "
                              "another user through an ACL, and whoever can write it can add or "
                              "replace job files that run commands as root: setfacl -b %s"
                              % (jobs_dir, jobs_dir)),
                (logs, 7, "%s is writable by another user through an ACL: the worker writes job "
                          "logs as root" % logs)):
            mode = os.stat(path).st_mode
            set_acl(path, self.nobody.pw_uid, perm)
            # what nobody can do, as root checks it: the mode's group bits are the mask
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), stat.S_IMODE(mode) | 0o20)
            r = self.check(cfg)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(want, r.stderr)
            self.assertNotIn("configuration OK", r.stdout + r.stderr)
            os.removexattr(path, "system.posix_acl_access")
            os.chmod(path, mode)
        r = self.check(cfg)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_check_refuses_a_parent_another_user_owns(self):
        """Review F4: jobs = /x/proj/jobs with proj owned by nobody passed, though nobody could
        rename jobs and put their own in its place. Every directory above is checked."""
        proj = self.path("proj")
        jobs_dir = os.path.join(proj, "jobs")
        os.makedirs(jobs_dir, 0o755)
        with open(os.path.join(jobs_dir, "a.ini"), "w") as f:
            f.write("[job a]\ncommand = true\nuser = nobody\n")
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:1", worker={"jobs": jobs_dir})
        r = self.check(cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        os.chown(proj, self.nobody.pw_uid, self.nobody.pw_gid)
        r = self.check(cfg)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertRegex(r.stderr, r"%s:\d+: the directory %s, above %s, which holds "
                                   r"configuration, is owned by a user other than root, .*: "
                                   r"chown root %s\n" % (cfg, proj, jobs_dir, proj))

    def test_reload_refuses_a_jobs_directory_anyone_can_write(self):
        self.start_zookeeper()
        w = self.start({"a": {"command": "sleep 1000", "user": "nobody"}})
        jobs_dir = self.path("alpha", "jobs")
        os.chmod(jobs_dir, 0o777)
        mark = w.mark()
        w.signal(signal.SIGHUP)
        w.wait_log(r'the directory %s, which holds configuration, is writable by others'
                   % jobs_dir, timeout=30, since=mark)
        self.assertTrue(w.alive())


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300
"""A job starts from a clean environment, whatever the worker's holds: a secret or
NOTIFY_SOCKET given to the worker never reaches a job (run as nobody or as root); the job
gets PATH (a fixed default), HOME, USER, LOGNAME and SHELL from the password database, LANG
and TZ, its LEASEKEEPER_* variables, its env lines and what its pass_env names. A command
without a shell is searched in that PATH, not the worker's, and `check` shows the program it
found. `exec`, the operator's own command, keeps the caller's environment."""

import os
import pwd
import re
import shutil
import subprocess

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

JOB_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Run by sh found in the job's PATH (shell = false), the job writes its environment and waits.
PRINT_ENV = "sh -c 'env; exec sleep 1000'"
# What /bin/sh itself may add to what it was given.
SHELL_ADDS = {"PWD", "OLDPWD", "SHLVL", "_"}
VAR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def read(path):
    with open(path) as f:
        return f.read()


class JobEnvironmentTest(lktest.TestCase):
    def worker_env(self, fake_bin):
        """The worker's environment: what the test's own holds, plus a secret, a systemd
        socket, locale and zone, and a PATH with a directory only the worker has."""
        return dict(os.environ, FOO_SECRET="x", NOTIFY_SOCKET="/x", LC_TEST="y",
                    LANG="C.UTF-8", TZ="UTC",
                    PATH=fake_bin + ":" + os.environ.get("PATH", "/usr/bin:/bin"))

    def job_env(self, cfg_dir, job):
        """The environment a job printed into its log (leasekeeper's own lines skipped)."""
        path = os.path.join(cfg_dir, "state", "jobs", job + ".log")
        self.wait_until(lambda: os.path.exists(path) and
                        "LEASEKEEPER_JOB=%s\n" % job in read(path), timeout=60,
                        msg="job %s never printed its environment" % job)
        env = {}
        for line in read(path).splitlines():
            m = VAR.match(line)
            if m:
                env[m.group(1)] = m.group(2)
        return env

    def assert_clean(self, env, user, job, extra=()):
        """Exactly the variables a clean job gets, with the passwd entry of user."""
        pw = pwd.getpwnam(user)
        for name in ("FOO_SECRET", "NOTIFY_SOCKET", "LC_TEST"):
            if name not in extra:
                self.assertNotIn(name, env, "job %s got the worker's %s" % (job, name))
        self.assertEqual(env["PATH"], JOB_PATH)
        self.assertEqual(env["HOME"], pw.pw_dir)
        self.assertEqual(env["USER"], user)
        self.assertEqual(env["LOGNAME"], user)
        self.assertEqual(env["SHELL"], pw.pw_shell)
        self.assertEqual(env["LANG"], "C.UTF-8")
        self.assertEqual(env["LEASEKEEPER_JOB"], job)
        self.assertEqual(env["LEASEKEEPER_NODE"], "worker")
        self.assertGreater(int(env["LEASEKEEPER_FENCE"]), 0)
        allowed = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ"} | SHELL_ADDS
        allowed |= set(extra)
        unexpected = sorted(k for k in env if k not in allowed and
                            not k.startswith("LEASEKEEPER_"))
        self.assertEqual(unexpected, [], "job %s got more than a clean environment" % job)

    def test_jobs_start_from_a_clean_environment(self):
        self.start_zookeeper()
        fake_bin = self.path("worker-bin")
        os.makedirs(fake_bin)
        marker = self.path("fake-ran")
        fake = os.path.join(fake_bin, "lkfake-prog")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\ntouch %s\n" % marker)
        os.chmod(fake, 0o755)
        jobs = {
            "nobody": {"command": PRINT_ENV, "shell": False, "user": "nobody"},
            "root": {"command": PRINT_ENV, "shell": False},
            "passed": {"command": PRINT_ENV, "shell": False, "user": "nobody",
                       "pass_env": "FOO_SECRET, LC_*", "env": "TZ=Europe/Paris"},
            # on the worker's PATH only: the job's PATH must not find it
            "fake": {"command": "lkfake-prog", "shell": False, "restart_backoff": "1h"},
        }
        cfg = self.write_config(worker={"allow_root_jobs": True}, jobs=jobs)
        cfg_dir = os.path.dirname(cfg)
        env = self.worker_env(fake_bin)

        r = subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("  program          %s\n" % shutil.which("sh", path=JOB_PATH), r.stdout)
        self.assertIn("  program          lkfake-prog is not in the job's PATH (%s)\n"
                      % JOB_PATH, r.stdout)
        self.assertIn("  pass_env         FOO_SECRET LC_*\n", r.stdout)

        w = self.worker(cfg, env=env)
        self.assert_clean(self.job_env(cfg_dir, "nobody"), "nobody", "nobody")
        self.assertEqual(self.job_env(cfg_dir, "nobody")["TZ"], "UTC")
        self.assert_clean(self.job_env(cfg_dir, "root"), "root", "root")
        passed = self.job_env(cfg_dir, "passed")
        self.assert_clean(passed, "nobody", "passed", extra=("FOO_SECRET", "LC_TEST"))
        self.assertEqual(passed["FOO_SECRET"], "x")
        self.assertEqual(passed["LC_TEST"], "y")
        self.assertEqual(passed["TZ"], "Europe/Paris")  # an env line beats the worker's TZ
        w.wait_log(r"job fake: could not start: exec lkfake-prog: No such file or directory",
                   timeout=60)
        self.assertFalse(os.path.exists(marker), "a job ran a program from the worker's PATH")
        self.assertTrue(w.alive())

    def test_exec_keeps_the_callers_environment(self):
        """exec runs the operator's own command: it sees the operator's environment."""
        self.start_zookeeper()
        r = subprocess.run([lktest.leasekeeper_bin(), "exec", "--zk", self.zk.connect_string,
                            "envexec", "--", "sh", "-c", 'echo "$FOO_SECRET $LEASEKEEPER_JOB"'],
                           env=dict(os.environ, FOO_SECRET="x"), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "x envexec\n")


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=600 split
"""Hostile configurations on reload (issue 8): a running worker with a running @continuous
job gets SIGHUP after each of a table of broken configurations (the crash inputs of cron
items starting with '/', bytes that are not UTF-8 or that ZooKeeper refuses, a NUL inside
a value, and job files that vanish or cannot be read) and must refuse each one and keep
running: same worker, same job process, the old configuration kept. A reload that would
leave no jobs is refused unless the new configuration says allow_no_jobs = true."""

import os
import re
import shutil
import signal
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}


read = lktest.read_text


class HostileConfigTest(lktest.TestCase):
    def start_keeper(self):
        """A worker running one @continuous job that writes its pid; returns (proc, pid)."""
        self.start_zookeeper()
        self.pidfile = self.path("keep.pid")
        self.command = "echo $$ > %s; exec sleep 100000" % self.pidfile
        cfg = self.write_config(name="alpha", zookeeper={"session_timeout": "4s"},
                                safety=SAFETY, worker={"allow_root_jobs": True},
                                jobs={"keep": {"command": self.command}})
        self.cfg = cfg
        self.jobs_dir = self.path("alpha", "jobs")
        self.jobs_file = os.path.join(self.jobs_dir, "jobs.ini")
        with open(cfg, "rb") as f:
            self.worker_ini = f.read()
        with open(self.jobs_file, "rb") as f:
            self.jobs_ini = f.read()
        p = self.worker(cfg, name="alpha")
        p.wait_log(r"registered as", timeout=30)
        self.wait_until(lambda: read(self.pidfile).strip() != "", timeout=30,
                        msg="the job did not start")
        return p, int(read(self.pidfile))

    def restore(self):
        """Put back the good worker.ini and job file, and remove whatever a case added."""
        shutil.rmtree(self.jobs_dir)
        os.makedirs(self.jobs_dir)
        with open(self.jobs_file, "wb") as f:
            f.write(self.jobs_ini)
        if os.path.lexists(self.cfg):
            os.unlink(self.cfg)
        with open(self.cfg, "wb") as f:
            f.write(self.worker_ini)

    def job(self, extra):
        """The good job section with extra raw lines (bytes) added."""
        return self.jobs_ini.rstrip(b"\n") + b"\n" + extra + b"\n"

    def worker_with(self, old, new):
        self.assertIn(old, self.worker_ini)
        return self.worker_ini.replace(old, new)

    def cases(self):
        """(name, worker.ini bytes or None, jobs.ini bytes or None, setup or None, regex)."""
        node = b"node_id = alpha"
        hosts = re.search(rb"hosts = [^\n]*", self.worker_ini).group(0)
        return [
            ("cron item '/5'", None, self.job(b"schedule = /5 * * * *"), None,
             r'minute field "/5": a step needs'),
            ("cron weekday '/7'", None, self.job(b"schedule = 0 0 * * /7"), None,
             r'day-of-week field "/7"'),
            ("cron hour '/2'", None, self.job(b"schedule = */5 /2 * * *"), None,
             r'hour field "/2"'),
            ("schedule that never fires", None, self.job(b"schedule = 0 0 30 2 *"), None,
             r"can never fire"),
            ("job name not UTF-8", None,
             self.jobs_ini + b"[job caf\xe9]\ncommand = true\n", None,
             r"byte \\xe9 at column 9 is not UTF-8"),
            ("node_id not UTF-8", self.worker_with(node, b"node_id = caf\xe9"), None, None,
             r"byte \\xe9 at column 14 is not UTF-8"),
            ("job name beyond U+FFFF", None,
             self.jobs_ini + "[job rocket-\U0001F680]\ncommand = true\n".encode(), None,
             r"U\+1F680, which ZooKeeper refuses"),
            ("NUL inside a command", None,
             self.jobs_ini + b"[job b]\ncommand = echo safe\0; touch /tmp/lk-x\n", None,
             r"control character \\x00 at column 20"),
            ("escape bytes in a value", None, self.job(b"env = A=\x1b]0;pwned\x07"), None,
             r"control character \\x1b"),
            ("a '/' before the last host",
             self.worker_with(hosts, b"hosts = ZK/chr,127.0.0.1:2"), None, None,
             r"a '/' comes before the last host"),
            ("port 0", self.worker_with(hosts, b"hosts = 127.0.0.1:0"), None, None,
             r"a port outside 1-65535"),
            ("port 65536", self.worker_with(hosts, b"hosts = 127.0.0.1:65536"), None, None,
             r"a port outside 1-65535"),
            ("listen 1.2.3.4.5:80", self.worker_ini + b"[http]\nlisten = 1.2.3.4.5:80\n", None,
             None, r'bad listen "1\.2\.3\.4\.5:80"'),
            ("leases over the limit", None, self.job(b"leases = 10001"), None,
             r'leases = "10001" is too large: the most is 10000'),
            ("restart_backoff 0s", None, self.job(b"restart_backoff = 0s"), None,
             r"restart_backoff = 0s is too short"),
            ("empty program", None, b"[job keep]\nshell = false\ncommand = '' -x\n", None,
             r"the program to run is an empty word"),
            ("no job file", None, None, lambda: os.unlink(self.jobs_file),
             r"no jobs: jobs = .* found 0 job files"),
            ("empty job file", None, b"# nothing here\n", None, r"no jobs: "),
            ("jobs = /dev/null",
             self.worker_with(b"jobs = ", b"jobs = /dev/null\n#"), None, None,
             r'"/dev/null" is not a regular file'),
            ("dangling symlink", None, None,
             lambda: os.symlink("/nonexistent/x.ini", os.path.join(self.jobs_dir, "d.ini")),
             r'd\.ini" matched but cannot be read'),
            ("symlink loop", None, None,
             lambda: os.symlink("l.ini", os.path.join(self.jobs_dir, "l.ini")),
             r'l\.ini" matched but cannot be read'),
            ("directory named x.ini", None, None,
             lambda: os.makedirs(os.path.join(self.jobs_dir, "x.ini")),
             r'x\.ini" is a directory'),
            ("worker.ini gone", None, None, lambda: os.unlink(self.cfg), r"cannot open"),
            ("worker.ini a FIFO", None, None,
             lambda: (os.unlink(self.cfg), os.mkfifo(self.cfg)), r"is not a regular file"),
            ("worker.ini /dev/zero", None, None,
             lambda: (os.unlink(self.cfg), os.symlink("/dev/zero", self.cfg)),
             r"is not a regular file"),
            ("binary garbage", bytes(range(256)) * 4, None, None, r"is not UTF-8|control"),
        ]

    def test_every_hostile_reload_is_refused_and_the_job_keeps_running(self):
        p, pid = self.start_keeper()
        for name, worker_ini, jobs_ini, setup, want in self.cases():
            with self.subTest(case=name):
                self.restore()
                if worker_ini is not None:
                    with open(self.cfg, "wb") as f:
                        f.write(worker_ini)
                if jobs_ini is not None:
                    with open(self.jobs_file, "wb") as f:
                        f.write(jobs_ini)
                if setup is not None:
                    setup()
                since = p.mark()
                p.signal(signal.SIGHUP)
                p.wait_log(r"reload refused: \d+ error\(s\); the running configuration stays",
                           timeout=30, since=since)
                text = p.log_text()[since:]
                self.assertRegex(text, want)
                self.assertNotIn("reloaded:", text)
                self.assertIsNone(p.returncode, "the worker exited")
                self.assertTrue(lktest.pid_alive(pid), "the job process died")
                # error lines quote input escaped: no raw control byte but newline and tab
                self.assertIsNone(re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), repr(text))
        # The old configuration was kept: the good one reloads with the job unchanged.
        self.restore()
        since = p.mark()
        p.signal(signal.SIGHUP)
        p.wait_log(r"reloaded: 1 job\(s\)", timeout=30, since=since)
        self.assertNotIn("reload: job keep", p.log_text()[since:])
        time.sleep(1)
        self.assertTrue(lktest.pid_alive(pid))
        self.assertEqual(int(read(self.pidfile)), pid)

    def test_no_jobs_needs_allow_no_jobs(self):
        p, pid = self.start_keeper()
        os.unlink(self.jobs_file)
        since = p.mark()
        p.signal(signal.SIGHUP)
        p.wait_log(r"no jobs: .*set allow_no_jobs = true in \[worker\]", timeout=30, since=since)
        p.wait_log(r"reload refused", timeout=30, since=since)
        self.assertTrue(lktest.pid_alive(pid))
        # Said explicitly, it is done: the job stops.
        with open(self.cfg, "wb") as f:
            f.write(self.worker_ini.replace(b"[worker]\n", b"[worker]\nallow_no_jobs = true\n"))
        since = p.mark()
        p.signal(signal.SIGHUP)
        p.wait_log(r"reloaded: 0 job\(s\)", timeout=30, since=since)
        self.wait_until(lambda: not lktest.pid_alive(pid), timeout=30,
                        msg="the removed job still runs")
        self.assertIsNone(p.returncode)


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=180
"""The worker under systemd, without systemd: its log lines when stderr is the journal
(JOURNAL_STREAM), and the sd_notify protocol seen by a listener on NOTIFY_SOCKET: READY=1
once registered, STATUS= lines, RELOADING=1 (with MONOTONIC_USEC=) then READY=1 on SIGHUP,
WATCHDOG=1 from the main process only, and no ping while its loop is wedged (SIGSTOP)."""

import os
import re
import signal
import socket
import sys
import threading
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
WATCHDOG_USEC = 1000000  # pings every 500 ms
JOBS = {"tick": {"command": "true", "schedule": "@every 1s", "user": "root"}}
# A continuous job: it holds its lease and runs while the worker does.
LONG = {"long": {"command": "sleep 600", "user": "root"}}
PRIORITY = re.compile(r"^<([0-7])>(main|supervisor)\[(\d+)\] (fatal|warn|info|debug): ")
LEVELS = {"3": "fatal", "4": "warn", "6": "info", "7": "debug"}


class NotifyListener:
    """An abstract AF_UNIX datagram socket, as systemd's NOTIFY_SOCKET: every message with
    its sender's pid (SO_PASSCRED) and the time it arrived."""

    def __init__(self, name):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind("\0" + name)
        self.sock.settimeout(0.2)
        self.messages = []  # (monotonic time, pid, {NAME: VALUE})
        self.lock = threading.Lock()
        self.done = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return "@" + self.name

    def _run(self):
        creds = socket.CMSG_SPACE(12)
        while not self.done:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, creds)
            except socket.timeout:
                continue
            except OSError:
                return
            pid = None
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = int.from_bytes(cdata[0:4], sys.byteorder)
            fields = dict(line.split("=", 1) for line in data.decode().split("\n") if line)
            with self.lock:
                self.messages.append((time.monotonic(), pid, fields))

    def close(self):
        self.done = True
        self.thread.join(5)
        self.sock.close()

    def all(self, key=None):
        with self.lock:
            return [m for m in self.messages if key is None or key in m[2]]


class SystemdTest(lktest.TestCase):
    def config(self, name, jobs=JOBS, **worker):
        return self.write_config(name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                                 worker=dict({"allow_root_jobs": True}, **worker), jobs=jobs)

    def test_journal_stream_priorities(self):
        """JOURNAL_STREAM naming stderr: a priority prefix on every line of both processes,
        no timestamp; naming something else: today's format."""
        self.start_zookeeper()
        log = self.path("journal.log")
        open(log, "ab").close()
        st = os.stat(log)
        env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
        w = self.worker(self.config("journal"), name="journal", env=env)
        w.wait_log(r"^<6>main\[%d\] info: registered as /leasekeeper/workers/journal" % w.pid,
                   timeout=30)
        # A run of the job: the supervisor's lines and the run's fields.
        w.wait_log(r"^<6>main\[%d\] info: job tick: run ended after \d+ ms: exit status 0 "
                   r"\(ok\).* run=[A-Za-z0-9._-]+-\d+-\d+ fence=\d+ tick=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$" % w.pid,
                   timeout=30)
        w.wait_log(r"^<6>main\[%d\] info: job tick: running, pid \d+ run=[A-Za-z0-9._-]+-\d+-\d+ fence=\d+ "
                   r"tick=\S+$" % w.pid)
        w.wait_log(r"^<6>supervisor\[\d+\] info: supervisor: job tick started, pid \d+ run=[A-Za-z0-9._-]+-\d+-\d+$")
        w.stop()
        lines = w.log_text().splitlines()
        self.assertGreater(len(lines), 5)
        seen = set()
        for line in lines:
            # The prefix, then the role: no time of its own before it (times in the text,
            # such as a tick's, are the message's).
            m = PRIORITY.match(line)
            self.assertIsNotNone(m, "no priority prefix: %r" % line)
            self.assertEqual(LEVELS[m.group(1)], m.group(4), line)
            seen.add(m.group(1))
        # Without credentials the worker warns at start-up: <4>.
        self.assertIn("4", seen)
        self.assertIn("6", seen)

        # Errors: <3>. A configuration error (printed as `check` prints it), and a fatal
        # one: the state directory cannot be made under a file.
        bad = self.config("bad", state_dir=os.path.join(log, "state"))
        f = self.leasekeeper("run", "-c", bad, name="journal", env=env)
        self.assertEqual(f.wait(30), 78)
        self.assertRegex(f.log_text(), r"^<3>\S+/jobs.ini:1: log_file .* Not a directory: .*\n"
                                       r"<3>1 error in the configuration\n$")
        bad = self.config("fatal", state_dir=os.path.join(log, "state"), jobs=None)
        f = self.leasekeeper("run", "-c", bad, name="journal", env=env)
        self.assertEqual(f.wait(30), 1)
        self.assertRegex(f.log_text(), r"(?m)^<3>main\[%d\] fatal: cannot create the state "
                                       r"directory .*: Not a directory$" % f.pid)

        # JOURNAL_STREAM that names another file (a redirected stderr): the plain format.
        other = self.worker(self.config("plain"), name="plain",
                            env=dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev,
                                                                          st.st_ino)))
        other.wait_log(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z leasekeeper\[%d\] main info: "
                       r"registered as" % other.pid, timeout=30)
        self.assertNotRegex(other.log_text(), r"(?m)^<\d>")

    def test_notify_reload_and_watchdog(self):
        self.start_zookeeper()
        n = NotifyListener("lk-notify-%d-%d" % (os.getpid(), time.monotonic_ns()))
        self.track(n, order=0)
        env = dict(os.environ, NOTIFY_SOCKET=n.address, WATCHDOG_USEC=str(WATCHDOG_USEC))
        env.pop("WATCHDOG_PID", None)
        w = self.worker(self.config("notify", jobs=LONG), name="notify", env=env)
        sv = int(w.wait_log(r"supervisor pid (\d+)", timeout=30).group(1))
        w.wait_log(r"systemd watchdog: WATCHDOG=1 every 500 ms", timeout=30)
        w.wait_log(r"registered as", timeout=30)
        self.wait_until(lambda: n.all("READY"), timeout=10, msg="READY=1")
        ready = n.all("READY")
        self.assertEqual(len(ready), 1)
        self.assertEqual(ready[0][2]["READY"], "1")
        self.assertIn("connected to ZooKeeper %s" % self.zk.connect_string,
                      ready[0][2]["STATUS"])
        # STATUS says what the worker does, once the job holds its lease.
        self.wait_until(lambda: any(re.match(r"1 job, 1 lease held, 1 running; connected "
                                             r"to ZooKeeper .* as session 0x[0-9a-f]+$",
                                             m[2]["STATUS"]) for m in n.all("STATUS")),
                        timeout=30, msg="a STATUS= with the lease held")

        # SIGHUP: RELOADING=1 with the time of the request, then READY=1.
        before = time.monotonic()
        mark = len(n.all())
        w.signal(signal.SIGHUP)
        w.wait_log(r"reloaded: 1 job", timeout=30)
        after = time.monotonic()
        self.wait_until(lambda: [m for m in n.all()[mark:] if "READY" in m[2]], timeout=10,
                        msg="READY=1 after the reload")
        since = [m[2] for m in n.all()[mark:] if "READY" in m[2] or "RELOADING" in m[2]]
        self.assertEqual([("RELOADING" in m, "READY" in m) for m in since][:2],
                         [(True, False), (False, True)])
        usec = int(since[0]["MONOTONIC_USEC"])
        self.assertLessEqual(before * 1e6, usec)
        self.assertLessEqual(usec, after * 1e6)

        # Pings arrive, from the main process only (the supervisor never sends).
        self.wait_until(lambda: len(n.all("WATCHDOG")) >= 6, timeout=30, msg="6 pings")
        pids = {m[1] for m in n.all()}
        self.assertEqual(pids, {w.pid})
        self.assertNotIn(sv, pids)
        pings = [m[0] for m in n.all("WATCHDOG")]
        gaps = [b - a for a, b in zip(pings[-5:], pings[-4:])]
        print("ping gaps (s):", ["%.3f" % g for g in gaps])

        # A wedged main loop: no ping at all while it is stopped, though the supervisor runs.
        w.signal(signal.SIGSTOP)
        self.wait_until(lambda: lktest.read_text("/proc/%d/stat" % w.pid).split(") ")[1][0]
                        == "T", timeout=10, msg="the main process stopped")
        time.sleep(0.5)  # what it sent before it stopped is read
        count = len(n.all("WATCHDOG"))
        time.sleep(4 * WATCHDOG_USEC / 1e6)
        self.assertTrue(lktest.pid_alive(sv))
        self.assertEqual(len(n.all("WATCHDOG")), count)
        w.signal(signal.SIGCONT)
        self.wait_until(lambda: len(n.all("WATCHDOG")) >= count + 2, timeout=30,
                        msg="pings again after SIGCONT")

        mark = len(n.all())
        w.signal(signal.SIGTERM)
        self.assertEqual(w.wait(30), 0)
        stopping = [m[2] for m in n.all()[mark:] if "STOPPING" in m[2]]
        self.assertEqual(len(stopping), 1)
        self.assertTrue(stopping[0]["STATUS"].startswith("stopping: "))
        self.assertEqual({m[1] for m in n.all()}, {w.pid})


if __name__ == "__main__":
    lktest.main()

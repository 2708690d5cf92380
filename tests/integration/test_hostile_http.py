#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=400 split
"""Hostile HTTP clients and hostile text (issue 10, finding 3).

The status listener shares the loop that keeps the ZooKeeper heartbeat. A partial request
left open, a 1 MiB header, more connections than the cap, requests pipelined behind replies
never read and running out of file descriptors must each cost the worker little memory, few
log lines and no heartbeat time; clients holding every connection with keep-alive requests
must not lock others out.
Text from outside must not forge a /metrics sample (a job's name) or a line of `status`
(node data written by any client of the ensemble)."""

import os
import re
import socket
import subprocess
import threading
import time
import urllib.request

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SESSION = "6s"
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
TIMEOUT_S = 10       # the server's time for a request (HTTP_TIMEOUT_S in src/http/http.c)
MAX_CONNECTIONS = 16  # HTTP_MAX_CONNECTIONS
# One sample line of Prometheus' text format: name, optional labels, value.
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*'
                    r'(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})?'
                    r' (-?[0-9.]+(e[+-]?[0-9]+)?|NaN|[+-]Inf)$')


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


def sanitized(pid):
    """True if the process runs with AddressSanitizer's allocator."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sockets(pid):
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def pipeline_without_reading(port, seconds):
    """Send pipelined requests on one connection for `seconds`, never reading a reply;
    return the socket (still open) and the bytes the server took."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.settimeout(0.2)
    burst = b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 2000
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            sent += s.send(burst)
        except socket.timeout:
            pass
        except OSError:
            break  # the server closed it: no harm either
    return s, sent


def closed_by_peer(s, began, timeout):
    """Wait until began + timeout for the server to close s; return the seconds from began
    it took, or None."""
    s.settimeout(0.5)
    while time.monotonic() - began < timeout:
        try:
            if s.recv(65536) == b"":
                return time.monotonic() - began
        except socket.timeout:
            continue
        except OSError:
            return time.monotonic() - began
    return None


class HostileHttpTest(lktest.TestCase):
    def start(self, jobs, name="alpha"):
        self.port = lktest.free_port()
        cfg = self.write_config(name=name, zookeeper={"session_timeout": SESSION},
                                safety=SAFETY, worker={"allow_root_jobs": True}, jobs=jobs,
                                http={"listen": "127.0.0.1:%d" % self.port})
        self.cfg = cfg
        w = self.worker(cfg, name=name)
        w.wait_log(r"registered as", timeout=30)
        return w

    def get(self, path, timeout=30):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path),
                                    timeout=timeout) as r:
            return r.status, r.read().decode()

    def metric(self, name, text=None):
        text = text if text is not None else self.get("/metrics")[1]
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def test_attacks_are_bounded_and_the_heartbeat_keeps_time(self):
        self.start_zookeeper()
        w = self.start({"work": {"command": "sleep 3600"}})
        self.wait_until(lambda: self.metric('leasekeeper_job_running{job_name="work"}') == 1,
                        timeout=60, msg="the job never ran")
        # Baseline: a few heartbeats (every 2 s) of lease-deadline margins, before the attack.
        time.sleep(8)
        _, status = self.get("/status")
        session = re.search(r'"session_id": "(0x[0-9a-f]+)"', status).group(1)
        base_margin = self.metric("leasekeeper_lease_deadline_low_seconds")
        base_rss = rss_kib(w.pid)
        base_sockets = sockets(w.pid)
        mark = w.mark()

        # (a) a partial request, left open: the server closes it after TIMEOUT_S.
        partial = self.connect()
        partial.sendall(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        partial_sent = time.monotonic()
        # (b) 1 MiB headers, never ended, on twelve connections held open.
        big = []
        for _ in range(12):
            s = self.connect()
            try:
                s.sendall(b"GET /status HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20))
            except OSError:
                pass  # the server refused it mid-way: what we want
            big.append(s)
        time.sleep(2)
        big_rss = rss_kib(w.pid)
        for s in big:
            s.close()
        # (c) more connections than the cap, idle.
        idle = [self.connect() for _ in range(4 * MAX_CONNECTIONS)]
        time.sleep(2)
        held = sockets(w.pid) - base_sockets
        cap_rss = rss_kib(w.pid)
        took = closed_by_peer(partial, partial_sent, TIMEOUT_S + 60)
        partial.close()
        for s in idle:
            s.close()
        # (d) requests pipelined for 5 s on one connection, no reply ever read: the server
        # must stop reading ahead, not buffer all of them.
        piped, piped_bytes = pipeline_without_reading(self.port, 5)
        pipe_rss = rss_kib(w.pid)
        piped.close()
        # The listener answers again once the attack is over, with nothing left open (but
        # the request asking); a build without the gauge goes on to fail below.
        self.wait_until(lambda: self.metric("leasekeeper_http_connections") in (1, None),
                        timeout=60, msg="connections stayed open after their clients left")
        metrics = self.get("/metrics")[1]
        margin = self.metric("leasekeeper_lease_deadline_low_seconds", metrics)
        attack_log = [l for l in w.log_text()[mark:].splitlines() if l.strip()]
        print("lease-deadline margin: lowest %.3f s before the attack, %.3f s after it; "
              "partial request closed after %s s; RSS %d KiB, %d KiB with 1 MiB headers, "
              "%d KiB with %d idle connections, %d KiB after %d pipelined bytes; "
              "%d sockets held; %d log lines"
              % (base_margin or -1, margin or -1, "%.1f" % took if took else "never",
                 base_rss, big_rss, cap_rss, len(idle), pipe_rss, piped_bytes, held,
                 len(attack_log)))

        self.assertIsNotNone(took, "the partial request was never closed")
        self.assertLess(took, TIMEOUT_S + 30)
        self.assertLess(big_rss - base_rss, 5 * 1024, "1 MiB headers grew the worker")
        self.assertLess(cap_rss - base_rss, 5 * 1024, "idle connections grew the worker")
        # AddressSanitizer keeps freed memory in quarantine: the thousands of replies that
        # fill the socket buffers grow its RSS by tens of MiB that the worker does not hold.
        self.assertLess(pipe_rss - base_rss, (100 if sanitized(w.pid) else 5) * 1024,
                        "pipelined requests grew the worker")
        # The cap, plus the partial request's connection if it is still counted.
        self.assertLessEqual(held, MAX_CONNECTIONS + 1, "the cap was not kept")
        self.assertLess(len(attack_log), 10, "\n".join(attack_log[:20]))
        # Safety: the deadline never passed, the session and the job lived through it.
        self.assertIn('leasekeeper_job_running{job_name="work"} 1', metrics)
        self.assertIn('leasekeeper_job_runs_total{job_name="work"} 1', metrics)
        self.assertEqual(self.metric("leasekeeper_session_connected", metrics), 1)
        _, status = self.get("/status")
        self.assertEqual(re.search(r'"session_id": "(0x[0-9a-f]+)"', status).group(1), session)
        self.assertTrue(w.alive())
        self.assertIsNotNone(base_margin, "no lease-deadline margin on /metrics")
        self.assertGreater(margin, 0)
        self.assertEqual(self.metric("leasekeeper_http_connections", metrics), 1)

    def test_keepalive_clients_cannot_hold_every_connection(self):
        """Clients on every connection, each sending a request every 3 s (inside the
        per-request timeout) and reconnecting at once when closed, must not keep a new
        client waiting longer than a holder's next request or timeout, and that reply's."""
        self.start_zookeeper()
        self.start({"work": {"command": "sleep 3600"}})
        self.get("/health")
        stop = threading.Event()
        answered = []  # holders that had their first reply
        period = 3
        reconnects = []

        def hold():
            s = self.connect()
            first = True
            while not stop.is_set():
                closed = False
                try:
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    s.settimeout(60)
                    closed = s.recv(4096) == b""
                    s.settimeout(0.2)
                    try:  # the rest of the reply, and the close if it came with it
                        while not closed:
                            closed = s.recv(4096) == b""
                    except socket.timeout:
                        pass
                except OSError:
                    closed = True
                if first:
                    first = False
                    answered.append(1)
                if closed and not stop.is_set():
                    s.close()
                    s = self.connect()  # back at once: into the backlog, behind the new client
                    reconnects.append(time.monotonic())
                stop.wait(period)
            s.close()

        threads = [threading.Thread(target=hold, daemon=True) for _ in range(MAX_CONNECTIONS)]
        for t in threads:
            t.start()
        self.wait_until(lambda: len(answered) == MAX_CONNECTIONS, timeout=60,
                        msg="the holders never had their first replies")
        time.sleep(1)
        began = time.monotonic()
        bound = 2 * TIMEOUT_S + 20
        c = socket.create_connection(("127.0.0.1", self.port), timeout=bound)
        c.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        try:
            answer = c.recv(100)
        except socket.timeout:
            answer = b""
        took = time.monotonic() - began
        c.close()
        stop.set()
        for t in threads:
            t.join(70)
        print("a new client with %d keep-alive holders (a request each %d s) was answered "
              "after %.1f s (bound %d s); holders closed %d times"
              % (MAX_CONNECTIONS, period, took, bound, len(reconnects)))
        self.assertTrue(answer.startswith(b"HTTP/1.1 200"),
                        "no answer in %.1f s: %r" % (took, answer))
        self.assertLess(took, bound)

    def test_out_of_descriptors_pauses_accepting(self):
        """At the open-file limit accept() fails at once, and a listener that does not stop
        spins on it. It pauses with one warning and accepts again when descriptors free."""
        self.start_zookeeper()
        w = self.start({"work": {"command": "sleep 3600"}})
        self.get("/health")
        open_fds = len(os.listdir("/proc/%d/fd" % w.pid))
        soft, hard = subprocess.run(["prlimit", "--pid", str(w.pid), "--nofile", "--raw",
                                     "--noheadings", "--output=SOFT,HARD"], check=True,
                                    capture_output=True, text=True).stdout.split()
        subprocess.run(["prlimit", "--pid", str(w.pid), "--nofile=%d:%s" % (open_fds + 4, hard)],
                       check=True)
        mark = w.mark()
        conns = [self.connect() for _ in range(12)]
        cpu0 = cpu_s(w.pid)
        time.sleep(4)
        spent = cpu_s(w.pid) - cpu0
        text = w.log_text()[mark:]
        for s in conns:
            s.close()
        subprocess.run(["prlimit", "--pid", str(w.pid), "--nofile=%s:%s" % (soft, hard)],
                       check=True)
        lines = [l for l in text.splitlines() if l.strip()]
        print("CPU %.2f s in 4 s at the file limit; %d log lines" % (spent, len(lines)))
        self.assertLess(spent, 1.0, "the accept loop spun")
        self.assertLess(len(lines), 10, "\n".join(lines[:20]))
        self.assertRegex(text, r"http: cannot accept a connection")
        self.wait_until(lambda: self.get("/health", timeout=5)[0] == 200, timeout=60,
                        msg="the listener never accepted again")
        self.assertTrue(w.alive())

    def test_job_names_cannot_inject_metrics(self):
        self.start_zookeeper()
        evil = 'x"} 42 # \\'
        self.start({evil: {"command": "sleep 3600"}, "plain": {"command": "sleep 3600"}})
        self.wait_until(lambda: 'leasekeeper_job_running{job_name="plain"} 1'
                        in self.get("/metrics")[1], timeout=60, msg="plain never ran")
        _, metrics = self.get("/metrics")
        for line in metrics.splitlines():
            if line.startswith("#"):
                continue
            self.assertRegex(line, SAMPLE)
        runs = [l for l in metrics.splitlines() if l.startswith("leasekeeper_job_runs_total")]
        self.assertEqual(len(runs), 2, "\n".join(runs))
        self.assertIn(r'leasekeeper_job_runs_total{job_name="x\"} 42 # \\"}', metrics)
        self.check_metrics(metrics)

    def test_status_escapes_control_characters(self):
        self.start_zookeeper()
        self.start({"work": {"command": "sleep 3600"}})
        kz = self.kazoo()
        # The worker makes the lock's folder when it first takes the lease.
        self.wait_until(lambda: kz.exists("/leasekeeper/mutex/work"), timeout=60,
                        msg="the worker never made the lock's folder")
        forged = "\x1b[2J\x1b]0;owned\x07\nforged-line \x7f\x9b31m"
        kz.create("/leasekeeper/workers/evil", ('{"host": "%s", "pid": 1}'
                                                % forged.replace("\n", "\\n")
                                                .replace("\x1b", "\\u001b")
                                                .replace("\x07", "\\u0007")
                                                .replace("\x7f", "\\u007f")
                                                .replace("\x9b", "\\u009b")).encode())
        kz.create("/leasekeeper/mutex/work/_c_0c3a5e4b-5b7e-4f0e-9a55-3c1e0f6a7b8c-lock-",
                  forged.encode(), sequence=True, ephemeral=True)
        r = subprocess.run([lktest.leasekeeper_bin(), "status", "-c", self.cfg],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        print(out.decode(errors="replace"))
        bad = sorted({b for b in out if (b < 0x20 and b != 0x0a) or b == 0x7f})
        self.assertEqual(bad, [], "raw control bytes in status output")
        self.assertNotIn("\u009b".encode(), out)
        self.assertFalse(any(l.startswith(b"forged-line") for l in out.splitlines()))
        self.assertIn(rb"\x1b[2J", out)
        self.assertEqual(out.count(b"forged-line"), 2)


if __name__ == "__main__":
    lktest.main()

# SPDX-License-Identifier: Apache-2.0
"""Loop liveness: a /livez prober and the many-job configuration of issue 20, shared by
tests/integration/test_liveness.py and scripts/bench --reload."""

import http.client
import re
import threading
import time

__all__ = ["LivezProbe", "many_jobs", "percentile", "scrape", "metric_value"]


def percentile(values, q):
    """Nearest-rank percentile of values (any order); None if empty."""
    v = sorted(values)
    if not v:
        return None
    k = max(1, -(-len(v) * q // 100))
    return v[int(k) - 1]


class LivezProbe(threading.Thread):
    """GET /livez every interval seconds on one kept-alive connection; each answer's latency
    (seconds, from the request's send to the whole answer read) is kept with the time it was
    sent. A request that gets no answer within timeout counts as timeout seconds."""

    def __init__(self, port, interval=0.02, timeout=30.0):
        super().__init__(daemon=True)
        self.port = port
        self.interval = interval
        self.timeout = timeout
        self.samples = []  # (monotonic send time, latency in seconds, status or None)
        self._halt = threading.Event()
        self._conn = None

    def _get(self):
        if self._conn is None:
            self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        self._conn.request("GET", "/livez")
        r = self._conn.getresponse()
        r.read()
        return r.status

    def run(self):
        while not self._halt.is_set():
            t0 = time.monotonic()
            try:
                status = self._get()
            except (OSError, http.client.HTTPException):
                status = None
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
            self.samples.append((t0, time.monotonic() - t0, status))
            left = self.interval - (time.monotonic() - t0)
            if left > 0:
                self._halt.wait(left)

    def stop(self):
        self._halt.set()
        self.join(self.timeout + 5)
        if self._conn is not None:
            self._conn.close()

    def between(self, start, end):
        """Latencies (s) of the requests sent within [start, end] (monotonic)."""
        return [lat for t, lat, _ in self.samples if start <= t <= end]

    def mark(self):
        return time.monotonic()


def many_jobs(continuous, every10, idle, continuous_cmd, idle_version=1, idle_cmd="true"):
    """The jobs of issue 20's case: continuous @continuous jobs running continuous_cmd(name),
    every10 `@every 10s` jobs and idle `@every 1h` jobs; idle_version changes the idle jobs'
    command so that a reload with another version changes every one of them."""
    jobs = {}
    for i in range(continuous):
        name = "cont%03d" % i
        jobs[name] = {"command": continuous_cmd(name), "schedule": "@continuous"}
    for i in range(every10):
        jobs["ten%03d" % i] = {"command": "true", "schedule": "@every 10s"}
    for i in range(idle):
        jobs["idle%05d" % i] = {"command": "%s v%d" % (idle_cmd, idle_version),
                                "schedule": "@every 1h"}
    return jobs


def scrape(port, timeout=30.0):
    """The /metrics text."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        return r.read().decode()
    finally:
        c.close()


def metric_value(text, name, labels=None):
    """The value of one sample of name (with exactly these labels, a dict), or None."""
    want = ""
    if labels:
        want = "{" + ",".join('%s="%s"' % kv for kv in sorted(labels.items())) + "}"
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)", line)
        if not m or m.group(1) != name:
            continue
        got = m.group(2) or ""
        if got:
            pairs = sorted(re.findall(r'(\w+)="([^"]*)"', got))
            got = "{" + ",".join('%s="%s"' % kv for kv in pairs) + "}"
        if got == want:
            return float(m.group(3))
    return None


def term_counts(path):
    """{job: number of SIGTERMs received, job: starts} from the lines continuous jobs wrote
    ("start NAME" / "term NAME"): ({name: starts}, {name: terms})."""
    starts, terms = {}, {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 2:
                    continue
                d = starts if parts[0] == "start" else terms if parts[0] == "term" else None
                if d is not None:
                    d[parts[1]] = d.get(parts[1], 0) + 1
    except FileNotFoundError:
        pass
    return starts, terms


__all__.append("term_counts")


def continuous_command(path):
    """A continuous job's command that writes "start NAME" when it starts and "term NAME"
    when it gets SIGTERM, into path (one line each, appended: atomic at this size)."""
    def cmd(name):
        return ("echo start %s >> %s; trap 'echo term %s >> %s; exit 143' TERM; "
                "sleep 100000 & wait" % (name, path, name, path))
    return cmd


__all__.append("continuous_command")

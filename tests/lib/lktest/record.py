# SPDX-License-Identifier: Apache-2.0
"""Safety records: who ran when, and whether two holders of one lease ever overlapped.

Jobs under test run `lk-record` (tests/tools/lk-record.c), Curator peers write the same format,
and DeathWatcher adds the moment each recorded process died. One line per event, appended
with a single write() to a shared file:

    start   WHO PID T_NS [job=J] [fence=F] [node=N] [leases=L] [tick=T] [run=R] [pgid=G] [born=B]
            [slot=S] [wall=W]
    end     WHO PID T_NS [reason=R] [wall=W]
    overlap WHO PID T_NS [slot=S] [wall=W]
    death   WHO PID T_NS

T_NS is CLOCK_MONOTONIC in nanoseconds (time.monotonic_ns(), System.nanoTime() on Linux);
W, from lk-record, CLOCK_REALTIME in nanoseconds.
An interval runs from a `start` to the first `end` or `death` of the same pid after it; one
with neither is still running (end = +inf). `overlap` lines come from lk-record's flock check:
the kernel saw another instance still holding the lock file when this one started (so it is
exact, independent of any timing).
"""

import collections
import os
import select
import threading
import time

__all__ = ["Record", "Recorder", "DeathWatcher", "OverlapReport", "check_overlaps",
           "parse_records", "kill_recorded"]

INF = float("inf")

Record = collections.namedtuple("Record", "kind who pid t_ns fields")
Record.__doc__ = "One line of a record file; fields is a dict of the key=value extras."

Interval = collections.namedtuple("Interval", "who pid start end fields")


def parse_line(line):
    """A Record from one line, or None for a blank or malformed one."""
    parts = line.split()
    if len(parts) < 4 or parts[0] not in ("start", "end", "overlap", "death", "daemon",
                                          "daemon-death"):
        return None
    try:
        pid, t_ns = int(parts[2]), int(parts[3])
    except ValueError:
        return None
    fields = {}
    for p in parts[4:]:
        k, sep, v = p.partition("=")
        if sep:
            fields[k] = v
    return Record(parts[0], parts[1], pid, t_ns, fields)


def parse_records(text):
    """Records from the text of a record file (a partial last line is ignored)."""
    out = []
    lines = text.split("\n")
    if lines and lines[-1] != "":
        lines = lines[:-1]  # still being written
    for line in lines:
        r = parse_line(line)
        if r:
            out.append(r)
    return out


class Recorder:
    """Reads a record file: Recorder(path).records()."""

    def __init__(self, path):
        self.path = str(path)

    def records(self):
        try:
            with open(self.path, "r", errors="replace") as f:
                return parse_records(f.read())
        except FileNotFoundError:
            return []

    def starts(self, who=None):
        return [r for r in self.records() if r.kind == "start" and (who is None or r.who == who)]

    def count(self, kind, who=None):
        return sum(1 for r in self.records() if r.kind == kind and (who is None or r.who == who))

    def wait_for(self, kind, count=1, who=None, timeout=10.0):
        """Wait until at least `count` records of `kind` (by `who`) exist; return them."""
        deadline = time.monotonic() + timeout
        while True:
            rs = [r for r in self.records() if r.kind == kind and (who is None or r.who == who)]
            if len(rs) >= count:
                return rs
            if time.monotonic() >= deadline:
                raise TimeoutError("%s: %d of %d %r records after %.1f s" %
                                   (self.path, len(rs), count, kind, timeout))
            time.sleep(0.02)

    def check(self, leases=1, **kw):
        return check_overlaps(self.records(), leases=leases, **kw)


class DeathWatcher(threading.Thread):
    """Follows a record file and appends `death WHO PID T_NS` when a started pid exits, and
    `daemon-death WHO PID T_NS` when a daemon (its `daemon` line) does.

    It opens a pidfd for each new `start` pid and polls them; the death time is taken when
    the pidfd turns readable, so it is at most a few milliseconds late (later, never earlier,
    than the real exit: intervals only get longer, overlaps are never hidden). A pid that is
    already gone when first seen gets a death line at once, unless it already has an `end`.
    Use start() / stop(); stop() does a final pass over the file first.
    """

    def __init__(self, path, interval=0.01):
        super().__init__(name="lktest-deathwatcher", daemon=True)
        self.path = str(path)
        self.interval = interval
        self._offset = 0
        self._partial = ""
        self._watch = {}  # pidfd -> (who, pid, the kind of line its death adds)
        self._seen = set()
        self._ended = set()
        self._poll = select.poll()
        self._stopping = threading.Event()
        self._rd, self._wr = os.pipe()
        self._poll.register(self._rd, select.POLLIN)
        self.pids = {}  # pid -> who, every pid ever seen starting
        self.pgids = set()

    def _append(self, line):
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def _scan(self):
        try:
            with open(self.path, "r", errors="replace") as f:
                f.seek(self._offset)
                data = f.read()
                self._offset = f.tell()
        except FileNotFoundError:
            return
        text = self._partial + data
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            r = parse_line(line)
            if r is None:
                continue
            if r.kind in ("end", "death"):
                self._ended.add(r.pid)
            elif r.kind == "daemon":  # a daemon a run started: its death is kept apart
                try:
                    fd = os.pidfd_open(r.pid)
                except ProcessLookupError:
                    self._append("daemon-death %s %d %d\n" % (r.who, r.pid, time.monotonic_ns()))
                    continue
                self._watch[fd] = (r.who, r.pid, "daemon-death")
                self._poll.register(fd, select.POLLIN)
            elif r.kind == "start":
                if "pgid" in r.fields:
                    try:
                        self.pgids.add(int(r.fields["pgid"]))
                    except ValueError:
                        pass
                self._ended.discard(r.pid)
                self.pids[r.pid] = r.who
                if r.pid in self._seen:
                    continue
                self._seen.add(r.pid)
                try:
                    fd = os.pidfd_open(r.pid)
                except ProcessLookupError:
                    if r.pid not in self._ended:
                        self._append("death %s %d %d\n" % (r.who, r.pid, time.monotonic_ns()))
                    continue
                self._watch[fd] = (r.who, r.pid, "death")
                self._poll.register(fd, select.POLLIN)

    def run(self):
        while not self._stopping.is_set():
            self._scan()
            for fd, _ in self._poll.poll(self.interval * 1000):
                if fd == self._rd:
                    continue
                t = time.monotonic_ns()
                who, pid, kind = self._watch.pop(fd)
                self._poll.unregister(fd)
                os.close(fd)
                if kind == "death":
                    self._seen.discard(pid)  # the pid may be reused by a later start
                self._append("%s %s %d %d\n" % (kind, who, pid, t))
        self._scan()

    def stop(self):
        """Stop following (after one last pass) and close the pidfds; idempotent."""
        self._stopping.set()
        try:
            os.write(self._wr, b"x")
        except OSError:
            pass
        if self.is_alive():
            self.join(5)
        for fd in list(self._watch):
            os.close(fd)
        self._watch.clear()
        for fd in (self._rd, self._wr):
            try:
                os.close(fd)
            except OSError:
                pass
        self._rd = self._wr = -1


class OverlapReport:
    """What check_overlaps() found.

    overlaps: starts that found `leases` or more intervals already running;
    flock_overlaps: `overlap` lines (lk-record's kernel-checked flock found a live holder);
    min_gap_ns: the smallest hand-over time: from the moment all `leases` stopped being
        taken (an interval ended while `leases` ran) to the next start; None if no
        hand-over happened (negative gaps do not exist: those are overlaps);
    max_concurrent: the most intervals running at once;
    fence_regressions: starts (leases = 1) whose fence token was below an earlier one, or
        equal to it on another node;
    intervals: every Interval, by start; violations: one readable line per problem.
    """

    def __init__(self):
        self.overlaps = 0
        self.flock_overlaps = 0
        self.min_gap_ns = None
        self.max_concurrent = 0
        self.fence_regressions = 0
        self.intervals = []
        self.violations = []

    @property
    def total(self):
        """overlaps + flock_overlaps + fence_regressions: 0 when the run was safe."""
        return self.overlaps + self.flock_overlaps + self.fence_regressions

    def __repr__(self):
        return ("OverlapReport(overlaps=%d, flock_overlaps=%d, fence_regressions=%d, "
                "min_gap_ms=%s, max_concurrent=%d, intervals=%d)" %
                (self.overlaps, self.flock_overlaps, self.fence_regressions,
                 None if self.min_gap_ns is None else "%.3f" % (self.min_gap_ns / 1e6),
                 self.max_concurrent, len(self.intervals)))

    def describe(self):
        return repr(self) + "".join("\n  " + v for v in self.violations)


def intervals_of(records, job=None, who=None):
    """The Intervals in records (optionally only starts with job=J or by WHO)."""
    ordered = sorted(enumerate(records), key=lambda ir: (ir[1].t_ns, ir[0]))
    open_by_pid = {}
    out = []
    for _, r in ordered:
        if r.kind == "start":
            if job is not None and r.fields.get("job") != job:
                continue
            if who is not None and r.who != who:
                continue
            prev = open_by_pid.pop(r.pid, None)
            if prev is not None:
                # A second start by a pid that never ended: count its first interval as
                # lasting until now (the conservative reading).
                out[prev] = out[prev]._replace(end=r.t_ns)
            open_by_pid[r.pid] = len(out)
            out.append(Interval(r.who, r.pid, r.t_ns, INF, r.fields))
        elif r.kind in ("end", "death"):
            i = open_by_pid.pop(r.pid, None)
            if i is not None:
                out[i] = out[i]._replace(end=r.t_ns)
    out.sort(key=lambda iv: (iv.start, iv.pid))
    return out


def check_overlaps(records, leases=1, job=None, who=None):
    """Check records (from Recorder.records()) for more than `leases` concurrent holders.

    Returns an OverlapReport. An end and a start at the same nanosecond do not overlap.
    """
    rep = OverlapReport()
    rep.intervals = intervals_of(records, job=job, who=who)
    events = []
    for n, iv in enumerate(rep.intervals):
        events.append((iv.start, 1, n))
        if iv.end != INF:
            events.append((iv.end, 0, n))  # ends sort before starts at the same time
    events.sort()
    running = set()
    freed_at = None  # when concurrency last dropped from `leases` to below it
    for t, kind, n in events:
        iv = rep.intervals[n]
        if kind == 0:
            if len(running) == leases:
                freed_at = t
            running.discard(n)
            continue
        if len(running) >= leases:
            rep.overlaps += 1
            others = sorted(running, key=lambda k: rep.intervals[k].start)
            rep.violations.append(
                "overlap: %s pid %d started at %d while %s ran" %
                (iv.who, iv.pid, t, ", ".join("%s pid %d (since %d, until %s)" % (
                    rep.intervals[k].who, rep.intervals[k].pid, rep.intervals[k].start,
                    rep.intervals[k].end) for k in others)))
        elif freed_at is not None:
            gap = t - freed_at
            if rep.min_gap_ns is None or gap < rep.min_gap_ns:
                rep.min_gap_ns = gap
            freed_at = None
        running.add(n)
        rep.max_concurrent = max(rep.max_concurrent, len(running))
    for r in records:
        if r.kind == "overlap" and (who is None or r.who == who):
            if job is not None and r.fields.get("job", job) != job:
                continue
            rep.flock_overlaps += 1
            rep.violations.append("flock overlap: %s pid %d at %d found the lock file held"
                                  % (r.who, r.pid, r.t_ns))
    if leases == 1:
        best = None  # (fence, node)
        for iv in rep.intervals:
            f = iv.fields.get("fence")
            if f is None or not f.lstrip("-").isdigit():
                continue
            fence, node = int(f), iv.fields.get("node")
            if best is not None and (fence < best[0] or (fence == best[0] and node != best[1])):
                rep.fence_regressions += 1
                rep.violations.append("fence: %s pid %d started with fence %d after fence %d"
                                      " (node %s)" % (iv.who, iv.pid, fence, best[0], best[1]))
            if best is None or fence > best[0]:
                best = (fence, node)
    return rep



def heartbeats(path):
    """{daemon pid: (who, parent run pid, first beat, last beat)} from the heartbeat file that
    lk-record --daemon HB_FILE writes."""
    from .case import read_text
    out = {}
    for line in read_text(path).splitlines():
        p = line.split()
        if len(p) == 5 and p[0] == "hb":
            pid, t = int(p[2]), int(p[4])
            first = out[pid][2] if pid in out else t
            out[pid] = (p[1], int(p[3]), first, t)
    return out

def _proc_stat(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return None
    r = stat.rindex(b")")
    comm = stat[stat.index(b"(") + 1 : r].decode("utf-8", "replace")
    rest = stat[r + 2 :].split()
    return comm, rest[0].decode(), int(rest[2])  # comm, state, pgrp


def _cmdline_has(pid, what):
    """Whether process pid's command line holds the text what."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return what.encode() in f.read()
    except OSError:
        return False


def kill_recorded(pids=(), pgids=(), comm="lk-record", sig=None, cmdline_has=None):
    """SIGKILL (or send sig; 0 only counts) every live process named `comm` whose pid or
    process group was recorded (and, with cmdline_has, whose command line holds it: a pid
    reused by another test's lk-record is not ours).

    The safety net for jobs a broken worker left behind (lk-record's grandchildren have no
    PDEATHSIG on purpose). Returns how many processes were found.
    """
    import signal

    if sig is None:
        sig = signal.SIGKILL
    pids, pgids = set(pids), set(pgids)
    pgids.discard(os.getpgrp())
    n = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        st = _proc_stat(pid)
        if st is None or st[0] != comm or st[1] in ("Z", "X"):
            continue
        if pid in pids or st[2] in pgids:
            if cmdline_has is not None and not _cmdline_has(pid, cmdline_has):
                continue
            n += 1
            if sig:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
    return n

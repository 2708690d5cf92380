# SPDX-License-Identifier: Apache-2.0
"""The torture checker: counts what a torture run broke, from its history (see
docs/reliability.md). Pure functions over plain data, so tests/unit/test_torture_checker.py
can feed it synthetic histories.

A history is a dict:

    jobs      {name: {"schedule": "@continuous" | "@every Ns" | "cron * * * * *"
                      (minute steps only: "*/K * * * *"), "leases": N, "per_tick": K,
                      "lock": LOCK, "judge_ticks": bool, "start_deadline_s": S}}
    window    [FROM, TO]: wall seconds; ticks in it must be run or recorded
    T_s       the session timeout (needless kills: no fault in the T before the kill)
    faults    [{"kind", "targets": [worker...] or ["*"], "start", "end"}] wall seconds
    pauses    [{"job", "start", "end"}] wall seconds (operator pause .. resume, as intended;
              judged by only in a history without ops)
    ops       [{"cmd": "pause" | "resume", "job", "start", "end", "out"}]: the operator's
              commands as they ran (wall seconds) and what each printed; the pauses the
              checker judges by are the ones these outputs say ZooKeeper held (pause_spans)
    zk_losses [wall seconds] when a ZooKeeper server dropped transactions the new leader
              lacked (its log: "Truncating log to get in sync with the leader", "Cannot send
              TRUNC"): acknowledged writes of the LOSS_WINDOW_S before may be lost (finding 5)
    runs_logged {job: [{"name", "zxid", "tick", "outcome", "servers": [...], "deleted"}]}:
              the run records the servers' transaction logs hold (lktest.zklog.runs_logged);
              a tick whose record a majority of servers logged, never deleted, and missing from
              the final state was lost by ZooKeeper (finding 18), not by leasekeeper
    servers   how many servers the ensemble has (a majority of them commits a write)
    stalls    [[FROM, TO]] wall seconds in which the host's stall meter (lktest.stallmeter),
              at the workers' priority, was not scheduled: a record stamped late by a process
              that could not run then is reported as stalled_records, not as a disagreement
    skew      {worker: seconds its clock was set ahead (negative: behind)}
    lines     record-file lines as dicts: {"kind", "who", "pid", "mono", "wall" (ns), and the
              lk-record fields: job, fence, node, tick, slot, ...}; death lines carry "wall"
              computed from their monotonic time
    heartbeats {lk-record pid: [(who, first, last, died)]: wall ns of the first and last
              heartbeat of each daemon a run with that pid started on worker who (pids are
              reused over an hour: a daemon counts for the run whose life holds its first
              beat), and of its death as the DeathWatcher saw it (0: not seen; a 3-tuple is
              taken too); a bare int (the last beat) is still taken}
    runs      {job: [run record dicts as read from ZooKeeper, plus "_ctime_ms": when the
              server created the record node (its clock)]}
    lock_nodes    lock contender nodes left in ZooKeeper after every worker stopped
    worker_nodes  registration nodes left
    leftover_processes, leftover_cgroups, crashes, sanitizer: lists of strings
    hostile_accepted: writes of the credential-less client that ZooKeeper accepted

check(history) returns a Report: counts (an ordered dict), details {item: [text]}, failed().
"""

import calendar
import collections
import re
import time

__all__ = ["check", "Report", "ITEMS", "expected_ticks", "parse_tick"]

# Every item counted, in print order; INFO items never fail the run.
ITEMS = (
    "overlaps",             # an flock held by another copy: two holders of one slot, or > leases
    "time_overlaps",        # more than `leases` runs of one lock alive at once, by the times
    "fence_regressions",    # leases = 1: a later holder with an older fencing token
    "ticks_twice",          # a tick started more than per_tick times
    "ticks_lost",           # a tick in the window neither started nor recorded
    "false_reasons",        # recorded missed/paused although it ran, or paused when not paused
    "needless_kills",       # killed with no fault on its worker in the T before (reported)
    "zk_loss_reasons",      # a reason false only by a write ZooKeeper lost (reported)
    "zk_loss_ticks",        # a tick run twice only after ZooKeeper lost a claim (reported)
    "zk_lost_records",      # a tick its worker said it recorded, whose record ZooKeeper lost
    "record_disagreements",  # run record start/end vs the job's own lines, > 100 ms
    "stalled_records",      # a disagreement a measured host stall explains (reported)
    "orphan_lock_nodes",    # lock contenders left after every worker stopped
    "leftovers",            # processes or run cgroups left after every worker stopped
    "worker_crashes",       # a worker (or supervisor) that died without the nemesis
    "sanitizer_reports",
    "hostile_accepted",     # writes the credential-less client got through
)
INFO = ("needless_kills", "zk_loss_reasons", "zk_loss_ticks", "zk_lost_records",
        "stalled_records")
TOLERANCE_NS = 100 * 1000 * 1000
# A server that drops transactions at t (zk_losses) may drop what was acknowledged in the
# LOSS_WINDOW_S before: the lost claims of finding 9 were 5 to 12 s old.
LOSS_WINDOW_S = 30.0
# A command's write whose outcome it was not told (src/cli/control.c, zerror()).
UNKNOWN_WRITE = r"cannot write \S+: (connection loss|operation timeout|session expired)"


class Report:
    def __init__(self):
        self.counts = collections.OrderedDict((k, 0) for k in ITEMS)
        self.details = collections.defaultdict(list)
        self.info = collections.OrderedDict()

    def add(self, item, text):
        self.counts[item] += 1
        if len(self.details[item]) < 50:
            self.details[item].append(text)

    def failed(self):
        """The items that fail the run (everything but needless kills)."""
        return [k for k, v in self.counts.items() if v and k not in INFO]

    def describe(self, details=True):
        out = []
        for k, v in self.counts.items():
            out.append("%-22s %d%s" % (k, v, "  (reported, not failing)" if k in INFO else ""))
        for k, v in self.info.items():
            out.append("%-22s %s" % (k, v))
        if details:
            for k in ITEMS:
                for d in self.details.get(k, []):
                    out.append("  %s: %s" % (k, d))
        return "\n".join(out)


def parse_tick(text):
    """Epoch seconds of LEASEKEEPER_TICK (2026-01-02T03:04:05Z), or None."""
    try:
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None


def expected_ticks(schedule, start, end):
    """The ticks of a schedule in [start, end] (epoch seconds): "@every Ns" counts from the
    epoch; "cron */K * * * *" (or "* * * * *") every K minutes, UTC. None: not judged."""
    m = re.fullmatch(r"@every (\d+)s", schedule or "")
    if m:
        step = int(m.group(1))
    else:
        m = re.fullmatch(r"cron (\*|\*/(\d+)) \* \* \* \*", schedule or "")
        if not m:
            return None
        step = 60 * int(m.group(2) or 1)
    first = -(-int(start) // step) * step
    return list(range(first, int(end) + 1, step))


def _lock_groups(jobs):
    groups = collections.defaultdict(list)
    for name, j in jobs.items():
        groups[j.get("lock", name)].append(name)
    return groups


def _intervals(lines):
    """Per pid: its start line and its end (first end or death after it; None: running)."""
    out, open_ = [], {}
    for ln in sorted(lines, key=lambda x: x["mono"]):
        if ln["kind"] == "start":
            open_[ln["pid"]] = [ln, None]
            out.append(open_[ln["pid"]])
        elif ln["kind"] in ("end", "death") and ln["pid"] in open_:
            open_.pop(ln["pid"])[1] = ln
    return out


def _check_overlaps(h, rep):
    for ln in h["lines"]:
        if ln["kind"] == "overlap":
            rep.add("overlaps", "%s pid %s (job %s, slot %s) found its lock held at wall %.3f"
                    % (ln["who"], ln["pid"], ln.get("job"), ln.get("slot", "-"),
                       ln["wall"] / 1e9))
    jobs = h["jobs"]
    for lock, names in _lock_groups(jobs).items():
        leases = min(jobs[n].get("leases", 1) for n in names)
        ivs = [iv for iv in _intervals(h["lines"]) if iv[0].get("job") in names]
        events = []
        for s, e in ivs:
            events.append((s["mono"], 1, s))
            if e is not None:
                events.append((e["mono"], 0, s))  # an end before a start at the same instant
        alive = 0
        for _, kind, s in sorted(events, key=lambda x: (x[0], x[1])):
            alive += 1 if kind else -1
            if kind and alive > leases:
                rep.add("time_overlaps", "lock %s: %d runs alive when %s pid %s (job %s) "
                        "started" % (lock, alive, s["who"], s["pid"], s.get("job")))
        if leases == 1:
            best = None
            for s, _ in sorted(ivs, key=lambda iv: iv[0]["mono"]):
                try:
                    f = int(s.get("fence", ""))
                except ValueError:
                    continue
                if best is not None and (f < best[0] or (f == best[0] and s["who"] != best[1])):
                    rep.add("fence_regressions", "lock %s: %s started with fence %d after "
                            "fence %d of %s" % (lock, s["who"], f, best[0], best[1]))
                if best is None or f >= best[0]:
                    best = (f, s["who"])


def _check_ticks(h, rep):
    starts = collections.defaultdict(list)
    for ln in h["lines"]:
        if ln["kind"] == "start" and ln.get("tick"):
            starts[(ln.get("job"), parse_tick(ln["tick"]))].append(ln)
    for name, j in h["jobs"].items():
        per_tick = j.get("per_tick", 1)
        records = collections.defaultdict(list)
        for r in h["runs"].get(name, []):
            if isinstance(r.get("tick"), int):
                records[r["tick"]].append(r)
        for (job, tick), ls in starts.items():
            if job == name and len(ls) > per_tick:
                item = "zk_loss_ticks" if _lost_start(h, ls, per_tick) else "ticks_twice"
                rep.add(item, "job %s tick %s started %d times (per_tick %d): %s"
                        % (name, tick, len(ls), per_tick, ", ".join(x["who"] for x in ls)))
        for tick, rs in records.items():
            for r in rs:
                _judge_reason(h, rep, name, tick, r, starts.get((name, tick)))
        if not j.get("judge_ticks", True):
            continue
        # A tick due before the job's record was made was never the job's (a new job starts
        # with its next tick).
        start = max(h["window"][0], j.get("created", 0))
        ticks = expected_ticks(j.get("schedule"), start, h["window"][1])
        for tick in ticks or []:
            if not starts.get((name, tick)) and not records.get(tick):
                said = _said_lost(h, name, tick)
                logged = _logged_lost(h, name, tick)
                why = ""
                if said:
                    why = "; %s said at %s it recorded it, before a ZooKeeper log " \
                          "truncation" % said
                elif logged:
                    why = "; ZooKeeper committed its record %s (%s, zxid 0x%x, in the logs " \
                          "of %s) and lost it under another create of that name" % (
                              logged["name"], logged["outcome"], logged["zxid"],
                              ", ".join(logged["servers"]))
                    # what the record said is judged as if ZooKeeper had kept it
                    rec = dict(logged.get("record") or {}, _ctime_ms=logged.get("ms", 0))
                    _judge_reason(h, rep, name, tick, rec, None)
                rep.add("zk_lost_records" if why else "ticks_lost",
                        "job %s tick %s (%s): not started, no record%s"
                        % (name, tick, time.strftime("%H:%M:%S", time.gmtime(tick)), why))


def _judge_reason(h, rep, name, tick, r, started):
    """A missed or paused record of tick against what ran and what ZooKeeper held."""
    why = r.get("outcome", r.get("reason"))
    if why in ("missed", "paused") and started:
        who = started[0]["who"]
        if why == "missed" and _lost_claim(h, r, started):
            rep.add("zk_loss_reasons", "job %s tick %s recorded missed by %s after a "
                    "ZooKeeper log truncation that may have dropped the claim %s ran it on" % (
                        name, tick, r.get("node"), who))
        else:
            rep.add("false_reasons", "job %s tick %s recorded %s by %s but started by %s"
                    % (name, tick, why, r.get("node"), who))
    elif why == "missed" and "_ctime_ms" in r and r["_ctime_ms"] / 1000.0 < tick - 1.0:
        # before the tick's time (a claim of a later tick skips the earlier ones still
        # inside their start_deadline: that is the catch-up policy)
        rep.add("false_reasons", "job %s tick %s recorded missed by %s at %s, %.1f s before "
                "the tick's time" % (name, tick, r.get("node"),
                                     time.strftime("%H:%M:%S",
                                                   time.gmtime(r["_ctime_ms"] / 1000)),
                                     tick - r["_ctime_ms"] / 1000.0))
    elif why == "paused" and not _paused(h, name, tick, until=_pending_until(h, name, tick, r)):
        if _paused(h, name, tick, lossy=True, until=_pending_until(h, name, tick, r)):
            rep.add("zk_loss_reasons", "job %s tick %s recorded paused by %s; the resume "
                    "before it was acknowledged just before a ZooKeeper log truncation"
                    % (name, tick, r.get("node")))
        else:
            rep.add("false_reasons", "job %s tick %s recorded paused by %s; the job was not "
                    "paused then" % (name, tick, r.get("node")))


def _pending_until(h, name, tick, r):
    """Until when a tick recorded not run may have waited to start: its start_deadline, and
    no later than its record (a pause that came while it waited, e.g. for the lease, is why
    it did not run)."""
    until = tick + h["jobs"].get(name, {}).get("start_deadline_s", 0)
    if "_ctime_ms" in r:
        until = min(until, r["_ctime_ms"] / 1000.0)
    return until


def _said_lost(h, name, tick):
    """(who, when) if a worker's log said it recorded tick missed or paused and a server
    dropped transactions (zk_losses) within LOSS_WINDOW_S after: the record may be among
    them. None otherwise."""
    for s in h.get("said_missed", []):
        if s["job"] == name and s["tick"] is not None and int(s["tick"]) == tick and \
                s["at"] is not None and \
                _loss_after(h, s["at"]) is not None:
            return (s["who"], time.strftime("%H:%M:%S", time.gmtime(s["at"])))
    return None


def _logged_lost(h, name, tick):
    """The record of tick that ZooKeeper committed and then lost, if the servers' logs show
    it: a majority of the servers logged its create, no delete or data set of it came after,
    and another create of the same name was logged with no delete between the two (finding
    18: a server that replayed an older epoch's creates under the same sequential names; a
    consistent ZooKeeper never logs a second create of an existing node). Anything else that
    keeps a record out of the final state stays a lost tick, to be traced by hand."""
    need = h.get("servers", 3) // 2 + 1
    for r in h.get("runs_logged", {}).get(name, []):
        if r["tick"] == tick and len(set(r["servers"])) >= need and not r["deleted"] and \
                r.get("shadowed"):
            return r
    return None


def iso_seconds(text):
    """Seconds of an ISO 8601 time (a log line's), or None."""
    return _iso_s(text)


def _loss_after(h, t):
    """The first ZooKeeper loss (zk_losses) that may have dropped a write acknowledged at t."""
    after = [x for x in h.get("zk_losses", []) if t <= x <= t + LOSS_WINDOW_S]
    return min(after) if after else None


def _lost_start(h, starts, per_tick):
    """A tick started more than per_tick times, each start past the per_tick-th only after a
    server dropped transactions (zk_losses) that may hold an earlier start's claim: what
    ZooKeeper acknowledged and then lost (finding 9), not a claim leasekeeper skipped."""
    ls = sorted(starts, key=lambda x: x["wall"])
    for i in range(per_tick, len(ls)):
        later = ls[i]["wall"] / 1e9
        if not any(_loss_after(h, s["wall"] / 1e9) is not None and
                   _loss_after(h, s["wall"] / 1e9) <= later for s in ls[:i]):
            return False
    return True


def _lost_claim(h, r, started):
    """A tick recorded missed, started elsewhere: true to what the recorder read if every
    start's claim was acknowledged before a loss that the record was written after."""
    if "_ctime_ms" not in r:
        return False
    for s in started:
        loss = _loss_after(h, s["wall"] / 1e9)
        if loss is None or r["_ctime_ms"] / 1000.0 < loss:
            return False
    return True


def _iso_after(pattern, text):
    """Seconds of the ISO 8601 time pattern's group captures in text, or None."""
    m = re.search(pattern, text or "")
    return _iso_s(m.group(1)) if m else None


def pause_spans(ops, losses=(), lossy=False):
    """The pauses ZooKeeper held, by job, from the operator's commands and their output:
    [(job, start, end)]. A pause opens at the time its output says it was written ("paused
    by U at T"; "already paused ... since T": the pause of T, still there when it was read,
    even if a resume was told "resumed" in between and ZooKeeper lost that); a resume
    closes the job's pause when it ends if its output says "resumed" ("not paused", a
    failure: nothing written, but a pause whose write was cut off by a connection loss may
    have written: from its start). lossy: a resume acknowledged in the
    LOSS_WINDOW_S before a loss (zk_losses) closes nothing (ZooKeeper may have dropped it)."""
    h = {"zk_losses": list(losses)}
    events, spans = [], []
    for op in ops:
        out = op.get("out", "")
        if op.get("cmd") == "pause":
            t = _iso_after(r": paused by .* at (\S+Z)", out)
            since = _iso_after(r": already paused by .* since \"?([^\s\"]+Z)", out)
            if t is None and re.search(UNKNOWN_WRITE, out):
                t = op["start"]  # its write went out; whether it landed, nobody was told
            if t is not None:
                events.append((t, 1, op["job"]))
            if since is not None:  # held from since to the read, and on from there
                spans.append((op["job"], since, op["end"]))
                events.append((op["end"], 1, op["job"]))
        elif op.get("cmd") == "resume" and re.search(r": resumed\b", out):
            if not (lossy and _loss_after(h, op["end"]) is not None):
                events.append((op["end"], 0, op["job"]))
    open_ = {}
    for t, kind, job in sorted(events):
        if kind == 1:
            open_.setdefault(job, t)
        elif job in open_:
            spans.append((job, open_.pop(job), t))
    spans += [(job, t, float("inf")) for job, t in open_.items()]
    return spans


def _paused(h, job, tick, slack=3.0, lossy=False, until=None):
    """Whether job was paused at tick, or after it until `until` (a tick not yet started
    when a pause came is the pause's), within slack: as the operator's commands say
    ZooKeeper held it (ops), or, in a history without them, as the nemesis meant it (pauses:
    from the pause's issue to the resume's, which the commands may not have kept to)."""
    until = tick if until is None else max(tick, until)
    if "ops" in h:
        spans = pause_spans(h["ops"], h.get("zk_losses", []), lossy)
    else:
        spans = [(p["job"], p["start"], p["end"]) for p in h.get("pauses", [])]
    return any(j == job and start - slack <= until and tick <= end + slack
               for j, start, end in spans)


def _faulted(h, worker, t, span):
    """Whether a fault touched worker (or everyone) in [t - span, t]. t is a record's time,
    cut to the millisecond: a fault the harness stamped later within that millisecond came
    before it (seed 6015: a supervisor SIGKILLed at .88202, its run's end recorded .882)."""
    for f in h.get("faults", []):
        if ("*" in f["targets"] or worker in f["targets"]) and \
                f["start"] < t + 0.001 and f["end"] >= t - span:
            return f
    return None


def _iso_s(text):
    """Seconds of an ISO 8601 time with optional fraction and Z (the run records' format)."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?", text or "")
    if not m:
        return None
    t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    frac = float(m.group(2)) if m.group(2) else 0.0
    tz = m.group(3)
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        t -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return t + frac


def _main_killed(h, node, r):
    """Whether node's main process was SIGKILLed (a kill-main fault) between when the run
    was asked to start (its record's "asked", node's clock) and when its record was made."""
    asked = _iso_s(r.get("asked"))
    if asked is None:
        return False
    asked -= h.get("skew", {}).get(node, 0)
    upto = r["_ctime_ms"] / 1000.0 if "_ctime_ms" in r else h["window"][1]
    return any(f["kind"] == "kill-main" and node in f["targets"] and
               asked - 1.0 <= f["start"] <= upto for f in h.get("faults", []))


def _check_kills(h, rep):
    span = h.get("T_s", 10) + 2.0
    for name, runs in h["runs"].items():
        for r in runs:
            if r.get("outcome") != "killed":
                continue
            node = r.get("node")
            if r.get("kill_reason") == "main_gone" and r.get("end") is None:
                # Recorded by the worker's next process (its journal): true only if its
                # main process was killed while the run was asked for or ran.
                if not _main_killed(h, node, r):
                    rep.add("false_reasons", "job %s run %s recorded killed (main_gone) by "
                            "%s's next process; its main was not killed then"
                            % (name, r.get("run_id"), node))
                continue
            end = _iso_s(r.get("end"))
            if end is None:
                continue
            end -= h.get("skew", {}).get(node, 0)
            if not _faulted(h, node, end, span):
                rep.add("needless_kills", "job %s on %s killed at %s with no fault on it in "
                        "the %.0f s before" % (name, node, r.get("end"), span))


DAEMON_GAP_NS = 2 * 10**9  # a daemon beats every 20 ms: a longer silence is another's life


def daemon_lives(beats, deaths):
    """The heartbeats item of a history from the daemons' beats [(who, daemon pid, run pid,
    wall ns)] and the DeathWatcher's deaths {(who, daemon pid): [wall ns]}: {run pid: [(who,
    first, last, died)]}. Over an hour the same worker reuses pids, for a run and for its
    daemon both (seed 6007: w4's daemon job ran as pid 13408 with its daemon 13412 at 23:52
    and again at 00:52), so one (who, pid, run pid) is split into lives: at a death seen
    between two beats, or a silence of more than DAEMON_GAP_NS. died is the first death seen
    after the life's last beat (0: none)."""
    by_key = collections.defaultdict(list)
    for who, pid, run_pid, t in beats:
        by_key[(who, pid, run_pid)].append(t)
    out = {}
    for (who, pid, run_pid), ts in by_key.items():
        ds = sorted(deaths.get((who, pid), []))
        ts.sort()
        lives = [[ts[0], ts[0]]]
        for t in ts[1:]:
            prev = lives[-1][1]
            if t - prev > DAEMON_GAP_NS or any(prev < d <= t for d in ds):
                lives.append([t, t])
            else:
                lives[-1][1] = t
        for first, last in lives:
            died = min((d for d in ds if d >= last), default=0)
            out.setdefault(run_pid, []).append((who, first, last, died))
    return out


def _daemon_end(h, s, e):
    """When the daemons that run s (ended at e) started were gone, as bounds (lo, hi), wall
    ns: the last heartbeat (a daemon dies after its last beat) and the death the DeathWatcher
    saw (a few ms after the real one at most; the last beat when it saw none); (0, 0): no
    daemon. A daemon counts when its first beat falls within the run's life, on the run's
    worker (a reused pid's daemons do not count)."""
    beats = h.get("heartbeats", {}).get(s["pid"], 0)
    if isinstance(beats, int):
        return beats, beats
    lo = hi = 0
    for b in beats:
        who, first, last = b[:3]
        died = b[3] if len(b) > 3 and b[3] else last
        if who == s["who"] and s["wall"] - 1e9 <= first <= e["wall"] + 1e9:
            lo, hi = max(lo, last), max(hi, died)
    return lo, hi


def _disagreement(h, a_ns, b_ns, d_ms, text):
    """(item, text) of a record time d_ms off the job's own: stalled_records if the host's
    stall meter was not scheduled for all but TOLERANCE of the time between the two stamps
    (a_ns, b_ns: the job's and the record's, either order), so that no process at the
    workers' priority could have stamped sooner; else record_disagreements. The caller
    passes only gaps a stall can make: a stamp taken late."""
    lo, hi = min(a_ns, b_ns) / 1e9, max(a_ns, b_ns) / 1e9
    stalled = sum(max(0.0, min(hi, t) - max(lo, f)) for f, t in h.get("stalls", []))
    if abs(d_ms) - stalled * 1000 <= TOLERANCE_NS / 1e6:
        return "stalled_records", "%s (the host stalled %.0f ms of it)" % (text,
                                                                           stalled * 1000)
    return "record_disagreements", text


def _check_records(h, rep):
    """Each run record against the job's own start and end lines (same job, node and fence,
    the nearest start); the start is the job's process's birth by the kernel when its line
    has born=, else its first line; the end is the last of the end line, the death and the
    daemon's last heartbeat."""
    ivs = _intervals(h["lines"])
    by_key = collections.defaultdict(list)
    for s, e in ivs:
        by_key[(s.get("job"), s.get("node", s["who"]), s.get("fence"))].append((s, e))
    matched = 0
    for name, runs in h["runs"].items():
        for r in runs:
            start = _iso_s(r.get("start"))
            if start is None or r.get("outcome") in ("missed", "paused", "start_failed"):
                continue
            skew = h.get("skew", {}).get(r.get("node"), 0)
            start_ns = int((start - skew) * 1e9)
            cands = by_key.get((name, r.get("node"), str(r.get("fence"))), [])
            if not cands:
                continue
            s, e = min(cands, key=lambda iv: abs(iv[0]["wall"] - start_ns))
            if abs(s["wall"] - start_ns) > 30e9:
                continue  # no line of this run (not started, or its lines lost)
            matched += 1
            # The job's start: when the kernel made its first process (born, to its 10 ms
            # tick), else its first line, which a loaded machine delays by the shell's and
            # lk-record's own start-up.
            if s.get("born"):
                d = (start_ns - int(s["born"])) / 1e6
                late = d - 10 if d > 0 else d  # born is truncated to a 10 ms tick
            else:
                d = late = (start_ns - s["wall"]) / 1e6
            if abs(late) > TOLERANCE_NS / 1e6:
                # Either stamp can be late: the supervisor's (after the fork) or the
                # kernel's birth (the supervisor stamps, then forks)
                born = int(s["born"]) if s.get("born") else s["wall"]
                rep.add(*_disagreement(h, born, start_ns, late,
                                       "job %s on %s fence %s: record start %s, job start "
                                       "%.3f: %+.0f ms" % (name, r.get("node"), r.get("fence"),
                                                           r.get("start"), s["wall"] / 1e9, d)))
                continue
            end = _iso_s(r.get("end"))
            if end is None or e is None:
                continue
            # The run ended when its last process did: its end line or death, or its
            # daemon's death, known to lie between the daemon's last beat and its death as
            # seen; a record end within those bounds agrees.
            lo, hi = _daemon_end(h, s, e)
            job_lo, job_hi = max(e["wall"], lo), max(e["wall"], hi)
            rec_end = (end - skew) * 1e9
            d = min(0, rec_end - job_lo) + max(0, rec_end - job_hi)
            d /= 1e6
            if abs(d) > TOLERANCE_NS / 1e6:
                text = "job %s on %s fence %s: record end %s, job end %.3f to %.3f (%s%s): " \
                       "%+.0f ms" % (name, r.get("node"), r.get("fence"), r.get("end"),
                                     job_lo / 1e9, job_hi / 1e9, e["kind"],
                                     ", a daemon's" if hi > e["wall"] else "", d)
                # A record end after the job's: the supervisor's stamp, late. Before it: the
                # job (or its daemon) outlived what the record says, which no stall makes,
                # unless the bound is the death watcher's own stamp, late in a stall.
                stampable = d > 0 or (e["kind"] == "death" and e["wall"] >= lo)
                rep.add(*(_disagreement(h, job_hi if d > 0 else job_lo, rec_end, d, text)
                          if stampable else ("record_disagreements", text)))
    rep.info["records_matched"] = matched


def check(h):
    """Count every item of ITEMS over history h; returns a Report."""
    rep = Report()
    _check_overlaps(h, rep)
    _check_ticks(h, rep)
    _check_kills(h, rep)
    _check_records(h, rep)
    for p in h.get("lock_nodes", []):
        rep.add("orphan_lock_nodes", p)
    for key, item in (("leftover_processes", "leftovers"), ("leftover_cgroups", "leftovers"),
                      ("crashes", "worker_crashes"), ("sanitizer", "sanitizer_reports")):
        for x in h.get(key, []):
            rep.add(item, x)
    for _ in range(h.get("hostile_accepted", 0)):
        rep.add("hostile_accepted", "a write without credentials was accepted")
    rep.info["worker_nodes_left"] = len(h.get("worker_nodes", []))
    rep.info["starts"] = sum(1 for ln in h["lines"] if ln["kind"] == "start")
    rep.info["run_records"] = sum(len(v) for v in h["runs"].values())
    return rep

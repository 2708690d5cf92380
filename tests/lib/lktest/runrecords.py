# SPDX-License-Identifier: Apache-2.0
"""Run records on paper: read every run record of a job from ZooKeeper and check that no two
runs of a job with `leases` leases overlap by the times the records themselves give.

A run record (<root>/jobs/<job>/runs/run-<seq>, JSON) carries "start" (the supervisor's
exec time) and "end" (when the supervisor saw the run's last process gone), in ISO 8601 UTC
with milliseconds. A record without a "start" that means a run (a "missed" or "paused" tick
record, a start that failed) is not an interval and is left out.

    recs = run_records(kazoo_client, "/leasekeeper", "chaos")
    docs = job_runs(kazoo_client, "chaos")  # every record, as the dicts written
    bad = paper_overlaps(recs, leases=1)   # [] when the records tell a safe story
"""

import calendar
import collections
import json
import time

__all__ = ["RunRecord", "job_runs", "run_records", "paper_overlaps", "iso_ms"]

RunRecord = collections.namedtuple("RunRecord", "name node start_ms end_ms outcome data")
RunRecord.__doc__ = "One run record: its znode name, worker, start and end (wall ms), outcome."

# Outcomes of a record that stands for no process that ran.
NOT_RUNS = ("missed", "paused", "start_failed")


def iso_ms(text):
    """Wall ms from "YYYY-MM-DDTHH:MM:SS.mmmZ" (as clock_iso8601 writes it)."""
    base, _, frac = text.rstrip("Z").partition(".")
    secs = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
    return secs * 1000 + int((frac or "0")[:3].ljust(3, "0"))


def job_runs(client, job, root="/leasekeeper"):
    """Every record under <root>/jobs/<job>/runs as written (dicts: runs, missed and paused
    ticks alike), oldest first; [] before the first. A record that is not JSON raises."""
    path = "%s/jobs/%s/runs" % (root.rstrip("/"), job)
    if not client.exists(path):
        return []
    return [json.loads(data) for _, data in _read_all(client, path)]


def _read_all(client, path):
    """The data of every child of path, oldest first, less any trimmed (deleted by the job's
    `history`) between the listing and its read: that one is gone for every reader."""
    from kazoo.exceptions import NoNodeError  # as case.py: only where a client is used

    out = []
    for name in sorted(client.get_children(path)):
        try:
            out.append((name, client.get("%s/%s" % (path, name))[0]))
        except NoNodeError:
            continue
    return out


def run_records(client, root, job, runs_only=True):
    """Every run record of job that stands for a run, oldest first (kazoo client); with
    runs_only=False every record (those without a start or end get None)."""
    path = "%s/jobs/%s/runs" % (root.rstrip("/"), job)
    if not client.exists(path):
        return []
    out = []
    for name, data in _read_all(client, path):
        try:
            rec = json.loads(data.decode())
        except ValueError:
            continue
        outcome = rec.get("outcome", rec.get("reason"))
        is_run = outcome not in NOT_RUNS and "start" in rec and "end" in rec
        if runs_only and not is_run:
            continue
        out.append(RunRecord(name, rec.get("node"), iso_ms(rec["start"]) if is_run else None,
                             iso_ms(rec["end"]) if is_run else None, outcome, rec))
    return out


def paper_overlaps(records, leases=1):
    """Descriptions of the moments more than `leases` runs were under way by their records.

    Intervals are [start, end): a run that starts the very millisecond another ends does not
    overlap it (the records' resolution is one millisecond)."""
    events = []
    for r in records:
        events.append((r.start_ms, 1, r))
        events.append((r.end_ms, 0, r))  # ends before starts at the same instant
    events.sort(key=lambda e: (e[0], e[1]))
    live, bad = [], []
    for t, kind, r in events:
        if kind == 0:
            if r in live:
                live.remove(r)
            continue
        live.append(r)
        if len(live) > leases:
            bad.append("at %d: %s" % (t, ", ".join(
                "%s (%s %s, %d..%d)" % (x.name, x.node, x.outcome, x.start_ms, x.end_ms)
                for x in live)))
    return bad

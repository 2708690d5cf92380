#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300
"""Differential test of src/config/schedule.c and tz.c (through tests/tools/cronnext) against
python3-croniter. It needs no ZooKeeper: ctest runs it as a unit test.

Reference. croniter does the calendar work (fields, ranges, steps, names, month ends, leap
years): it iterates wall-clock times on naive datetimes, where it has no time-zone code to get
wrong. This test maps each wall time to instants with Python's zoneinfo (a TZif reader
independent of ours) under the documented policy of docs/schedules.md:
  - a wall time that happens once fires then;
  - a wall time skipped by a forward jump fires once at the instant of the jump if the hour
    field is fixed (no '*' and no '/'), and not at all otherwise;
  - a wall time that happens twice fires at its first occurrence if the hour field is fixed,
    and at both otherwise.
Our next 5 (after START) and previous 5 (at or before START, each within 400 days of the
one before) must equal the reference exactly, with these counted and printed exceptions:

Day rule. We follow Vixie cron (day-of-month and day-of-week are ORed when neither field
starts with '*'); croniter ORs when neither expands to the full range. Where the two rules
disagree the reference is asked for our rule (day_or=False, or '*' for an OR with a full
field).

croniter bugs. croniter 1.3.5 has three calendar bugs we met: get_next, given a day-of-month
value beyond the current month's length, adds (value - day) days and overshoots the next
month's first days ("0 0 1,30 * *" from 2033-02-15 gives 2033-03-30); get_prev assumes
February has 28 days and skips 29 February; under the OR rule it raises "failed to find next
date" when the day-of-month can never fall in the months (e.g. "0 3 31 9 1") although the
day-of-week can. A difference is put down to one of these only if croniter lacks one of our
times and that time falls on day 1..(largest day-of-month - 28) of a month going forwards, or
on 29 February going backwards, or croniter finds nothing for such an OR expression (counting
February as 28 days going backwards); our answer must then equal a brute-force day-by-day
iteration over croniter's own expanded field sets.

croniter with a zone. croniter itself with a time zone (the documented way, a pytz-localized
start) is compared too, for cases whose fire times all fall before 2038-01-19: pytz reads only
the 32-bit part of TZif files and so knows no daylight saving after that (later cases are
counted as skipped). It is inconsistent around daylight-saving changes (see
docs/schedules.md), so a difference from it is accepted only under this rule: our answer
equals the reference above, and the zone changes its UTC offset between one day before START
and one day after the first fire time where we differ. Such differences are counted by kind
and printed with examples; any other difference fails the test.
"""

import bisect
import calendar
import datetime
import importlib.metadata
import os
import random
import subprocess
import sys
import time
from zoneinfo import ZoneInfo

import croniter as croniter_module
import pytz
from croniter import CroniterBadDateError, croniter

# Fixed so a failure reproduces; LEASEKEEPER_CRON_SEED and LEASEKEEPER_CRON_CASES explore more.
SEED = int(os.environ.get("LEASEKEEPER_CRON_SEED", "20250917"))
CASES = int(os.environ.get("LEASEKEEPER_CRON_CASES", "5000"))  # each: next 5 and previous 5
EVERY_CASES = 300
K = 5
DAY = 86400
PREV_HORIZON = 400 * DAY
EPOCH = datetime.datetime(1970, 1, 1)
YEAR_LO, YEAR_HI = 1971, 2099
PYTZ_END = 2 ** 31  # pytz has no offsets after 2038-01-19T03:14:08Z

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Sydney",
    "Asia/Kolkata",
    "Australia/Lord_Howe",  # 30-minute DST
    "America/Sao_Paulo",  # DST changed at midnight until 2019
    "America/Havana",  # DST changes at midnight
    "Pacific/Chatham",  # +12:45/+13:45
    "America/St_Johns",  # -03:30
    "Antarctica/Troll",  # 2-hour DST
    "Africa/Casablanca",  # DST suspended each Ramadan
    "Europe/Dublin",  # "negative DST" in the TZif data
    "America/Nuuk",  # rule times -1:00 and 0:00
    "Asia/Tehran",
    "Pacific/Apia",  # skipped 2011-12-30 entirely
]

FIELDS = [("minute", 0, 59), ("hour", 0, 23), ("dom", 1, 31), ("month", 1, 12), ("dow", 0, 7)]
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"]
ALIASES = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


# ---- Expression generator ----


def fmt_value(rng, i, v):
    """A value of field i, sometimes as a name in any case."""
    names = MONTHS if i == 3 else DAYS if i == 4 else None
    if names is None or rng.random() < 0.65:
        return str(v)
    name = names[v - 1] if i == 3 else names[v]
    return rng.choice([name, name.upper(), name.title()])


def gen_value(rng, i):
    lo, hi = FIELDS[i][1], FIELDS[i][2]
    if i == 1 and rng.random() < 0.4:
        return rng.choice([0, 1, 2, 3])  # the hours clocks change in
    if i == 0 and rng.random() < 0.3:
        return rng.choice([0, 15, 30, 45])
    if i == 2 and rng.random() < 0.25:
        return rng.choice([28, 29, 30, 31])
    return rng.randint(lo, hi)


def gen_item(rng, i):
    lo, hi = FIELDS[i][1], FIELDS[i][2]
    kind = rng.choices(["num", "range", "range_step", "star_step", "num_step"],
                       [45, 20, 10, 15, 10])[0]
    if kind == "num":
        return fmt_value(rng, i, gen_value(rng, i))
    if kind == "star_step":
        return "*/%d" % rng.randint(1, min(hi - lo, 15 if i == 0 else hi - lo))
    a = gen_value(rng, i)
    if kind == "num_step":
        return "%s/%d" % (fmt_value(rng, i, a), rng.randint(1, hi - lo))
    b = rng.randint(a, hi)
    text = "%s-%s" % (fmt_value(rng, i, a), fmt_value(rng, i, b))
    if kind == "range_step":
        text += "/%d" % rng.randint(1, hi - lo)
    return text


def gen_field(rng, i):
    star = [0.15, 0.3, 0.55, 0.6, 0.55][i]
    r = rng.random()
    if r < star:
        return "*"
    n = rng.choices([1, 2, 3], [70, 20, 10])[0]
    return ",".join(gen_item(rng, i) for _ in range(n))


def gen_expr(rng):
    if rng.random() < 0.03:
        return rng.choice(ALIASES + [a.upper() for a in ALIASES[:2]])
    sep = " " if rng.random() < 0.95 else "  "  # tabs are cronnext's column separator
    return sep.join(gen_field(rng, i) for i in range(5))


def expand_alias(expr):
    table = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
             "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
             "@hourly": "0 * * * *"}
    return table.get(expr.lower(), expr)


def reference_form(expr):
    """croniter's expression and day_or for our rule, and which adjustment that took."""
    fields = expand_alias(expr).split()
    ours_or = fields[2][0] != "*" and fields[4][0] != "*"
    expanded = croniter(" ".join(fields)).expanded
    theirs_or = expanded[2] != ["*"] and expanded[4] != ["*"]
    if ours_or == theirs_or:
        return " ".join(fields), True, None
    if not ours_or:
        return " ".join(fields), False, "and"  # e.g. "*/2" in one field: we AND
    # We OR with a field that covers every day (e.g. "1-31" or "0-6"): every day matches.
    return " ".join(fields[:2] + ["*", fields[3], "*"]), True, "or-full"


# ---- Zones (Python's zoneinfo) ----


class Zone:
    def __init__(self, name):
        self.name = name
        self.zi = ZoneInfo(name)
        self.pz = pytz.timezone(name)
        self.transitions = []  # instants where the offset changes
        lo = int((datetime.datetime(YEAR_LO - 2, 1, 1) - EPOCH).total_seconds())
        hi = int((datetime.datetime(YEAR_HI + 2, 1, 1) - EPOCH).total_seconds())
        offs = {self.offset(lo)}
        t, o = lo, self.offset(lo)
        while t < hi:
            u = t + 6 * 3600
            ou = self.offset(u)
            if ou != o:
                a, b = t, u
                while b - a > 1:
                    m = (a + b) // 2
                    if self.offset(m) == o:
                        a = m
                    else:
                        b = m
                self.transitions.append(b)
                offs.add(ou)
            t, o = u, ou
        self.min_off, self.max_off = min(offs), max(offs)

    def offset(self, u):
        return int(datetime.datetime.fromtimestamp(u, self.zi).utcoffset().total_seconds())

    def changes_between(self, lo, hi):
        i = bisect.bisect_right(self.transitions, lo)
        return i < len(self.transitions) and self.transitions[i] <= hi

    def resolve(self, w):
        """Instants whose wall time is w: (sorted list, None), or ([], jump) inside a gap."""
        dt = EPOCH + datetime.timedelta(seconds=w)
        a = int(dt.replace(tzinfo=self.zi, fold=0).timestamp())
        b = int(dt.replace(tzinfo=self.zi, fold=1).timestamp())
        valid = sorted({u for u in (a, b) if u + self.offset(u) == w})
        if valid:
            return valid, None
        lo, hi = min(a, b), max(a, b)
        o = self.offset(lo)
        while hi - lo > 1:
            m = (lo + hi) // 2
            if self.offset(m) == o:
                lo = m
            else:
                hi = m
        return [], hi

    def fires(self, w, fixed):
        """The documented policy: [(instant, kind)] for wall time w."""
        valid, jump = self.resolve(w)
        if jump is not None:
            return [(jump, "gap")] if fixed else []
        if len(valid) == 2:
            if fixed:
                return [(valid[0], "overlap-first")]
            return [(valid[0], "overlap-first"), (valid[1], "overlap-second")]
        return [(valid[0], "plain")]


def wall(dt):
    return int((dt - EPOCH).total_seconds())


def reference_next(expr_c, day_or, zone, x, fixed):
    it = croniter(expr_c, EPOCH + datetime.timedelta(seconds=x + zone.min_off),
                  ret_type=datetime.datetime, day_or=day_or)
    found = {}
    for _ in range(100000):
        try:
            w = wall(it.get_next(datetime.datetime))
        except CroniterBadDateError:
            break
        if len(found) >= K and w - zone.max_off > sorted(found)[K - 1]:
            break
        for u, kind in zone.fires(w, fixed):
            if u > x:
                found.setdefault(u, kind)
    else:
        fail("reference did not converge for %r in %s after %d" % (expr_c, zone.name, x))
    out = sorted(found)[:K]
    return out, [found[u] for u in out]


def reference_prev(expr_c, day_or, zone, x, fixed):
    start = ((x + zone.max_off) // 60 + 1) * 60
    it = croniter(expr_c, EPOCH + datetime.timedelta(seconds=start),
                  ret_type=datetime.datetime, day_or=day_or)
    found = {}
    for _ in range(100000):
        try:
            w = wall(it.get_prev(datetime.datetime))
        except CroniterBadDateError:
            break
        if len(found) >= K and w - zone.min_off < sorted(found, reverse=True)[K - 1]:
            break
        if w - zone.min_off < x - (K + 1) * PREV_HORIZON:
            break
        for u, kind in zone.fires(w, fixed):
            if u <= x:
                found.setdefault(u, kind)
    else:
        fail("reference did not converge backwards for %r in %s at %d" % (expr_c, zone.name, x))
    out, q = [], x
    for u in sorted(found, reverse=True)[:K]:
        if u < q - PREV_HORIZON:
            break
        out.append(u)
        q = u - 1
    return out


def brute_fires(expr_c, day_or, zone, fixed, lo, hi):
    """Fire instants in (lo, hi], day by day over croniter's expanded field sets."""
    exp = croniter(expr_c).expanded
    sets = [set(range(a, b + 1)) if e == ["*"] else {v % 7 if i == 4 else v for v in e}
            for i, (e, (_, a, b)) in enumerate(zip(exp, FIELDS))]
    day_or = day_or and exp[2] != ["*"] and exp[4] != ["*"]
    hours, minutes = sorted(sets[1]), sorted(sets[0])
    out = set()
    for day in range((lo + zone.min_off) // DAY - 1, (hi + zone.max_off) // DAY + 2):
        date = EPOCH + datetime.timedelta(days=day)
        if date.month not in sets[3]:
            continue
        dom, dow = date.day in sets[2], date.isoweekday() % 7 in sets[4]
        if not ((dom or dow) if day_or else (dom and dow)):
            continue
        for h in hours:
            for m in minutes:
                out.update(u for u, _ in zone.fires(day * DAY + h * 3600 + m * 60, fixed)
                           if lo < u <= hi)
    return sorted(out)


def brute_next(expr_c, day_or, zone, x, fixed):
    span = 2 * DAY
    while True:
        found = brute_fires(expr_c, day_or, zone, fixed, x, x + span)
        if len(found) >= K or span > 60 * 366 * DAY:
            return found[:K]
        span *= 4


def brute_prev(expr_c, day_or, zone, x, fixed):
    found = brute_fires(expr_c, day_or, zone, fixed, x - (K + 1) * PREV_HORIZON, x)
    out, q = [], x
    for u in reversed(found):
        if u < q - PREV_HORIZON or len(out) == K:
            break
        out.append(u)
        q = u - 1
    return out


def croniter_bug(ours, ref, zone, forward, expr_c, day_or):
    """Which known croniter 1.3.5 bug explains croniter lacking one of our times, or None."""
    i = next(j for j in range(K) if j >= len(ours) or j >= len(ref) or ours[j] != ref[j])
    if i >= len(ours):
        return None
    if i < len(ref) and (ref[i] < ours[i] if forward else ref[i] > ours[i]):
        return None  # croniter has a time we lack: no known bug does that
    exp = croniter(expr_c).expanded
    dom = exp[2]
    if not ref and day_or and dom != ["*"] and exp[4] != ["*"] and not any(
            d <= calendar.monthrange(2000 if forward else 2001, m)[1]  # get_prev: 28-day Feb
            for m in (range(1, 13) if exp[3] == ["*"] else exp[3]) for d in dom):
        return "raises when day-of-month never meets the months though day-of-week could (OR)"
    date = datetime.datetime.fromtimestamp(ours[i], zone.zi)
    if forward and dom != ["*"] and max(dom) > 28 and date.day <= max(dom) - 28:
        return "get_next skips the first days of a month after a shorter one"
    if not forward and (date.month, date.day) == (2, 29):
        return "get_prev skips 29 February"
    return None


def croniter_tz_next(expr_c, day_or, zone, x):
    it = croniter(expr_c, datetime.datetime.fromtimestamp(x, zone.pz), day_or=day_or)
    out = []
    try:
        for _ in range(K):
            out.append(int(it.get_next(float)))
    except CroniterBadDateError:
        pass
    return out


# ---- Cases ----


def gen_start(rng, zone):
    if zone.transitions and rng.random() < 0.5:
        t = rng.choice(zone.transitions)
        return t + rng.randint(-36 * 3600, 36 * 3600)
    lo = wall(datetime.datetime(YEAR_LO, 1, 1))
    hi = wall(datetime.datetime(YEAR_HI, 12, 31))
    return rng.randint(lo, hi)


def gen_aimed(rng, zone):
    """A case aimed at a transition: the hour field holds a wall hour that is skipped or
    repeated, and the start is up to a day and a half before it."""
    t = rng.choice(zone.transitions)
    before, after = zone.offset(t - 1), zone.offset(t)
    w = t + min(before, after) + rng.randrange(abs(after - before))
    hour = (w % DAY) // 3600
    hours = rng.choice([str(hour), "%d,%d" % (hour, (hour + 1) % 24), "%d-%d" % (
        max(hour - 1, 0), hour), "*", "*/%d" % rng.choice([1, 2, 3]), "%d/2" % hour,
        "%d-23/3" % hour])
    minute = rng.choice(["0", "30", "%d" % (w % 3600 // 60), "*/15", "*", "0,30", "15-45/10"])
    days = rng.choice(["* * *", "* * *", "* * %d" % ((w // DAY + 4) % 7),
                       "%d * *" % (EPOCH + datetime.timedelta(seconds=w)).day])
    return ("%s %s %s" % (minute, hours, days), zone,
            t - rng.randint(0, 36 * 3600))


def run_cronnext(lines):
    build = os.environ.get("LEASEKEEPER_BUILD_DIR")
    if not build:
        fail("LEASEKEEPER_BUILD_DIR is not set: run through ctest, or set it to the build dir")
    tool = os.path.join(build, "cronnext")
    if not os.access(tool, os.X_OK):
        fail("%s not found: build the cronnext target" % tool)
    env = dict(os.environ, TZ="UTC")
    out = subprocess.run([tool], input="".join(lines), capture_output=True, text=True,
                         env=env, timeout=240, check=True).stdout.splitlines()
    if len(out) != len(lines):
        fail("cronnext answered %d lines for %d" % (len(out), len(lines)))
    return out


def parse_times(line):
    if line.startswith("error:"):
        return None
    return [int(v) for v in line.split() if v != "none"]


def local(zone, u):
    return datetime.datetime.fromtimestamp(u, zone.zi).strftime("%Y-%m-%d %H:%M:%S%z")


def main():
    began = time.monotonic()
    print("seed %d; croniter %s (%s); pytz %s; python %s" % (
        SEED, importlib.metadata.version("croniter"), os.path.dirname(croniter_module.__file__),
        pytz.__version__, sys.version.split()[0]))
    rng = random.Random(SEED)
    zones = {name: Zone(name) for name in ZONES}

    cases = []
    for n in range(CASES):
        zone = zones[rng.choice(ZONES)]
        if n % 4 == 0 and zone.transitions:
            cases.append(gen_aimed(rng, zone))
        else:
            cases.append((gen_expr(rng), zone, gen_start(rng, zone)))
    every = []
    for _ in range(EVERY_CASES):
        secs = rng.choice([1, 7, 30, 45, 60, 90, 300, 3600, 5400, 86400, 7 * DAY, 500 * DAY,
                           rng.randint(1, 10 ** 6)])
        text = rng.choice(["%ds" % secs] + (["%dm" % (secs // 60)] if secs % 60 == 0 else []))
        every.append((text, secs, rng.choice(ZONES), rng.randint(-10 ** 9, 5 * 10 ** 9)))

    lines = []
    for expr, zone, x in cases:
        lines.append("%s\t%s\t%d\t%d\n" % (expr, zone.name, x, K))
        lines.append("%s\t%s\t%d\t%d\n" % (expr, zone.name, x, -K))
    for text, _, tz, x in every:
        lines.append("@every %s\t%s\t%d\t%d\n" % (text, tz, x, K))
        lines.append("@every %s\t%s\t%d\t%d\n" % (text, tz, x, -K))
    out = run_cronnext(lines)

    failures = []
    adjusted = {"and": 0, "or-full": 0}
    dst_cases = {}
    raw_agree = raw_skipped = 0
    croniter_bugs = {}
    bug_examples = {}
    raw_diff = {}
    raw_examples = {}
    never = 0
    for n, (expr, zone, x) in enumerate(cases):
        ours_next, ours_prev = parse_times(out[2 * n]), parse_times(out[2 * n + 1])
        if ours_next is None or ours_prev is None:
            failures.append("%r rejected: %s" % (expr, out[2 * n]))
            continue
        expr_c, day_or, adj = reference_form(expr)
        if adj:
            adjusted[adj] += 1
        fixed = not any(c in expand_alias(expr).split()[1] for c in "*/")
        ref_next, kinds = reference_next(expr_c, day_or, zone, x, fixed)
        ref_prev = reference_prev(expr_c, day_or, zone, x, fixed)
        if not ref_next:
            never += 1
        where = "%r in %s from %d (%s)" % (expr, zone.name, x, local(zone, x))
        bugs = []
        for name, ours, ref, brute, forward in (
                ("next", ours_next, ref_next, brute_next, True),
                ("prev", ours_prev, ref_prev, brute_prev, False)):
            if ours == ref:
                continue
            bf = brute(expr_c, day_or, zone, x, fixed)
            bug = croniter_bug(ours, ref, zone, forward, expr_c, day_or)
            if ours == bf and bug is not None:
                bugs.append(bug)
                croniter_bugs[bug] = croniter_bugs.get(bug, 0) + 1
                if len(bug_examples.setdefault(bug, [])) < 2:
                    bug_examples[bug].append("%s of %s: ours %s, croniter %s" % (
                        name, where, [local(zone, u) for u in ours[:2]],
                        [local(zone, u) for u in ref[:2]]))
                continue
            bugs.append(None)
            failures.append("%s of %s: ours %s, croniter reference %s, brute force %s" % (
                name, where, [local(zone, u) for u in ours], [local(zone, u) for u in ref],
                [local(zone, u) for u in bf]))
        if bugs:
            continue  # croniter is wrong here: its zone-aware answer says nothing
        for kind in set(kinds) - {"plain"}:
            dst_cases[kind] = dst_cases.get(kind, 0) + 1

        if max([x] + ours_next) >= PYTZ_END:
            raw_skipped += 1
            continue
        raw = croniter_tz_next(expr_c, day_or, zone, x)
        if raw == ours_next:
            raw_agree += 1
            continue
        i = next(j for j in range(K)
                 if j >= len(raw) or j >= len(ours_next) or raw[j] != ours_next[j])
        hi = max([v[i] for v in (raw, ours_next) if i < len(v)] or [x])
        if not zone.changes_between(x - DAY, hi + DAY):
            failures.append("croniter with the zone differs with no offset change near: %s: "
                            "ours %s, croniter %s" % (where, [local(zone, u) for u in ours_next],
                                                      [local(zone, u) for u in raw]))
            continue
        kind = kinds[i] if i < len(kinds) else "none"
        kind = {"plain": "ordinary day near a change (croniter off by the offset change)",
                "gap": "skipped wall time (we fire at the jump)",
                "overlap-first": "repeated wall time, first occurrence",
                "overlap-second": "repeated wall time, second occurrence (wildcard hour)",
                "none": "croniter finds a fire time we do not"}[kind]
        raw_diff[kind] = raw_diff.get(kind, 0) + 1
        examples = raw_examples.setdefault(kind, [])
        if len(examples) < 3:
            examples.append("%s: ours %s, croniter %s" % (
                where, local(zone, ours_next[i]) if i < len(ours_next) else "none",
                local(zone, raw[i]) if i < len(raw) else "none"))

    for n, (text, secs, tz, x) in enumerate(every):
        base = 2 * (len(cases) + n)
        want_next = [(x // secs + 1 + j) * secs for j in range(K)]
        want_prev = []
        q = x
        for _ in range(K):
            p = q // secs * secs
            if p < q - PREV_HORIZON:
                break
            want_prev.append(p)
            q = p - 1
        if parse_times(out[base]) != want_next or parse_times(out[base + 1]) != want_prev:
            failures.append("@every %s in %s from %d: ours %s / %s, want %s / %s" % (
                text, tz, x, out[base], out[base + 1], want_next, want_prev))

    elapsed = time.monotonic() - began
    print("%d cron cases (%d zones) x next %d + previous %d, %d @every cases, in %.1f s" % (
        len(cases), len(ZONES), K, K, len(every), elapsed))
    print("day rule: %d cases asked croniter for AND (a field starts with '*' but is not full), "
          "%d for OR with a full field (e.g. 1-31)" % (adjusted["and"], adjusted["or-full"]))
    print("cases whose answer used the DST policy: %s; cases with no fire time: %d" % (
        ", ".join("%s %d" % kv for kv in sorted(dst_cases.items())) or "none", never))
    print("known croniter bugs, where our answer matched a brute-force iteration instead:")
    for bug, count in sorted(croniter_bugs.items()):
        print("  %5d  %s" % (count, bug))
        for example in bug_examples[bug]:
            print("         e.g. " + example)
    print("croniter with the zone (pytz) agrees on %d of %d compared (%d skipped: fire times "
          "after 2038); differences near offset changes:" % (
              raw_agree, len(cases) - raw_skipped, raw_skipped))
    for kind, count in sorted(raw_diff.items(), key=lambda kv: -kv[1]):
        print("  %5d  %s" % (count, kind))
        for example in raw_examples[kind]:
            print("         e.g. " + example)
    for f in failures[:25]:
        print("FAIL: " + f)
    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    if sum(dst_cases.values()) < CASES // 10:
        fail("too few cases exercised the DST policy: the generator lost its aim")
    print("OK")


if __name__ == "__main__":
    main()

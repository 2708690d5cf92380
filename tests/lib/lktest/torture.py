# SPDX-License-Identifier: Apache-2.0
"""The torture run (scripts/torture, docs/reliability.md): a real ensemble, workers each
behind proxies of their own, a mix of jobs recording every run through lk-record, a seeded
nemesis, then heal, settle, stop and check (lktest.checker)."""

import collections
import heapq
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

from . import checker, stallmeter, zklog
from .case import cgroup_folder, read_text, write_config
from .paths import leasekeeper_bin, tool
from .procs import Proc, cleanup_all, pid_alive
from .proxy import Proxy
from .record import DeathWatcher, kill_recorded, parse_records
from .torture_net import CREDS, Canary, NsEnsemble, ServerNet, zk_losses
from .zk import Ensemble

__all__ = ["CLASSES", "make_schedule", "Torture", "main"]

T_S = 4.0
SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
# A worker's log line saying it recorded a tick missed (or paused): its time, job and tick.
SAID_MISSED = re.compile(r"^(\S+) .* job (\S+): the tick of (\S+) is (?:missed|not run: the job is "
                         r"paused)")
SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: ")

# Fault classes, each with the range of its duration in units of T (0: instant).
CLASSES = {
    "stop": (0.3, 2.5),            # SIGSTOP .. SIGCONT of a worker's main process
    "kill-main": (0.2, 1.0),       # SIGKILL of a main process, restarted after the duration
    "kill-supervisor": (0, 0),     # SIGKILL of a supervisor (main starts a new one)
    "kill-server": (0.5, 3.0),     # SIGKILL of a random server, restarted after
    "kill-leader": (0.5, 3.0),     # the same, of the leader
    "kill-majority": (0.5, 2.0),   # two of three (three of five) servers
    "blackhole": (0.2, 2.5),       # a worker's connections blackholed, then healed
    "reset": (0, 0),               # a worker's connections reset (RST)
    "hup-storm": (0, 0),           # 20 SIGHUPs to a worker within 0.2 s
    "reload": (0, 0),              # a worker's jobs change (job "extra" comes or goes), SIGHUP
    "hostile": (0, 0),             # a client without credentials writes into the tree
    "partition-server": (0.5, 3.0),  # one server cut from the others (clients still reach it)
    "log-full": (0.5, 3.0),        # a worker's log directory out of space or inodes, then freed
    "op-pause": (1.0, 4.0),        # leasekeeper pause JOB .. resume JOB
    "op-drain": (1.0, 4.0),        # leasekeeper drain NODE .. undrain NODE
    "op-run-now": (0, 0),          # leasekeeper run-now JOB
    "op-set-leases": (1.0, 3.0),   # set-leases of the leases = 2 job to 1 .. back to 2
}
WORKER_FAULTS = ("stop", "kill-main", "kill-supervisor", "blackhole", "reset", "hup-storm",
                 "reload", "log-full")
LOG_FS = "size=16m,nr_inodes=200,mode=0755"  # each worker's <state_dir>/jobs: a small tmpfs
SCHEDULED = ("every", "pertick", "share-a", "share-b", "cron", "slow", "fail", "daemon",
             "hooks")


def make_schedule(seed, minutes, workers, servers, classes, mean_gap_s=None):
    """The nemesis schedule: [(t_s, index, class, params)], a pure function of its arguments
    (the seed replays it)."""
    rng = random.Random(seed)
    mean = mean_gap_s if mean_gap_s else 4.0
    out, t, i = [], 8.0, 0  # the first fault after the cluster has settled
    end = minutes * 60.0
    classes = sorted(classes)
    while classes:
        t += rng.expovariate(1.0 / mean)
        if t >= end - 5:
            return out
        cls = rng.choice(classes)
        lo, hi = CLASSES[cls]
        p = {"d": round(rng.uniform(lo, hi) * T_S, 2)}
        p["worker"] = "w%d" % rng.randint(1, workers)
        p["server"] = rng.randrange(servers)
        p["job"] = rng.choice(SCHEDULED)
        out.append((round(t, 2), i, cls, p))
        i += 1
    return out


def jobs_for(rec, lock, hb, hooks_out):
    """The job mix: {name: (job keys, checker description)}."""
    def cmd(lockname, **kw):
        """lk-record as a shell command: WHO is the worker's node id, from the job's
        environment; options from kw (hold_ms=500 is --hold-ms 500)."""
        opts = []
        for k, v in kw.items():
            opts += ["--" + k.replace("_", "-"), str(v)]
        return "exec %s %s %s \"$LEASEKEEPER_NODE\" %s" % (
            shlex.quote(tool("lk-record")), shlex.quote(rec),
            shlex.quote(lock + "." + lockname), " ".join(shlex.quote(o) for o in opts))
    common = {"history": 100000, "record_output": 0, "start_deadline": "10s"}
    hook = "echo %%s $LEASEKEEPER_JOB $LEASEKEEPER_RUN_ID >> %s" % shlex.quote(hooks_out)
    spec = {
        "cont1": ({"schedule": "@continuous", "restart_backoff": "1s",
                   "command": cmd("cont1", hold_ms=20000)}, 1, 1),
        "cont2": ({"schedule": "@continuous", "leases": 2, "restart_backoff": "1s",
                   "command": cmd("cont2", slots=2, hold_ms=15000)}, 2, 1),
        "every": (dict(common, schedule="@every 3s",
                       command=cmd("every", hold_ms=500)), 1, 1),
        "pertick": (dict(common, schedule="@every 4s", leases=2, per_tick=2,
                         command=cmd("pertick", slots=2, hold_ms=300)), 2, 2),
        "share-a": (dict(common, schedule="@every 5s", lock="shared",
                         command=cmd("shared", hold_ms=800)), 1, 1),
        "share-b": (dict(common, schedule="@every 5s", lock="shared",
                         command=cmd("shared", hold_ms=800)), 1, 1),
        "cron": (dict(common, schedule="* * * * *",
                      command=cmd("cron", hold_ms=500)), 1, 1),
        "slow": (dict(common, schedule="@every 10s",
                      command=cmd("slow", hold_ms=7000)), 1, 1),
        "fail": (dict(common, schedule="@every 5s",
                      command=cmd("fail", hold_ms=200, exit=3)), 1, 1),
        "daemon": (dict(common, schedule="@every 6s",
                        command=cmd("daemon", hold_ms=300, daemon=hb)), 1, 1),
        "hooks": (dict(common, schedule="@every 5s", on_success=hook % "ok",
                       on_failure=hook % "failed",
                       command=cmd("hooks", hold_ms=200)), 1, 1),
    }
    extra = (dict(common, schedule="@every 2s",
                  command=cmd("extra", hold_ms=300)), 1, 1)
    return spec, extra


def describe_jobs(spec, extra):
    out = {}
    for name, (keys, leases, per_tick) in list(spec.items()) + [("extra", extra)]:
        sched = keys["schedule"]
        out[name] = {"schedule": ("cron " + sched) if not sched.startswith("@") else sched,
                     "leases": leases, "per_tick": per_tick, "lock": keys.get("lock", name),
                     "judge_ticks": name != "extra", "start_deadline_s": 10}
    return out


class Torture:
    """One run: start(), nemesis(), heal_and_stop(), check()."""

    def __init__(self, workdir, seed, minutes, workers=5, servers=3, classes=None,
                 sabotage=None, events=None, skew_s=None, settle_s=20.0, mean_gap_s=None,
                 log=sys.stdout):
        self.dir = os.path.abspath(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.seed, self.minutes, self.n = seed, minutes, workers
        self.nservers = servers
        self.classes = list(CLASSES if classes is None else classes)
        self.sabotage = sabotage
        self.settle_s = settle_s
        self.out = log
        self.schedule = make_schedule(seed, minutes, workers, servers, self.classes, mean_gap_s)
        self.replay = events is not None
        if events is not None:
            self.schedule = [e for e in self.schedule if e[1] in events]
        self.skew = {}
        if skew_s:
            if not os.path.exists(FAKETIME_LIB):
                raise RuntimeError("--skew needs libfaketime (%s): scripts/bootstrap installs "
                                   "faketime" % FAKETIME_LIB)
            self.skew["w%d" % workers] = round(skew_s)
        self.faults, self.pauses, self.history = [], [], []
        self.procs, self.proxies, self.cfgs, self.sv_kills = {}, {}, {}, {}
        self.expected_exit = {}
        self.crashes, self.cli_procs = [], []
        self.ops, self.cli_lock = [], threading.Lock()
        self.down_servers = set()
        self.hostile_accepted = 0
        self.nemesis_errors = []
        self.has_extra = {}

    def say(self, text):
        self.out.write("torture: %s\n" % text)
        self.out.flush()

    def note(self, kind, targets, start, end, **kw):
        f = dict(kind=kind, targets=targets, start=start, end=end, **kw)
        self.faults.append(f)
        with open(os.path.join(self.dir, "history.jsonl"), "a") as h:
            h.write(json.dumps(f) + "\n")

    # -- the cluster -------------------------------------------------------------------------

    def start(self):
        self.net = None
        if "partition-server" in self.classes:
            self.net = ServerNet(self.nservers)
            self.ens = NsEnsemble(os.path.join(self.dir, "ensemble"), self.net,
                                  n=self.nservers)
        else:
            self.ens = Ensemble(os.path.join(self.dir, "ensemble"), n=self.nservers)
        self.ens.start()
        self.log_mounts = []
        self.rec = os.path.join(self.dir, "record")
        self.hb = os.path.join(self.dir, "daemon-hb")
        open(self.rec, "a").close()
        self.watcher = DeathWatcher(self.rec)
        self.watcher.start()
        self.mono_to_wall = time.time_ns() - time.monotonic_ns()
        self.stalls = os.path.join(self.dir, "stalls")
        self.meter = Proc([sys.executable, stallmeter.__file__, self.stalls],
                          os.path.join(self.dir, "stallmeter.log"), name="stallmeter")
        self.spec, self.extra = jobs_for(self.rec, os.path.join(self.dir, "lock"), self.hb,
                                         os.path.join(self.dir, "hooks.txt"))
        for i in range(1, self.n + 1):
            w = "w%d" % i
            self.proxies[w] = [Proxy(s.host, s.port, name="%s-zk%d" % (w, k + 1))
                               for k, s in enumerate(self.ens)]
            self.write_jobs(w, extra=False)
            if "log-full" in self.classes:
                self.mount_log_dir(w)
            self.start_worker(w)
        for w in self.procs:
            self.procs[w].wait_log(r"registered as", timeout=60)
        self.kazoo = self.client(CREDS)
        self.canary = Canary(self.ens.connect_string)
        self.canary.start()
        self.started_wall = time.time()
        self.say("cluster up: %d servers, %d workers%s" % (
            self.nservers, self.n, "".join(", %s clock %+ds (libfaketime)" % kv
                                           for kv in self.skew.items())))

    def client(self, creds, timeout=30, hosts=None):
        from kazoo.client import KazooClient
        c = KazooClient(hosts=hosts or self.ens.connect_string, timeout=10,
                        auth_data=[("digest", creds)] if creds else None)
        try:
            c.start(timeout=timeout)
        except Exception:
            c.close()
            raise
        return c

    def write_jobs(self, w, extra):
        jobs = {name: keys for name, (keys, _, _) in self.spec.items()}
        if extra:
            jobs["extra"] = self.extra[0]
        self.has_extra[w] = extra
        hosts = ",".join(p.connect_string for p in self.proxies[w])
        self.cfgs[w] = write_config(self.dir, hosts, name=w,
                                    zookeeper={"session_timeout": "%ds" % T_S, "auth": CREDS},
                                    safety=SAFETY, worker={"allow_root_jobs": True},
                                    jobs=jobs)

    def log_dir(self, w):
        return os.path.join(self.dir, w, "state", "jobs")

    def mount_log_dir(self, w):
        """The worker's job logs (<state_dir>/jobs) on a small tmpfs of their own, for
        log-full to fill."""
        d = self.log_dir(w)
        os.makedirs(d, mode=0o755, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", LOG_FS, "lk-torture-logs", d],
                       check=True)
        self.log_mounts.append(d)

    def fill_log_dir(self, w, what):
        """Use up the space (one big file) or the inodes (empty files) of w's log dir."""
        fill = os.path.join(self.log_dir(w), ".torture-fill")
        n = 0
        try:
            os.makedirs(fill, exist_ok=True)
            if what == "space":
                with open(os.path.join(fill, "blob"), "wb", buffering=0) as f:
                    while n < 1 << 16:
                        f.write(b"\0" * 65536)
                        n += 1
            else:
                while n < 1 << 16:
                    open(os.path.join(fill, "i%d" % n), "w").close()
                    n += 1
        except OSError:
            pass  # full: what the fault is for
        return n

    def free_log_dir(self, w):
        import shutil
        shutil.rmtree(os.path.join(self.log_dir(w), ".torture-fill"), ignore_errors=True)

    def start_worker(self, w):
        env = dict(os.environ)
        if self.sabotage:
            env["LEASEKEEPER_SABOTAGE"] = self.sabotage
        if w in self.skew:
            env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME="%+ds" % self.skew[w],
                       FAKETIME_DONT_FAKE_MONOTONIC="1",
                       ASAN_OPTIONS=env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
        self.procs[w] = Proc([leasekeeper_bin(), "run", "-c", self.cfgs[w]],
                             os.path.join(self.dir, w + ".log"), env=env, name=w)
        self.expected_exit[w] = False

    def supervisor_pid(self, w):
        p = self.procs[w]
        pids = re.findall(r"supervisor pid (\d+)|started a new supervisor, pid (\d+)",
                          p.log_text())
        for a, b in reversed(pids):
            pid = int(a or b)
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == p.pid:
                        return pid
            except (OSError, ValueError, IndexError):
                continue
        return None

    def check_alive(self):
        for w, p in self.procs.items():
            if not p.alive() and not self.expected_exit.get(w):
                self.crashes.append("%s (pid %d) exited by itself with status %s" %
                                    (w, p.pid, p.returncode))
                self.expected_exit[w] = True
                self.say("CRASH: %s exited with status %s; restarting it" % (w, p.returncode))
                self.start_worker(w)

    # -- the nemesis -------------------------------------------------------------------------

    def nemesis(self):
        t0 = time.monotonic()
        self.say("seed %d, %s minutes, %d faults scheduled, classes %s%s" % (
            self.seed, self.minutes, len(self.schedule), ",".join(sorted(self.classes)),
            ", sabotage " + self.sabotage if self.sabotage else ""))
        with open(os.path.join(self.dir, "schedule.txt"), "w") as f:
            for e in self.schedule:
                f.write("%7.2f #%d %s %s\n" % (e[0], e[1], e[2], json.dumps(e[3], sort_keys=True)))
        todo = [(e[0], e[1], 0, e) for e in self.schedule]
        heapq.heapify(todo)
        seq = 10 ** 6
        end = t0 + self.minutes * 60.0
        if self.replay and self.schedule:  # a reduced schedule: stop soon after its last fault
            end = min(end, t0 + max(e[0] + e[3]["d"] for e in self.schedule) + 15.0)
        while todo or time.monotonic() < end:
            now = time.monotonic() - t0
            if todo and todo[0][0] <= now:
                _, _, _, item = heapq.heappop(todo)
                try:
                    if callable(item):
                        item()
                    else:
                        undo = self.inject(item)
                        if undo is not None:
                            seq += 1
                            heapq.heappush(todo, (now + item[3]["d"], seq, 0, undo))
                except Exception as e:  # the nemesis's own trouble: say so, go on
                    self.nemesis_errors.append("%s: %r" % (getattr(item, "__name__", item), e))
                    self.say("nemesis error (the run goes on): %r" % (e,))
                continue
            self.check_alive()
            self.reap_cli()
            wait = min(0.05, (todo[0][0] - now) if todo else 0.05)
            time.sleep(max(0.0, wait))
            if not todo and time.monotonic() >= end:
                break

    def inject(self, e):
        t, idx, cls, p = e
        w = p["worker"]
        now = time.time()
        self.say("%7.2f #%d %s %s" % (t, idx, cls, json.dumps(p, sort_keys=True)))
        proc = self.procs.get(w)
        if cls == "stop":
            if not proc.alive():
                return None
            proc.signal(signal.SIGSTOP)

            def undo():
                if proc.alive():
                    proc.signal(signal.SIGCONT)
                self.note(cls, [w], now, time.time(), index=idx)
            return undo
        if cls == "kill-main":
            if not proc.alive():
                return None
            self.expected_exit[w] = True
            proc.signal(signal.SIGKILL)
            proc.wait(10)

            def undo():
                if self.procs[w] is proc:
                    self.start_worker(w)
                self.note(cls, [w], now, time.time() + 5.0, index=idx)  # + registration
            return undo
        if cls == "kill-supervisor":
            pid = self.supervisor_pid(w)
            if pid is None:
                return None
            os.kill(pid, signal.SIGKILL)
            self.sv_kills[w] = self.sv_kills.get(w, 0) + 1
            self.note(cls, [w], now, now + 3.0, index=idx)
            return None
        if cls in ("kill-server", "kill-leader", "kill-majority"):
            return self.server_fault(cls, p, now, idx)
        if cls == "blackhole":
            for px in self.proxies[w]:
                px.blackhole()

            def undo():
                for px in self.proxies[w]:
                    px.heal()
                self.note(cls, [w], now, time.time(), index=idx)
            return undo
        if cls == "reset":
            for px in self.proxies[w]:
                px.drop_all(reset=True)
            self.note(cls, [w], now, now + 1.0, index=idx)
            return None
        if cls == "hup-storm":
            for _ in range(20):
                if proc.alive():
                    proc.signal(signal.SIGHUP)
                time.sleep(0.01)
            self.note(cls, [w], now, time.time(), index=idx)
            return None
        if cls == "reload":
            self.write_jobs(w, extra=not self.has_extra.get(w))
            if proc.alive():
                proc.signal(signal.SIGHUP)
            self.note(cls, [w], now, time.time(), index=idx, extra=self.has_extra[w])
            return None
        if cls == "log-full":
            what = "inodes" if p["server"] % 2 else "space"
            if "log-full" not in self.classes or os.path.isdir(
                    os.path.join(self.log_dir(w), ".torture-fill")):
                return None
            n = self.fill_log_dir(w, what)

            def undo():
                self.free_log_dir(w)
                self.note(cls, [w], now, time.time(), index=idx, full=what, filled=n)
            return undo
        if cls == "partition-server":
            k = p["server"]
            if self.net is None or k in self.net.cut or k in self.down_servers:
                return None
            self.net.partition(k, True)

            def undo():
                self.net.partition(k, False)
                self.note(cls, ["*"], now, time.time(), index=idx, server=k)
            return undo
        if cls == "hostile":
            self.hostile(p)
            self.note(cls, [], now, time.time(), index=idx)
            return None
        return self.operator(cls, p, now, idx)

    def server_fault(self, cls, p, now, idx):
        up = [i for i in range(len(self.ens.servers)) if i not in self.down_servers]
        if cls == "kill-server":
            victims = [p["server"]] if p["server"] in up else []
        elif cls == "kill-leader":
            leader = self.ens.leader()
            victims = [leader] if leader is not None and leader in up else []
        else:
            need = len(self.ens.servers) // 2 + 1 - len(self.down_servers)
            victims = up[:max(0, need)]
        if not victims:
            return None
        for i in victims:
            self.ens.servers[i].kill()
            self.down_servers.add(i)

        def undo():
            self.restart_servers(victims)
            self.note(cls, ["*"], now, time.time(), index=idx, servers=victims)
        return undo

    def restart_servers(self, which, wait=False):
        """Start these servers again (same ports, same data). Without wait, do not wait for
        them to serve: one alone cannot serve while the others it needs are still down, and
        their restarts are queued behind this one."""
        which = [i for i in which if i in self.down_servers]
        for i in which:
            self.ens.servers[i].launch()
            self.down_servers.discard(i)
        for i in which if wait else []:
            try:
                self.ens.servers[i].wait_serving(120)
            except Exception as e:  # a server that cannot come back is a finding, not a crash
                self.crashes.append("server %d did not serve again: %s" % (i + 1,
                                                                          str(e)[:300]))

    def hostile(self, p):
        """A client without credentials tries to write where workers read."""
        from kazoo.exceptions import NoAuthError, NoNodeError, NodeExistsError
        if len(self.down_servers) * 2 >= len(self.ens.servers):
            self.say("hostile: no quorum, nothing to write to")
            return
        c = self.client(None, timeout=10)
        root = "/leasekeeper"
        tries = [("create", root + "/mutex/cont1/junk-lock-0000000001", b"x"),
                 ("create", root + "/semaphore/cont2/leases/junk-lease-0000000001", b"x"),
                 ("set", root + "/jobs/%s/state" % p["job"], b'{"tick": 99999999999}'),
                 ("set", root + "/jobs/cont2", b'{"leases": 7}'),
                 ("delete", root + "/jobs/%s/state" % p["job"], None),
                 ("create", root + "/jobs/%s/runs/run-" % p["job"], b"{}")]
        try:
            for op, path, data in tries:
                try:
                    if op == "create":
                        c.create(path, data, sequence=path.endswith("-"))
                    elif op == "set":
                        c.set(path, data)
                    else:
                        c.delete(path)
                    self.hostile_accepted += 1
                    self.say("hostile %s of %s was ACCEPTED" % (op, path))
                except (NoAuthError, NoNodeError, NodeExistsError):
                    pass
        finally:
            c.stop()
            c.close()

    def cli(self, *args, after=None):
        """Run a leasekeeper command in the background; after: a command (what cli returned)
        that must have finished first (a resume waits for its pause: through a quorum loss,
        the pause could land after the resume and stay). A pause's or resume's output and
        times go to self.ops (the checker judges pauses by what they said, not by when the
        nemesis meant them); every command's output goes to cli.log after its line."""
        w = "w1"
        op = {"cmd": args[0], "job": args[1] if len(args) > 1 else None}
        box = {"proc": None, "killed": False}

        def run():
            if after is not None:
                after[1].join()
            with self.cli_lock:
                if box["killed"]:
                    return
                op["start"] = time.time()
                box["proc"] = proc = subprocess.Popen(
                    [leasekeeper_bin(), args[0], "-c", self.cfgs[w]] + list(args[1:]),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            out = proc.stdout.read().decode("utf-8", "replace")
            proc.wait()
            op.update(end=time.time(), rc=proc.returncode, out=out)
            with self.cli_lock:
                if op["cmd"] in ("pause", "resume"):
                    self.ops.append(op)
                with open(os.path.join(self.dir, "cli.log"), "a") as log:
                    log.write("$ leasekeeper %s\n%s" % (" ".join(args), out))
        waiter = threading.Thread(target=run, daemon=True)
        waiter.start()
        self.cli_procs.append((box, waiter))
        return box, waiter

    def kill_cli(self, box):
        with self.cli_lock:
            box["killed"] = True
            if box["proc"] is not None and box["proc"].poll() is None:
                box["proc"].kill()

    def reap_cli(self, wait=False):
        keep = []
        for box, waiter in self.cli_procs:
            if wait:
                waiter.join(60)
                if waiter.is_alive():
                    self.kill_cli(box)
                waiter.join(10)
            if waiter.is_alive():
                keep.append((box, waiter))
        self.cli_procs = keep

    def operator(self, cls, p, now, idx):
        job, w = p["job"], p["worker"]
        if cls == "op-run-now":
            self.cli("run-now", job)
            self.note(cls, [], now, now, index=idx, job=job)
            return None
        if cls == "op-pause":
            paused = self.cli("pause", job)

            def undo():
                self.cli("resume", job, after=paused)
                self.pauses.append({"job": job, "start": now, "end": time.time()})
                self.note(cls, [], now, time.time(), index=idx, job=job)
            return undo
        if cls == "op-drain":
            drained = self.cli("drain", w)

            def undo():
                self.cli("undrain", w, after=drained)
                self.note(cls, [], now, time.time(), index=idx, node=w)
            return undo
        if cls == "op-set-leases":
            lowered = self.cli("set-leases", "cont2", "1")

            def undo():
                self.cli("set-leases", "cont2", "2", after=lowered)
                self.note(cls, [], now, time.time(), index=idx)
            return undo
        return None

    # -- the end -----------------------------------------------------------------------------

    def heal_and_stop(self):
        self.say("healing: every worker running, every server up, every proxy healed")
        for k in sorted(self.net.cut if self.net else ()):
            self.net.partition(k, False)
        for w in self.procs if self.log_mounts else ():
            self.free_log_dir(w)
        self.restart_servers(sorted(self.down_servers), wait=True)
        for i in range(len(self.ens.servers)):
            try:
                self.ens.servers[i].wait_serving(120)
            except Exception as e:
                self.crashes.append("server %d does not serve after the heal: %s"
                                    % (i + 1, str(e)[:300]))
        for w in self.procs:
            for px in self.proxies[w]:
                px.heal()
            if self.procs[w].alive():
                self.procs[w].signal(signal.SIGCONT)
            else:
                self.expected_exit[w] = False
                self.start_worker(w)
        self.reap_cli(wait=True)
        for job in SCHEDULED:
            self.cli("resume", job)
        for w in self.procs:
            self.cli("undrain", w)
        self.cli("set-leases", "cont2", "2")
        self.reap_cli(wait=True)
        self.say("settling for %.0f s" % self.settle_s)
        t_end = time.monotonic() + self.settle_s
        while time.monotonic() < t_end:
            self.check_alive()
            time.sleep(0.2)
        self.stop_wall = time.time()
        self.canary.done.set()
        self.canary.join(30)
        self.say("stopping the workers (SIGTERM)")
        for w, p in self.procs.items():
            self.expected_exit[w] = True
            p.signal(signal.SIGTERM)
        for w, p in self.procs.items():
            try:
                st = p.wait(30)
            except subprocess.TimeoutExpired:
                self.crashes.append("%s did not stop within 30 s of SIGTERM" % w)
                p.kill()
                continue
            if st != 0:
                self.crashes.append("%s exited with status %s on SIGTERM" % (w, st))
        time.sleep(1.0)
        self.watcher.stop()

    def leftovers(self):
        procs, cgroups = [], []
        hb_pids = set()
        for line in read_text(self.hb).splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[0] == "hb":
                hb_pids.add(int(parts[2]))
        for pid in sorted(set(self.watcher.pids) | hb_pids):
            if pid_alive(pid):
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        cmdline = f.read()
                except OSError:
                    continue
                # An lk-record of this run writes its record file: over an hour, another
                # test's lk-record may reuse the pid of one of ours (seed 6007's leftover).
                if b"lk-record" not in cmdline or self.rec.encode() not in cmdline:
                    continue
                procs.append("pid %d (lk-record) still alive" % pid)
        # Only processes still named lk-record, of this run: over a long run the pids of
        # daemons long gone are reused by anything (another test's server, its python, its
        # lk-record), never to be killed.
        kill_recorded(set(self.watcher.pids) | hb_pids, self.watcher.pgids,
                      cmdline_has=self.rec)
        for w in self.procs:
            folder = cgroup_folder(w, os.path.join(self.dir, w, "state"))
            if folder and os.path.isdir(folder):
                for sub in sorted(os.listdir(folder)):
                    if sub.startswith("run-") and os.path.isdir(os.path.join(folder, sub)):
                        cgroups.append("%s/%s" % (folder, sub))
        return procs, cgroups

    def read_runs(self, c):
        """{job: {node name: (data, creation time ms)}} of every run record c reads."""
        from kazoo.exceptions import NoNodeError
        root, out = "/leasekeeper", {}
        for job in list(self.spec) + ["extra"]:
            out[job] = {}
            try:
                kids = sorted(c.get_children("%s/jobs/%s/runs" % (root, job)))
            except NoNodeError:
                continue
            for i in range(0, len(kids), 200):  # pipelined, 200 at a time
                asks = [(k, c.get_async("%s/jobs/%s/runs/%s" % (root, job, k)))
                        for k in kids[i:i + 200]]
                for k, a in asks:
                    try:
                        data, stat = a.get(timeout=30)
                    except NoNodeError:
                        continue
                    out[job][k] = (data, stat.ctime)
        return out

    def read_zk(self):
        from kazoo.exceptions import NoNodeError
        c, root = self.kazoo, "/leasekeeper"
        try:
            c.sync(root)  # reads are served by one server: let it catch up with the leader
        except Exception as e:
            self.nemesis_errors.append("sync before the final reads: %s" % e)
        # Every server's copy: replicas that ZooKeeper let diverge (finding 18) hold different
        # records under one name, and a record any server holds was written.
        copies = [("any", self.read_runs(c))]
        for s in self.ens.servers:
            try:
                one = self.client(CREDS, hosts=s.connect_string)
            except Exception as e:
                self.nemesis_errors.append("reading %s's copy: %s" % (s.name, e))
                continue
            try:
                copies.append((s.name, self.read_runs(one)))
            finally:
                one.stop()
                one.close()
        runs, self.diverged = {}, []
        for job in list(self.spec) + ["extra"]:
            runs[job] = []
            seen = {}
            for server, copy in copies:
                for k, (data, ctime) in sorted(copy.get(job, {}).items()):
                    if data in seen.setdefault(k, []):
                        continue
                    if seen[k]:
                        self.diverged.append("%s/%s on %s" % (job, k, server))
                    seen[k].append(data)
                    try:
                        r = json.loads(data.decode("utf-8", "replace"))
                    except ValueError:
                        continue
                    if isinstance(r, dict):
                        r["_ctime_ms"] = ctime
                        runs[job].append(r)
        locks = []
        for kind in ("mutex", "semaphore"):
            try:
                folders = c.get_children("%s/%s" % (root, kind))
            except NoNodeError:
                continue
            for f in folders:
                subs = ["locks", "leases"] if kind == "semaphore" else [""]
                for sub in subs:
                    path = "/".join(x for x in (root, kind, f, sub) if x)
                    try:
                        locks += [path + "/" + k for k in c.get_children(path)]
                    except NoNodeError:
                        pass
        try:
            workers = c.get_children(root + "/workers")
        except NoNodeError:
            workers = []
        return runs, locks, workers

    def history_for_checker(self):
        lines = []
        for r in parse_records(read_text(self.rec)):
            d = dict(r.fields, kind=r.kind, who=r.who, pid=r.pid, mono=r.t_ns)
            d["wall"] = int(r.fields["wall"]) if "wall" in r.fields else \
                r.t_ns + self.mono_to_wall
            lines.append(d)
        beats = []  # (who, daemon pid, run pid, wall ns)
        for line in read_text(self.hb).splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[0] == "hb":
                beats.append((parts[1], int(parts[2]), int(parts[3]),
                              int(parts[4]) + self.mono_to_wall))
        deaths = collections.defaultdict(list)  # (who, daemon pid): [wall ns], DeathWatcher's
        for d in lines:
            if d["kind"] == "daemon-death":
                deaths[(d["who"], d["pid"])].append(d["wall"])
        hbs = checker.daemon_lives(beats, deaths)
        runs, locks, workers = self.read_zk()
        procs, cgroups = self.leftovers()
        sanitizer, said_missed = [], []
        for w in self.procs:
            for line in read_text(os.path.join(self.dir, w + ".log")).splitlines():
                if SANITIZER.search(line):
                    sanitizer.append("%s: %s" % (w, line))
                m = SAID_MISSED.match(line)
                if m:  # the worker's word that it recorded the tick (checker: zk_lost_records)
                    said_missed.append({"who": w, "job": m.group(2),
                                        "tick": checker.iso_seconds(m.group(3)),
                                        "at": checker.iso_seconds(m.group(1))})
        crashes = list(self.crashes)
        for w in self.procs:
            new = len(re.findall(r"started a new supervisor",
                                 read_text(os.path.join(self.dir, w + ".log"))))
            if new > self.sv_kills.get(w, 0):
                crashes.append("%s: %d supervisor restarts, %d supervisor kills by the "
                               "nemesis" % (w, new, self.sv_kills.get(w, 0)))
        jobs = describe_jobs(self.spec, self.extra)
        for name, j in jobs.items():
            # A new job starts with its next tick: none due before its record was made.
            st = self.kazoo.exists("/leasekeeper/jobs/%s" % name)
            if st is not None:
                j["created"] = st.ctime / 1000.0
        return {
            "jobs": jobs,
            "window": [self.started_wall + 5, self.stop_wall - 10 - 5],
            "T_s": T_S, "faults": self.faults, "pauses": self.pauses, "skew": self.skew,
            "ops": sorted(self.ops, key=lambda op: op["start"]),
            "zk_losses": zk_losses([s.log_path for s in self.ens.servers]),
            "runs_logged": zklog.runs_logged({s.name: s.data_dir for s in self.ens.servers}),
            "servers": len(self.ens.servers),
            "stalls": stallmeter.read(self.stalls, self.mono_to_wall),
            "lines": lines, "heartbeats": hbs, "runs": runs, "lock_nodes": locks,
            "worker_nodes": workers, "leftover_processes": procs,
            "leftover_cgroups": cgroups, "crashes": crashes, "sanitizer": sanitizer,
            "said_missed": said_missed,
            "hostile_accepted": self.hostile_accepted,
        }

    def check(self):
        h = self.history_for_checker()
        with open(os.path.join(self.dir, "checked.json"), "w") as f:
            json.dump(h, f, default=str)
        rep = checker.check(h)
        kinds = {}
        for f in self.faults:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        rep.info["faults"] = " ".join("%s=%d" % kv for kv in sorted(kinds.items())) or "none"
        rep.info["nemesis_errors"] = "; ".join(self.nemesis_errors) or "none"
        rep.info["replicas_diverged"] = "%d run records differ between servers%s" % (
            len(self.diverged), (": " + "; ".join(self.diverged[:10])) if self.diverged else "")
        lost = self.canary.lost(self.kazoo)
        rep.info["zk_lost_writes"] = "%d of %d acknowledged canary writes%s" % (
            len(lost), len(self.canary.acked), (": " + "; ".join(lost[:10])) if lost else "")
        return rep

    def close(self):
        for box, _ in self.cli_procs:
            self.kill_cli(box)
        if getattr(self, "meter", None) is not None:
            self.meter.stop(5)
        try:
            self.kazoo.stop()
            self.kazoo.close()
        except Exception:
            pass
        for p in self.procs.values():
            p.stop(5)
        for ps in self.proxies.values():
            for px in ps:
                px.close()
        self.ens.close()
        for d in getattr(self, "log_mounts", []):
            subprocess.run(["umount", "-l", d], stderr=subprocess.DEVNULL)
        if getattr(self, "net", None) is not None:
            self.net.close()
        for w in self.procs:
            folder = cgroup_folder(w, os.path.join(self.dir, w, "state"))
            if folder and os.path.isdir(folder):
                for sub in os.listdir(folder):
                    path = os.path.join(folder, sub)
                    if os.path.isdir(path):
                        try:
                            with open(os.path.join(path, "cgroup.kill"), "w") as f:
                                f.write("1")
                        except OSError:
                            pass
                        for _ in range(100):
                            try:
                                os.rmdir(path)
                                break
                            except OSError:
                                time.sleep(0.05)
                try:
                    os.rmdir(folder)
                except OSError:
                    pass


def load_history(workdir):
    """The history a run saved (<workdir>/checked.json) as check() built it, for --recheck:
    JSON made the heartbeats' pid keys strings. The servers' transaction logs are read again
    (with this reader) from the data dirs the work dir kept, if it kept them."""
    with open(os.path.join(workdir, "checked.json")) as f:
        h = json.load(f)
    h["heartbeats"] = {int(k): v for k, v in h.get("heartbeats", {}).items()}
    ens = os.path.join(workdir, "ensemble")
    dirs = {n: os.path.join(ens, n, "data") for n in sorted(os.listdir(ens))
            if re.match(r"^zk\d+$", n)} if os.path.isdir(ens) else {}
    if dirs:
        h["runs_logged"] = zklog.runs_logged(dirs)
        h["servers"] = len(dirs)
    return h


def recheck(workdir):
    """Judge a finished run again from what it saved (a newer checker over an older run)."""
    rep = checker.check(load_history(workdir))
    print(rep.describe())
    print("torture: %s re-checked: %s" % (workdir, "FAILED: " + ", ".join(rep.failed())
                                           if rep.failed() else "clean"))
    return 1 if rep.failed() else 0


def main(argv=None):
    import argparse
    import logging
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # every reconnect is a WARNING
    ap = argparse.ArgumentParser(prog="scripts/torture",
                                 description="random faults against a real ensemble, then a "
                                             "checker (docs/reliability.md)")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--workers", type=int, default=5)
    ap.add_argument("--servers", type=int, default=3, choices=(3, 5))
    ap.add_argument("--faults", default=None,
                    help="comma-separated fault classes (default: all; none: no fault): " +
                    ",".join(CLASSES))
    ap.add_argument("--events", default=None,
                    help="replay only these schedule entries (#N, comma-separated)")
    ap.add_argument("--mean-gap", type=float, default=None,
                    help="mean seconds between faults (default 4)")
    ap.add_argument("--skew", default="seed",
                    help="run the last worker under libfaketime with its wall clock this many "
                    "seconds off (default: drawn from the seed, 10 to 60 s ahead or behind; "
                    "0: none)")
    ap.add_argument("--settle", type=float, default=20.0)
    ap.add_argument("--sabotage", choices=("no-kill", "no-claim-check", "late-release"))
    ap.add_argument("--allow", action="append", default=[], choices=checker.ITEMS,
                    metavar="ITEM", help="report ITEM but do not fail on it (a known failure "
                    "with an open issue); repeatable")
    ap.add_argument("--dir", default=None, help="work dir (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir when clean")
    ap.add_argument("--recheck", metavar="DIR", help="run no cluster: judge the run kept in "
                    "DIR again (its checked.json and ensemble/) with this checker")
    a = ap.parse_args(argv)
    if a.recheck:
        return recheck(a.recheck)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 10 ** 6)
    classes = a.faults.split(",") if a.faults else None
    if classes == ["none"]:
        classes = []
    for c in classes or []:
        if c not in CLASSES:
            ap.error("unknown fault class %r" % c)
    events = {int(x.lstrip("#")) for x in a.events.split(",")} if a.events else None
    if a.skew == "seed":
        # its own generator: the fault schedule stays what the seed made it before
        r = random.Random("skew %d" % seed)
        skew = r.choice((-1, 1)) * r.randint(10, 60)
    else:
        try:
            skew = float(a.skew)
        except ValueError:
            ap.error("--skew takes seconds or 'seed', not %r" % a.skew)
    if a.dir and os.path.isdir(a.dir) and os.listdir(a.dir):
        # an earlier run's record file, logs and data would be read with this run's
        ap.error("--dir %s is not empty: give a new or an empty directory" % a.dir)
    workdir = a.dir or subprocess.check_output(
        ["mktemp", "-d", "/tmp/lk-torture-XXXXXX"], text=True).strip()
    t = Torture(workdir, seed, a.minutes, workers=a.workers, servers=a.servers,
                classes=classes, sabotage=a.sabotage, events=events, skew_s=skew,
                settle_s=a.settle, mean_gap_s=a.mean_gap)
    t.say("seed %d (replay: --seed %d --minutes %g --workers %d%s), work dir %s" % (
        seed, seed, a.minutes, a.workers,
        (" --faults " + a.faults) if a.faults else "", workdir))
    if a.skew == "seed" and skew:
        t.say("w%d's clock is %+d s off (drawn from the seed; --skew 0: none)" % (a.workers,
                                                                               skew))
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]
    # SIGTERM ends the run as ^C does: through close(), which stops the workers and servers
    # and unmounts the log dirs (without it a killed run left its tmpfs mounts behind).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        t.start()
        t.nemesis()
        t.heal_and_stop()
        rep = t.check()
    finally:
        t.close()
        cleanup_all()
    print(rep.describe())
    bad = [k for k in rep.failed() if k not in a.allow]
    for k in a.allow:
        if rep.counts[k]:
            print("torture: %s: %d, allowed by --allow (a known failure)" % (k, rep.counts[k]))
    c = rep.counts
    print("torture: row for docs/reliability.md's results (load: 1-minute average at the "
          "start and the end):\n| `%s` | %.1f / %.1f | %d: %s | %d | %d | %d | %d | %d | %s "
          "| %d | %d | %d |" % (
              " ".join(["scripts/torture"] + list(argv if argv is not None else sys.argv[1:])),
              load0, os.getloadavg()[0], len(t.faults),
              ", ".join("%s %d" % kv for kv in sorted(collections.Counter(
                  f["kind"] for f in t.faults).items())) or "none",
              c["overlaps"] + c["time_overlaps"] + c["fence_regressions"], c["ticks_twice"],
              c["ticks_lost"], c["false_reasons"], c["needless_kills"],
              "%d%s" % (c["record_disagreements"], " (+%d in host stalls)" % c["stalled_records"]
                        if c["stalled_records"] else ""),
              c["orphan_lock_nodes"], c["leftovers"],
              c["worker_crashes"] + c["sanitizer_reports"]))
    print("torture: seed %d, %.0f s, %s" % (seed, time.monotonic() - t0,
                                              "FAILED: " + ", ".join(bad) if bad else "clean"))
    print("torture: work dir %s" % workdir)
    return 1 if bad else 0

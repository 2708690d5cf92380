# SPDX-License-Identifier: Apache-2.0
"""Real ZooKeeper servers for tests: a standalone server or a 3/5-member ensemble on loopback.

The servers run from Debian's jars (package zookeeper) with a config written at run time:
free ports, forceSync=no, the admin server off, every four-letter word allowed, logs in the
server's own directory. A server counts as up when `srvr` prints a `Mode:` line (`ruok`
answers before the server accepts sessions).
"""

import fcntl
import hashlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import time

from .paths import build_dir
from .ports import free_port, release_port
from .procs import Proc, tail

__all__ = ["ZooKeeper", "Ensemble", "ZooKeeperError", "JAVA", "four_letter"]

JAVA = shutil.which("java") or "/usr/bin/java"
SERVER_CLASSPATH = ":".join([
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/slf4j-log4j12.jar",
    "/usr/share/java/log4j-1.2.jar",
])
# Small, quick JVM: C1 only and the serial collector start faster and use less memory.
JVM_OPTS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",  # no /tmp/hsperfdata_* files left by killed JVMs
            "-Djava.net.preferIPv4Stack=true", "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.jmx.log4j.disable=true"]
SERVING_MODES = ("standalone", "leader", "follower", "observer")
# Class data archives (AppCDS), made once per build dir: a ZooKeeper server starts with
# its archive in about 0.7 CPU-s instead of 1.0 (docs/testing.md). Per archive name, its
# path once looked up, or "" when there is none (made without success, or no build dir).
_cds_paths = {}


def _cds_key(parts):
    """A name for an archive: it is valid only for this java, classpath and options."""
    h = hashlib.sha256()
    for part in [os.path.realpath(JAVA)] + parts:
        h.update(part.encode() + b"\0")
        if os.path.exists(part):
            st = os.stat(part)
            h.update(b"%d %d" % (st.st_size, st.st_mtime_ns))
    return h.hexdigest()[:16]


def _cds_note(msg):
    sys.stderr.write("lktest: %s\n" % msg)


def _cds_make_zk(path):
    """Start a standalone server with -XX:ArchiveClassesAtExit, stop it; its archive to path."""
    work = tempfile.mkdtemp(prefix="zk-cds-", dir=os.path.dirname(path))
    tmp = os.path.join(work, "zk.jsa")
    s = ZooKeeper(work, name="zk-cds")
    s.cds_opts = ["-XX:ArchiveClassesAtExit=" + tmp]
    try:
        s.start(timeout=60.0)
        s.stop(timeout=30.0)
        # Written at the JVM's exit: only a JVM that exited on its own has written it whole
        # (a cut archive crashes the JVMs that map it).
        if s.proc.returncode not in (0, 143) or not os.path.getsize(tmp):
            raise ZooKeeperError("the archiving JVM ended with status %s:\n%s"
                                 % (s.proc.returncode, tail(s.out_path)))
        os.rename(tmp, path)
    finally:
        s.kill()
        release_port(s.port)
        shutil.rmtree(work, ignore_errors=True)


def cds_archive_opts(name, parts, make):
    """The JVM options that use the class data archive NAME (valid for the classpath and
    options in parts), made by make(path) on first use, under a lock so that parallel tests
    make it once; [] if it cannot be made, or if LKTEST_CDS=0. A JVM that rejects the
    archive (another java) starts without it and says why in its output."""
    if name not in _cds_paths:
        _cds_paths[name] = ""
        bd = build_dir(required=False)
        if os.environ.get("LKTEST_CDS") == "0":
            bd = None  # asked not to (to compare, or to rule the archive out)
        if bd:
            root = os.path.join(bd, "lktest-cache")
            os.makedirs(root, exist_ok=True)
            path = os.path.join(root, "%s-%s.jsa" % (name, _cds_key(parts)))
            with open(os.path.join(root, "%s-cds.lock" % name), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not os.path.exists(path) and not os.path.exists(path + ".failed"):
                    try:
                        make(path)
                        _cds_note("made the class data archive %s" % path)
                    except (OSError, RuntimeError) as e:  # ZooKeeperError among them
                        with open(path + ".failed", "w") as f:
                            f.write("%s\n" % e)
                if os.path.exists(path):
                    _cds_paths[name] = path
                else:
                    _cds_note("%s JVMs start without a class data archive (%s.failed says why)"
                              % (name, path))
    path = _cds_paths[name]
    return ["-XX:SharedArchiveFile=" + path] if path else []


def cds_opts():
    """The ZooKeeper server's class data archive options (see cds_archive_opts)."""
    return cds_archive_opts("zk", SERVER_CLASSPATH.split(":") + JVM_OPTS, _cds_make_zk)


class ZooKeeperError(RuntimeError):
    pass


def four_letter(host, port, cmd, timeout=2.0):
    """Send a four-letter word and return the whole answer (OSError if the server is down)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(cmd.encode())
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


class ZooKeeper:
    """One ZooKeeper server in `workdir` (created; holds zoo.cfg, data/, zookeeper.log).

    Nothing runs until start(). The client port is picked now and kept across restart().
    For ensemble members (see Ensemble) myid and quorum are given; quorum is a list of
    (myid, peer_port, election_port).
    """

    def __init__(self, workdir, tick_ms=500, name="zk", port=None, myid=None, quorum=None,
                 init_limit=10, sync_limit=5, extra_cfg=None, detached=False, env=None):
        self.dir = os.path.abspath(str(workdir))
        self.env = env  # the JVM's environment (e.g. libfaketime's), or None: ours
        self.name = name
        self.tick_ms = int(tick_ms)
        self.myid = myid
        self.quorum = quorum
        self.init_limit = init_limit
        self.sync_limit = sync_limit
        self.extra_cfg = dict(extra_cfg or {})
        self.detached = detached
        self._picked_port = port is None
        self.port = port if port is not None else free_port()
        self.data_dir = os.path.join(self.dir, "data")
        self.cfg_path = os.path.join(self.dir, "zoo.cfg")
        self.log_path = os.path.join(self.dir, "zookeeper.log")  # log4j
        self.out_path = os.path.join(self.dir, "java.out")  # JVM stdout/stderr
        self.proc = None
        self.paused = False
        self.cds_opts = None  # the class data archive's options; None: cds_opts()
        os.makedirs(self.data_dir, exist_ok=True)

    def __repr__(self):
        return "<ZooKeeper %s %s %s>" % (self.name, self.connect_string,
                                         "running" if self.running() else "stopped")

    @property
    def host(self):
        return "127.0.0.1"

    @property
    def connect_string(self):
        return "127.0.0.1:%d" % self.port

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def log_files(self):
        return [self.log_path, self.out_path]

    def _write_config(self):
        cfg = {
            "tickTime": self.tick_ms,
            "dataDir": self.data_dir,
            "clientPort": self.port,
            "clientPortAddress": "127.0.0.1",
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "*",
            "forceSync": "no",
            "preAllocSize": 4096,  # KiB; 64 MiB by default
            "minSessionTimeout": 2 * self.tick_ms,
            "maxSessionTimeout": 20 * self.tick_ms,
            "maxClientCnxns": 0,
        }
        if self.quorum:
            cfg["initLimit"] = self.init_limit
            cfg["syncLimit"] = self.sync_limit
            cfg["standaloneEnabled"] = "false"
            cfg["reconfigEnabled"] = "false"
            cfg["cnxTimeout"] = 2000
            for myid, p1, p2 in self.quorum:
                cfg["server.%d" % myid] = "127.0.0.1:%d:%d" % (p1, p2)
            with open(os.path.join(self.data_dir, "myid"), "w") as f:
                f.write("%d\n" % self.myid)
        cfg.update(self.extra_cfg)
        with open(self.cfg_path, "w") as f:
            for k, v in cfg.items():
                f.write("%s=%s\n" % (k, v))
        with open(os.path.join(self.dir, "log4j.properties"), "w") as f:
            f.write("log4j.rootLogger=INFO, FILE\n"
                    "log4j.appender.FILE=org.apache.log4j.FileAppender\n"
                    "log4j.appender.FILE.File=%s\n"
                    "log4j.appender.FILE.Append=true\n"
                    "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
                    "log4j.appender.FILE.layout.ConversionPattern="
                    "%%d{ISO8601} [myid:%%X{myid}] %%-5p [%%t:%%C{1}@%%L] - %%m%%n\n"
                    % self.log_path)

    def argv(self):
        """The java command line that runs this server."""
        extra = cds_opts() if self.cds_opts is None else self.cds_opts
        return ([JAVA] + JVM_OPTS + extra +
                ["-cp", SERVER_CLASSPATH,
                 "-Dlog4j.configuration=file:" + os.path.join(self.dir, "log4j.properties"),
                 "org.apache.zookeeper.server.quorum.QuorumPeerMain", self.cfg_path])

    def running(self):
        """True while the JVM is alive (serving or not)."""
        return self.proc is not None and self.proc.alive()

    def launch(self):
        """Write the config and start the JVM without waiting for it to serve."""
        if self.running():
            return
        self._write_config()
        self.paused = False
        self.proc = Proc(self.argv(), self.out_path, env=self.env, cwd=self.dir,
                         detached=self.detached,
                         name="%s(:%d)" % (self.name, self.port))
        self.proc.zk = self

    def start(self, timeout=120.0):
        """Start the server and wait until it serves; returns self."""
        for attempt in range(3):
            self.launch()
            try:
                self.wait_serving(timeout)
                return self
            except ZooKeeperError:
                if (attempt < 2 and self._picked_port and not self.quorum
                        and self._lost_port_race()):
                    self.kill()
                    release_port(self.port)
                    self.port = free_port()
                    continue
                self.kill()
                raise
        return self

    def _lost_port_race(self):
        text = tail(self.log_path, 200) + tail(self.out_path, 200)
        return "Address already in use" in text

    def wait_serving(self, timeout=120.0):
        """Wait until `srvr` prints a serving Mode line; ZooKeeperError with the log if not."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            mode = self.mode()
            if mode in SERVING_MODES:
                return mode
            if mode:
                last = mode
            if self.proc is None or not self.proc.alive():
                raise ZooKeeperError(
                    "%s on port %d exited (status %s) before serving;\n--- %s:\n%s\n--- %s:\n%s"
                    % (self.name, self.port, self.proc.returncode if self.proc else None,
                       self.out_path, tail(self.out_path), self.log_path, tail(self.log_path)))
            if time.monotonic() >= deadline:
                raise ZooKeeperError(
                    "%s on port %d not serving after %.0f s (last answer: %r);\n--- %s:\n%s"
                    "\n--- %s:\n%s" % (self.name, self.port, timeout, last, self.out_path,
                                       tail(self.out_path), self.log_path, tail(self.log_path)))
            time.sleep(0.05)

    def four_letter(self, cmd, timeout=2.0):
        """Send a four-letter word (srvr, stat, mntr, cons, dump, ...) and return the answer."""
        return four_letter(self.host, self.port, cmd, timeout)

    def mode(self):
        """'standalone', 'leader', 'follower', ... from srvr; '' when not serving; None if down."""
        try:
            answer = self.four_letter("srvr", timeout=1.0)
        except OSError:
            return None
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return ""

    def is_serving(self):
        return self.mode() in SERVING_MODES

    def stop(self, timeout=5.0):
        """SIGTERM, then SIGKILL after `timeout` seconds; idempotent."""
        if self.proc is not None:
            self.proc.stop(timeout)
        self.paused = False

    def kill(self):
        """SIGKILL the server at once; idempotent."""
        if self.proc is not None:
            self.proc.kill()
        self.paused = False

    def pause(self):
        """SIGSTOP: the server keeps its sockets but answers nothing (a hung server)."""
        if self.proc is not None:
            self.proc.kill_group(signal.SIGSTOP)
            self.paused = True
            if not self.proc.wait_group_stopped():
                raise RuntimeError("ZooKeeper on port %d did not stop on SIGSTOP" % self.port)

    def resume(self):
        """SIGCONT after pause()."""
        if self.proc is not None:
            self.proc.kill_group(signal.SIGCONT)
            self.paused = False

    def restart(self, timeout=120.0, stop_timeout=5.0):
        """Stop and start again on the same port with the same data; waits until serving."""
        self.stop(stop_timeout)
        self.launch()
        self.wait_serving(timeout)
        return self

    def close(self):
        """Stop the server and give up its port reservation."""
        self.stop()
        release_port(self.port)


class Ensemble:
    """n ZooKeeper servers (3 or 5) forming one ensemble on loopback, in workdir/zkN.

    Members are 0-based: servers[i] has myid i + 1. Nothing runs until start().
    """

    def __init__(self, workdir, n=3, tick_ms=500, init_limit=10, sync_limit=5, extra_cfg=None,
                 detached=False):
        self.dir = os.path.abspath(str(workdir))
        self.n = n
        self.tick_ms = tick_ms
        self._args = dict(tick_ms=tick_ms, init_limit=init_limit, sync_limit=sync_limit,
                          extra_cfg=extra_cfg, detached=detached)
        self.servers = []
        self._make_members()

    def _make_members(self):
        quorum = [(i + 1, free_port(), free_port()) for i in range(self.n)]
        self.servers = [ZooKeeper(os.path.join(self.dir, "zk%d" % (i + 1)), name="zk%d" % (i + 1),
                                  myid=i + 1, quorum=quorum, **self._args)
                        for i in range(self.n)]

    def __getitem__(self, i):
        return self.servers[i]

    def __len__(self):
        return len(self.servers)

    def __iter__(self):
        return iter(self.servers)

    def __repr__(self):
        return "<Ensemble %s>" % self.connect_string

    @property
    def connect_string(self):
        return ",".join(s.connect_string for s in self.servers)

    @property
    def log_files(self):
        return [p for s in self.servers for p in s.log_files]

    def start(self, i=None, *, timeout=120.0):
        """Start every member and wait until all serve (returns self); with i, start only
        member i again (same ports and data), wait until it serves, and return it."""
        if i is not None:
            return self.start_member(i, timeout)
        for attempt in range(3):
            for s in self.servers:
                s.launch()
            try:
                deadline = time.monotonic() + timeout
                for s in self.servers:
                    s.wait_serving(max(0.1, deadline - time.monotonic()))
                return self
            except ZooKeeperError:
                lost = any(s._lost_port_race() for s in self.servers)
                self.kill()
                if attempt < 2 and lost:
                    for s in self.servers:
                        release_port(s.port)
                    self._release_quorum_ports()
                    self._make_members()
                    continue
                raise
        return self

    def _release_quorum_ports(self):
        for _, p1, p2 in self.servers[0].quorum:
            release_port(p1)
            release_port(p2)

    def leader(self):
        """The index of the member that reports Mode: leader, or None."""
        for i, s in enumerate(self.servers):
            if s.running() and not s.paused and s.mode() == "leader":
                return i
        return None

    def wait_for_leader(self, timeout=120.0):
        """Wait until a leader serves and a majority of members serve; returns its index."""
        deadline = time.monotonic() + timeout
        while True:
            modes = [s.mode() if s.running() and not s.paused else None for s in self.servers]
            serving = sum(1 for m in modes if m in SERVING_MODES)
            if "leader" in modes and serving > self.n // 2:
                return modes.index("leader")
            if time.monotonic() >= deadline:
                raise ZooKeeperError("no leader after %.0f s; modes %r" % (timeout, modes))
            time.sleep(0.05)

    def kill(self, i=None):
        """SIGKILL member i (all members if None)."""
        for s in self.servers if i is None else [self.servers[i]]:
            s.kill()

    def stop(self, i=None, timeout=5.0):
        """Stop member i (all members if None): SIGTERM, then SIGKILL; idempotent."""
        for s in self.servers if i is None else [self.servers[i]]:
            if s.proc is not None:
                s.proc.kill_group(signal.SIGTERM)
        for s in self.servers if i is None else [self.servers[i]]:
            s.stop(timeout)

    def start_member(self, i, timeout=120.0):
        """Start member i again (same ports and data) and wait until it serves."""
        s = self.servers[i]
        s.launch()
        s.wait_serving(timeout)
        return s

    def restart(self, i, timeout=120.0):
        """Stop member i and start it again on the same ports and data."""
        self.servers[i].stop()
        return self.start_member(i, timeout)

    def pause(self, i):
        self.servers[i].pause()

    def resume(self, i):
        self.servers[i].resume()

    def close(self):
        """Stop every member and give up the port reservations."""
        self.stop()
        for s in self.servers:
            release_port(s.port)
        self._release_quorum_ports()

# SPDX-License-Identifier: Apache-2.0
"""Curator peers: tests/peers/CuratorPeer.java, compiled once per source version and run.

The class is compiled with javac into a cache under $LEASEKEEPER_BUILD_DIR/lktest-cache
(or /tmp/lktest-cache-UID), in a directory named after the source's hash, under an flock so
that parallel tests compile it once.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile

from .paths import build_dir, source_dir
from .procs import Proc
from .zk import JAVA

__all__ = ["curator_peer", "curator_peer_argv", "compile_curator_peer"]

CURATOR_CLASSPATH = "/usr/share/java/curator-recipes.jar"  # its manifest pulls in the rest
LOGGER_JAR = "/usr/share/java/slf4j-simple.jar"
JAVAC = shutil.which("javac") or "/usr/bin/javac"
PEER_JVM_OPTS = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                 "-Djava.net.preferIPv4Stack=true",
                 "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                 "-Dorg.slf4j.simpleLogger.showDateTime=true"]


def _cache_root():
    bd = build_dir(required=False)
    if bd:
        return os.path.join(bd, "lktest-cache")
    return os.path.join(tempfile.gettempdir(), "lktest-cache-%d" % os.getuid())


def compile_curator_peer():
    """Compile CuratorPeer.java if needed; return the directory that holds the class."""
    src = os.path.join(source_dir(), "tests", "peers", "CuratorPeer.java")
    with open(src, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    root = _cache_root()
    os.makedirs(root, exist_ok=True)
    out = os.path.join(root, "curator-peer-" + digest)
    if os.path.exists(os.path.join(out, "CuratorPeer.class")):
        return out
    with open(os.path.join(root, "curator-peer.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(out, "CuratorPeer.class")):
            return out
        tmp = tempfile.mkdtemp(prefix="curator-peer-", dir=root)
        r = subprocess.run([JAVAC, "-nowarn", "-Xlint:-path", "-cp", CURATOR_CLASSPATH,
                            "-d", tmp, src], capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError("javac CuratorPeer.java failed (is a JDK installed? "
                               "scripts/bootstrap):\n" + r.stdout + r.stderr)
        os.rename(tmp, out)
    return out


def curator_peer_argv(*args, session_ms=None):
    """The java command line for CuratorPeer with these arguments (compiling it if needed)."""
    classes = compile_curator_peer()
    argv = [JAVA] + PEER_JVM_OPTS + ["-cp", ":".join([CURATOR_CLASSPATH, LOGGER_JAR, classes]),
                                     "CuratorPeer"]
    if session_ms is not None:
        argv += ["--session-ms", str(int(session_ms))]
    return argv + [str(a) for a in args]


def curator_peer(*args, log_path, session_ms=None, name=None):
    """Start CuratorPeer MODE ARGS... as a Proc logging to log_path.

    Modes: ("mutex", connect, path, cycles, hold_ms, record_file, who),
    ("semaphore", connect, path, n, cycles, hold_ms, record_file, who),
    ("hold", connect, path[, record_file, who]), ("hold-semaphore", connect, path, n[, ...]),
    ("read"|"write"|"multi", connect, path, cycles, hold_ms, record_file, who),
    ("hold-read"|"hold-write"|"hold-multi", connect, path[, record_file, who]) (multi: path
    and record_file comma-separated), ("clock",). hold modes get a stdin pipe: proc.write_line("release") or
    proc.close_stdin() releases. Wait for proc.wait_log("^ready$") before relying on it.
    """
    argv = curator_peer_argv(*args, session_ms=session_ms)
    stdin = bool(args) and str(args[0]).startswith("hold")
    return Proc(argv, log_path, stdin=stdin, name=name or "curator-%s" % (args[0] if args else ""))

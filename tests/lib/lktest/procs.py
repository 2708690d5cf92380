# SPDX-License-Identifier: Apache-2.0
"""Child processes that never outlive the test: Proc, and the clean-up that backs it.

Every child the harness starts (ZooKeeper servers, leasekeeper workers, Curator peers, tools)
goes through Proc. Three layers make sure none of them survives the test process:

1. PR_SET_PDEATHSIG(SIGKILL), set in the child between fork and exec. The kernel sends it when
   the *thread* that forked the child exits, so children are only ever started from the main
   thread (Proc refuses otherwise).
2. Each child leads its own process group; stop() and kill_group() signal the whole group, so
   helpers the child forked go too.
3. An atexit hook and SIGTERM/SIGINT handlers kill every group still registered.

stop() and kill_group() are idempotent; a Proc is forgotten once it has been reaped.
"""

import atexit
import ctypes
import os
import re
import signal
from signal import SIGCONT, SIGKILL, SIGTERM
import subprocess
import threading
import time

__all__ = ["Proc", "ProcExited", "cleanup_all", "tail", "pid_alive", "group_members"]

_PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int

_registry_lock = threading.Lock()
_registry = {}  # pid -> Proc, every attached child not yet reaped
_handlers_installed = False


def _threads_stopped(pid):
    """True if every thread of pid is stopped (state T or t) or gone."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return True
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("T", "t", "Z", "X"):
            return False
    return True


class ProcExited(RuntimeError):
    """wait_log() gave up because the process exited without printing what was awaited."""


def tail(path, lines=40):
    """The last `lines` lines of a file, or a note saying why there are none."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))
            data = f.read()
    except OSError as e:
        return "(cannot read %s: %s)" % (path, e.strerror)
    text = data.decode("utf-8", "replace").splitlines()
    if not text:
        return "(%s is empty)" % path
    return "\n".join(text[-lines:])


def pid_alive(pid):
    """True while a process with this pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return False
    state = stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3]
    return state not in (b"Z", b"X")


def group_members(pgid):
    """The pids of the live (not zombie) processes in process group pgid."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        r = stat.rindex(b")")
        fields = stat[r + 2 :].split()
        if fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            out.append(int(name))
    return out


def _make_preexec(parent_pid, pdeathsig):
    """The function run in the child between fork and exec (no allocation-heavy work)."""

    def preexec():
        os.setpgid(0, 0)
        if pdeathsig:
            _prctl(_PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
            # The parent may have died between fork and prctl: then nobody would signal us.
            if os.getppid() != parent_pid:
                os.kill(os.getpid(), SIGKILL)

    return preexec


def _install_handlers():
    """Register atexit and SIGTERM/SIGINT clean-up once, from the main thread."""
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(cleanup_all)
    for sig in (SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum, frame, previous=previous):
            cleanup_all()
            if callable(previous):
                previous(signum, frame)  # SIGINT: KeyboardInterrupt, so unittest can report
            elif previous == signal.SIG_IGN:
                return
            else:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(sig, handler)


def cleanup_all():
    """SIGKILL every registered child's process group and reap it (used at exit)."""
    with _registry_lock:
        procs = list(_registry.values())
    for p in procs:
        p.kill_group(SIGKILL)
    for p in procs:
        try:
            p.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        p._forget()


class Proc:
    """A child process with its output appended to a log file, in its own process group.

    argv: the command; log_path: stdout and stderr are appended to it; env: the whole
    environment (None: inherit); cwd: working directory; stdin: True gives the child a pipe
    (see write_line / close_stdin), False gives it /dev/null; detached: no PDEATHSIG, a new
    session, and no clean-up at exit (for servers that must outlive the caller, scripts/zk);
    name: used in messages.
    """

    def __init__(self, argv, log_path, env=None, cwd=None, stdin=False, detached=False,
                 name=None):
        if not detached and threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                "lktest.Proc must be started from the main thread: PR_SET_PDEATHSIG fires when "
                "the thread that forked the child exits")
        self.argv = [str(a) for a in argv]
        self.log_path = str(log_path)
        self.name = name or os.path.basename(self.argv[0])
        self.detached = detached
        self._text = ""
        self._raw = b""
        self._read_offset = 0
        self._cursor = 0
        self._group_gone = False
        if not detached:
            _install_handlers()
        with open(self.log_path, "ab") as log:
            # wait_log() and log_text() only see what this process writes, not earlier runs
            # that appended to the same file.
            self._read_offset = log.seek(0, os.SEEK_END)
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                close_fds=True,
                start_new_session=detached,
                preexec_fn=None if detached else _make_preexec(os.getpid(), True),
            )
        self.pid = self.popen.pid
        self.pgid = self.pid
        if not detached:
            with _registry_lock:
                _registry[self.pid] = self

    def __repr__(self):
        return "<Proc %s pid=%d%s>" % (self.name, self.pid,
                                       "" if self.alive() else " exited=%s" % self.returncode)

    def _forget(self):
        with _registry_lock:
            _registry.pop(self.pid, None)

    @property
    def returncode(self):
        """The exit status once reaped (negative: killed by that signal), else None."""
        return self.popen.poll()

    def alive(self):
        """True until the process has exited (it is reaped here)."""
        if self.popen.poll() is None:
            return True
        self._forget()
        return False

    def signal(self, sig):
        """Send sig to the process itself (not its group); ignored once it is gone."""
        if self.popen.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def group_alive(self):
        """True while any live (not zombie) process of the group is left; the leader may be
        gone already."""
        if self._group_gone:
            return False
        return bool(group_members(self.pgid))

    def _wait_group_gone(self, timeout):
        deadline = time.monotonic() + timeout
        while self.group_alive() and time.monotonic() < deadline:
            time.sleep(0.01)

    def kill_group(self, sig=SIGKILL):
        """Send sig to the whole process group; a no-op once the group is gone."""
        if self._group_gone:
            return  # never signal a process group id that may have been reused since
        try:
            os.killpg(self.pgid, sig)
            if sig in (SIGTERM, SIGKILL):
                os.killpg(self.pgid, SIGCONT)  # a stopped process never sees SIGTERM
        except ProcessLookupError:
            if self.popen.poll() is not None:
                self._group_gone = True
        except PermissionError:
            pass

    def wait_group_stopped(self, timeout=30.0):
        """After SIGSTOP: wait until every thread of every process of the group is stopped.
        kill() returns once the signal is queued; on a busy machine the threads of a JVM can
        go on answering for a while after that. True when all are stopped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(_threads_stopped(pid) for pid in group_members(self.pgid)):
                return True
            time.sleep(0.01)
        return False

    def wait(self, timeout=None):
        """Wait for the exit and return the status; subprocess.TimeoutExpired on timeout."""
        rc = self.popen.wait(timeout=timeout)
        self._forget()
        return rc

    def stop(self, timeout=5.0, sig=SIGTERM):
        """SIGTERM the group, SIGKILL it after `timeout` seconds; return the exit status."""
        if self.popen.poll() is None:
            self.kill_group(sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()

    def kill(self):
        """SIGKILL the group, reap the leader and wait (up to 2 s) until no member is left;
        return the exit status."""
        self.kill_group(SIGKILL)
        rc = self.popen.wait()
        self._wait_group_gone(2.0)
        self.close_stdin()
        self._forget()
        return rc

    # -- stdin ---------------------------------------------------------------------------

    def write_line(self, line):
        """Write one line to the child's stdin (Proc(..., stdin=True))."""
        self.popen.stdin.write((line.rstrip("\n") + "\n").encode())
        self.popen.stdin.flush()

    def close_stdin(self):
        if self.popen.stdin and not self.popen.stdin.closed:
            try:
                self.popen.stdin.close()
            except BrokenPipeError:
                pass

    # -- the log -------------------------------------------------------------------------

    def _read_new(self):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._read_offset)
                data = f.read()
        except FileNotFoundError:
            return
        if not data:
            return
        self._read_offset += len(data)
        data = self._raw + data
        # Keep an incomplete UTF-8 sequence at the end for the next read.
        cut = len(data)
        for i in range(1, min(4, len(data)) + 1):
            b = data[-i]
            if b & 0xC0 == 0x80:
                continue
            if b & 0x80:
                need = 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else 4
                if need > i:
                    cut = len(data) - i
            break
        self._raw = data[cut:]
        self._text += data[:cut].decode("utf-8", "replace")

    def log_text(self):
        """Everything the process has logged so far."""
        self._read_new()
        return self._text

    def mark(self):
        """The current end of the log, to pass as wait_log(since=...)."""
        self._read_new()
        return len(self._text)

    def wait_log(self, regex, timeout=10.0, since=None, flags=re.MULTILINE):
        """Wait until regex matches the log and return the re.Match.

        The search starts where the previous wait_log match ended (or at `since`, an offset
        from mark()), so two calls with the same regex wait for two occurrences. Raises
        TimeoutError with the log tail on timeout, ProcExited if the process exits first.
        """
        pattern = re.compile(regex, flags)
        start = self._cursor if since is None else since
        deadline = time.monotonic() + timeout
        while True:
            exited = self.popen.poll() is not None
            self._read_new()
            m = pattern.search(self._text, start)
            if m:
                self._cursor = m.end()
                return m
            if exited:
                raise ProcExited("%s (pid %d) exited with status %s before its log matched %r;"
                                 " log tail (%s):\n%s" % (self.name, self.pid, self.returncode,
                                                          regex, self.log_path,
                                                          tail(self.log_path)))
            if time.monotonic() >= deadline:
                raise TimeoutError("%s (pid %d): no match for %r in %.1f s; log tail (%s):\n%s"
                                   % (self.name, self.pid, regex, timeout, self.log_path,
                                      tail(self.log_path)))
            time.sleep(0.02)

# SPDX-License-Identifier: Apache-2.0
"""Free loopback TCP ports, picked at run time and reserved against other test processes.

A port found free by bind() can be taken by someone else before the server binds it. Two
things make that unlikely enough for parallel ctest runs: ports come from below the kernel's
ephemeral range (so outgoing client connections never take them), and each pick is reserved
with an flock on /tmp/lktest-ports/PORT that this process holds for its lifetime (other
lktest processes skip reserved ports). Servers that still lose the race are restarted on new
ports by the caller.
"""

import fcntl
import os
import random
import socket
import threading

__all__ = ["free_port", "release_port"]

_LOCK_DIR = "/tmp/lktest-ports"
_lock = threading.Lock()
_held = {}  # port -> fd of its reservation file


def _candidate_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, _ = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        low = 32768
    if low > 12000:
        return 10000, low - 1
    return None


def _bindable(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as ZooKeeper does
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _reserve(port):
    try:
        os.makedirs(_LOCK_DIR, exist_ok=True)
        os.chmod(_LOCK_DIR, 0o1777)
    except OSError:
        pass
    try:
        fd = os.open(os.path.join(_LOCK_DIR, str(port)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                     0o666)
    except OSError:
        return True  # no reservation possible: rely on bind() alone
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held[port] = fd
    return True


def free_port():
    """A loopback port nobody listens on, reserved for this process until release_port()."""
    rng = _candidate_range()
    with _lock:
        for _ in range(200):
            if rng:
                port = random.randint(*rng)
            else:
                s = socket.socket()
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
                s.close()
            if port in _held:
                continue
            if not _reserve(port):
                continue
            if _bindable(port):
                return port
            release_port(port)
    raise RuntimeError("no free loopback port found")


def release_port(port):
    """Drop this process's reservation of a port (it stays reserved until then)."""
    fd = _held.pop(port, None)
    if fd is not None:
        os.close(fd)

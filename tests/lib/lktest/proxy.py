# SPDX-License-Identifier: Apache-2.0
"""A loopback TCP proxy that injects network faults between a client and a server.

One thread runs a selectors loop. Each accepted connection gets its own upstream connection
(non-blocking connect) and two pipes, client->server and server->client, each with a queue of
chunks waiting to be written. Faults:

* blackhole(): a partition that does not close anything. The proxy stops reading and writing
  on every connection; the bytes a peer sends pile up in the kernel's socket buffers (and in
  the pipe queues) and are not lost. New connections are accepted (the client sees its
  connect() succeed) but not connected upstream. Neither side gets an error: the client only
  notices through its own timeouts, as with a real partition where packets are dropped.
* heal(): everything flows again. Data held during the blackhole is DELIVERED, in order,
  like TCP retransmissions after a partition heals before the peers give up. Connections
  accepted meanwhile are connected upstream now. (To model a partition that loses data, call
  drop_all() before heal().)
* stall_new(): existing connections keep working; new ones are accepted but held unconnected
  until heal(). reject_new(): new connections are accepted and closed at once.
* delay(ms): every chunk is held `ms` milliseconds before it is forwarded (both directions).
* drop_all(reset=False): close every current connection (FIN, or RST with reset=True).
* cut_after(pattern): once, when bytes a client sends contain pattern, pass on the chunk
  that holds it, then close the client's side of that connection at once and leave the
  server's open, unread: the server processes the request, the client never gets its answer
  (a request in flight when the connection is lost). .cuts counts the cuts made.
* hold_after(pattern): once, when bytes a client sends contain pattern, hold the chunk that
  holds them (and what follows it on that connection) until release(): a request delayed
  on its way, to let another client act first. .holds counts the holds made.
* close(): stop the proxy and close everything.

The proxy's own port (.port) stays the same for its lifetime; set_target() redirects new
connections.
"""

import collections
import errno
import selectors
import socket
import struct
import sys
import threading
import time
import traceback

__all__ = ["Proxy"]

_CHUNK = 65536
_QUEUE_LIMIT = 1 << 20  # stop reading a side while this much waits to be written


class _Pipe:
    """One direction of a connection: bytes read from src wait in queue to go to dst."""

    def __init__(self, src, dst):
        self.src = src
        self.dst = dst
        self.queue = collections.deque()  # [due_monotonic, bytes]
        self.queued = 0
        self.eof = False  # src sent FIN
        self.shut = False  # FIN passed on to dst
        self.bytes = 0
        self.tail = b""  # the last bytes read, for a pattern that spans two reads


class _Conn:
    def __init__(self, client, peer):
        self.client = client
        self.peer = peer
        self.server = None
        self.connected = False  # upstream connect finished
        self.connecting = False
        self.up = None  # client -> server
        self.down = None  # server -> client
        self.closed = False


class Proxy:
    """Forward 127.0.0.1:.port to (target_host, target_port), with faults on demand."""

    def __init__(self, target_host, target_port, listen_host="127.0.0.1", port=0, name="proxy"):
        self.target = (target_host, int(target_port))
        self.name = name
        self._lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._lsock.bind((listen_host, port))
        self._lsock.listen(64)
        self._lsock.setblocking(False)
        self.host, self.port = self._lsock.getsockname()
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._lsock, selectors.EVENT_READ, "listen")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._conns = []
        self._calls = collections.deque()
        self._lock = threading.Lock()
        self._mode = "forward"  # forward | blackhole
        self._new = "forward"  # forward | stall | reject
        self._delay = 0.0
        self._stopping = False
        self.accepted = 0  # connections accepted so far
        self.bytes_up = 0  # client -> server bytes written upstream
        self.bytes_down = 0
        self._cut = None  # cut_after's pattern, until it is seen
        self._hold = None  # hold_after's pattern, until it is seen
        self._holding = False  # a chunk hold_after matched waits for release()
        self.holds = 0
        self._cut_hold = 0.0  # how long cut_after holds new connections after its cut
        self._hold_until = None  # new connections held until then (monotonic)
        self._lingering = []  # the server sides of cut connections, closed by close()
        self.cuts = 0  # connections cut by cut_after
        self._thread = threading.Thread(target=self._run, name="lktest-proxy-%d" % self.port,
                                        daemon=True)
        self._thread.start()

    def __repr__(self):
        return "<Proxy :%d -> %s:%d %s>" % (self.port, self.target[0], self.target[1], self._mode)

    @property
    def connect_string(self):
        return "%s:%d" % (self.host, self.port)

    # -- control, from any thread ------------------------------------------------------------

    def _call(self, fn, timeout=5.0):
        """Run fn on the proxy thread and wait for it."""
        if self._stopping:
            return None
        done = threading.Event()
        box = []

        def wrapped():
            try:
                box.append(fn())
            finally:
                done.set()

        with self._lock:
            self._calls.append(wrapped)
        self._wake()
        if not done.wait(timeout):
            raise TimeoutError("proxy thread did not answer")
        return box[0] if box else None

    def _wake(self):
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def blackhole(self):
        """Stop forwarding in both directions; keep every socket open (see module doc)."""
        self._call(lambda: self._set(mode="blackhole", new="stall"))

    def heal(self):
        """Forward again: held data is delivered, stalled connections are connected."""
        self._call(lambda: self._set(mode="forward", new="forward", delay=0.0))

    def stall_new(self):
        """Hold new connections unconnected until heal(); existing ones keep working."""
        self._call(lambda: self._set(new="stall"))

    def reject_new(self):
        """Accept and immediately close new connections until heal()."""
        self._call(lambda: self._set(new="reject"))

    def delay(self, ms):
        """Hold every chunk `ms` milliseconds before forwarding it (0 to stop delaying)."""
        self._call(lambda: self._set(delay=ms / 1000.0))

    def drop_all(self, reset=False):
        """Close every current connection on both sides (RST instead of FIN with reset)."""
        return self._call(lambda: self._drop_all(reset))

    def cut_after(self, pattern, hold=2.0):
        """Once: cut the connection whose client sends pattern, right after passing it on;
        then hold new connections for `hold` seconds, so that the server gets to the request
        before the client's reconnect closes the old connection."""
        def arm():
            self._cut, self._cut_hold = bytes(pattern), hold
        self._call(arm)

    def hold_after(self, pattern):
        """Once: hold the chunk of a client's bytes that contains pattern until release()."""
        self._call(lambda: setattr(self, "_hold", bytes(pattern)))

    def release(self):
        """Let the chunk hold_after holds go on."""
        self._call(lambda: setattr(self, "_holding", False))

    def set_target(self, host, port):
        """Send new connections to another server."""
        self.target = (host, int(port))

    def connections(self):
        """The number of open connections."""
        return self._call(lambda: len(self._conns)) or 0

    def close(self):
        """Stop the proxy and close every socket; idempotent."""
        if self._stopping:
            return
        self._stopping = True
        self._wake()
        self._thread.join(5)

    def _set(self, mode=None, new=None, delay=None):
        if mode is not None:
            self._mode = mode
        if new is not None:
            self._new = new
        if delay is not None:
            self._delay = delay
        if self._new == "forward" and self._mode == "forward":
            for c in list(self._conns):
                if not c.connected and not c.connecting:
                    self._connect_upstream(c)

    # -- the loop ----------------------------------------------------------------------------

    def _run(self):
        try:
            while not self._stopping:
                try:
                    self._step()
                except Exception:  # a bug here must not silently end all forwarding
                    sys.stderr.write("lktest proxy :%d: %s" % (self.port, traceback.format_exc()))
                    time.sleep(0.01)
        finally:
            self._drop_all(True)
            for s in [self._lsock, self._wake_r, self._wake_w] + self._lingering:
                try:
                    s.close()
                except OSError:
                    pass
            self._sel.close()

    def _step(self):
        """One turn of the loop: wait, accept, read, run queued calls, write what is due."""
        self._update_interest()
        timeout = self._next_timeout()
        for key, events in self._sel.select(timeout):
            what = key.data
            if what == "listen":
                self._accept()
            elif what == "wake":
                try:
                    while self._wake_r.recv(4096):
                        pass
                except BlockingIOError:
                    pass
            else:
                conn, sock = what
                self._ready(conn, sock, events)
        with self._lock:
            calls, self._calls = list(self._calls), collections.deque()
        for fn in calls:
            fn()
        if self._hold_until is not None and time.monotonic() >= self._hold_until:
            self._hold_until = None
            self._set(new="forward")
        self._flush_due()

    def _held(self, pipe):
        """Whether pipe's next chunk is the one hold_after holds."""
        return self._holding and pipe.queue[0][2] == "hold"

    def _due(self, pipe, now):
        """Whether pipe has a chunk to write now."""
        return bool(pipe.queue) and pipe.queue[0][0] <= now and not self._held(pipe)

    def _next_timeout(self):
        if self._mode != "forward":
            return None
        due = self._hold_until
        for c in self._conns:
            for p in (c.up, c.down):
                if p and p.queue and not self._held(p):
                    d = p.queue[0][0]
                    due = d if due is None else min(due, d)
        if due is None:
            return None
        return max(0.0, due - time.monotonic())

    def _accept(self):
        while True:
            try:
                client, peer = self._lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self.accepted += 1
            if self._new == "reject":
                client.close()
                continue
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c = _Conn(client, peer)
            self._conns.append(c)
            if self._new == "forward" and self._mode == "forward":
                self._connect_upstream(c)

    def _connect_upstream(self, c):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.server = s
        c.connecting = True
        err = s.connect_ex(self.target)
        self._sel.register(s, selectors.EVENT_WRITE, (c, s))
        if err not in (0, errno.EINPROGRESS):
            self._close(c)

    def _ready(self, c, sock, events):
        if c.closed:
            return
        if sock is c.server and c.connecting:
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._close(c)
                return
            c.connecting = False
            c.connected = True
            c.up = _Pipe(c.client, c.server)
            c.down = _Pipe(c.server, c.client)
            return
        if not c.connected:
            return
        if events & selectors.EVENT_READ:
            pipe = c.up if sock is c.client else c.down
            try:
                data = sock.recv(_CHUNK)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                self._close(c)
                return
            if data == b"":
                pipe.eof = True
            elif data:
                action = None
                if pipe is c.up and (self._cut is not None or self._hold is not None):
                    seen = pipe.tail + data
                    pipe.tail = seen[-max(len(self._cut or b""), len(self._hold or b"")):]
                    if self._cut is not None and self._cut in seen:
                        action, self._cut = "cut", None
                    elif self._hold is not None and self._hold in seen:
                        action, self._hold, self._holding = "hold", None, True
                        self.holds += 1
                pipe.queue.append([time.monotonic() + self._delay, data, action])
                pipe.queued += len(data)
        if events & selectors.EVENT_WRITE:
            pipe = c.up if sock is c.server else c.down
            self._write(c, pipe)
        self._maybe_finish(c)

    def _flush_due(self):
        if self._mode != "forward":
            return
        for c in list(self._conns):
            if c.connected and not c.closed:
                for p in (c.up, c.down):
                    self._write(c, p)
                self._maybe_finish(c)

    def _write(self, c, pipe):
        if self._mode != "forward" or c.closed:
            return
        now = time.monotonic()
        while self._due(pipe, now):
            data = pipe.queue[0][1]
            try:
                n = pipe.dst.send(data)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._close(c)
                return
            pipe.bytes += n
            if pipe is c.up:
                self.bytes_up += n
            else:
                self.bytes_down += n
            pipe.queued -= n
            if n < len(data):
                pipe.queue[0][1] = data[n:]
                return
            if pipe.queue.popleft()[2] == "cut":
                self._cut_now(c)
                return
        if pipe.eof and not pipe.queue and not pipe.shut:
            pipe.shut = True
            try:
                pipe.dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _maybe_finish(self, c):
        if c.closed or not c.connected:
            return
        if c.up.shut and c.down.shut:
            self._close(c)

    def _update_interest(self):
        forwarding = self._mode == "forward"
        now = time.monotonic()
        for c in self._conns:
            if c.closed:
                continue
            if not c.connected:
                # Held (stalled or blackholed) or connecting: the client is not read until
                # the upstream connection exists, so its bytes wait in the kernel.
                self._modify(c.client, 0, c)
                continue
            for sock, rpipe, wpipe in ((c.client, c.up, c.down), (c.server, c.down, c.up)):
                ev = 0
                if forwarding:
                    if not rpipe.eof and rpipe.queued < _QUEUE_LIMIT:
                        ev |= selectors.EVENT_READ
                    if self._due(wpipe, now):
                        ev |= selectors.EVENT_WRITE
                self._modify(sock, ev, c)

    def _modify(self, sock, ev, c):
        """Set the selector interest of sock; 0 unregisters it (selectors needs some event)."""
        try:
            key = self._sel.get_key(sock)
        except KeyError:
            key = None
        if ev == 0:
            if key is not None:
                self._sel.unregister(sock)
        elif key is None:
            self._sel.register(sock, ev, (c, sock))
        elif key.events != ev:
            self._sel.modify(sock, ev, key.data)

    def _close(self, c, reset=False):
        if c.closed:
            return
        c.closed = True
        for s in (c.client, c.server):
            if s is None:
                continue
            try:
                self._sel.unregister(s)
            except (KeyError, ValueError):
                pass
            if reset:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            try:
                s.close()
            except OSError:
                pass
        if c in self._conns:
            self._conns.remove(c)

    def _cut_now(self, c):
        """cut_after's cut: the client's side closed; the server's left open and no longer
        read until close(), so that the server processes the request (ZooKeeper drops the
        requests of a connection closed before it got to them) and its answer is lost."""
        self.cuts += 1
        if self._cut_hold > 0 and self._new == "forward":
            self._new = "stall"
            self._hold_until = time.monotonic() + self._cut_hold
        server, c.server = c.server, None
        try:
            self._sel.unregister(server)
        except (KeyError, ValueError):
            pass
        self._lingering.append(server)
        self._close(c)

    def _drop_all(self, reset=False):
        n = len(self._conns)
        for c in list(self._conns):
            self._close(c, reset)
        return n

# SPDX-License-Identifier: Apache-2.0
"""The torture run's cluster (lktest.torture, docs/reliability.md): each server in a network
namespace of its own on a bridge of the run, so that one can be cut from the others while
every client still reaches it (`partition-server`); the canary, a client of the harness whose
acknowledged writes must all be there at the end (`zk_lost_writes`); and when the servers'
logs say they dropped transactions (`zk_losses`)."""

import os
import re
import subprocess
import threading
import time

from .case import read_text
from .zk import Ensemble, ZooKeeper

__all__ = ["CREDS", "Canary", "NsEnsemble", "NsZooKeeper", "ServerNet", "zk_losses"]

CREDS = "torture:secret"


def _ip(*args, check=True):
    """Run ip(8); its output, or raise with its error."""
    p = subprocess.run(["ip"] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(map(str, args)), p.stderr.strip()))
    return p.stdout


class ServerNet:
    """Each server in a network namespace of its own, on a bridge of this run: clients (the
    proxies, kazoo) reach every server from the root namespace, and a server is cut from the
    others by blackhole routes inside the namespaces (partition-server), nobody else."""

    def __init__(self, n):
        tag = os.getpid() % 8192  # a /28 of 198.18.0.0/15 (benchmarking addresses) per run
        base = 198 * 2 ** 24 + 18 * 2 ** 16 + tag * 16
        self.addr = lambda i: "%d.%d.%d.%d" % (base >> 24, (base >> 16) & 255,
                                               (base >> 8) & 255, (base & 255) + i)
        self.bridge = "lkt%db" % os.getpid()
        self.ns = ["lkt%d-%d" % (os.getpid(), k + 1) for k in range(n)]
        self.cut, self.routes = set(), {}
        self.ips = [self.addr(k + 1) for k in range(n)]
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", self.addr(14) + "/28", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for k, ns in enumerate(self.ns):
            host, peer = "lkt%dh%d" % (os.getpid(), k + 1), "lkt%dn%d" % (os.getpid(), k + 1)
            _ip("netns", "add", ns)
            _ip("link", "add", host, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", ns)
            _ip("link", "set", host, "master", self.bridge, "up")
            _ip("-n", ns, "addr", "add", self.ips[k] + "/28", "dev", peer)
            _ip("-n", ns, "link", "set", peer, "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def _route(self, a, b, on):
        """The blackhole route in a's namespace to b's address, counted: two partitions
        that cut the same pair (each of its two servers cut) share it."""
        n = self.routes.get((a, b), 0)
        if on and n == 0:
            _ip("-n", self.ns[a], "route", "add", "blackhole", self.ips[b] + "/32")
        elif not on and n == 1:
            _ip("-n", self.ns[a], "route", "del", "blackhole", self.ips[b] + "/32")
        self.routes[(a, b)] = max(0, n + (1 if on else -1))

    def partition(self, k, on):
        """Cut server k from (on) or join it again to (off) every other server."""
        if on == (k in self.cut):
            return
        for j in range(len(self.ns)):
            if j != k:
                self._route(k, j, on)
                self._route(j, k, on)
        (self.cut.add if on else self.cut.discard)(k)

    def close(self):
        for ns in self.ns:
            _ip("netns", "del", ns, check=False)
        _ip("link", "del", self.bridge, check=False)


class NsZooKeeper(ZooKeeper):
    """A ZooKeeper member that runs in its namespace and listens on its address there."""
    net_ips, net_ns = (), ()

    @property
    def host(self):
        return self.net_ips[self.myid - 1]

    @property
    def connect_string(self):
        return "%s:%d" % (self.host, self.port)

    def _write_config(self):
        extra = dict(self.extra_cfg)
        extra["clientPortAddress"] = self.host
        for myid, p1, p2 in self.quorum:
            extra["server.%d" % myid] = "%s:%d:%d" % (self.net_ips[myid - 1], p1, p2)
        saved, self.extra_cfg = self.extra_cfg, extra
        try:
            super()._write_config()
        finally:
            self.extra_cfg = saved

    def argv(self):
        return ["ip", "netns", "exec", self.net_ns[self.myid - 1]] + super().argv()


class NsEnsemble(Ensemble):
    """An Ensemble of NsZooKeeper members on a ServerNet."""

    def __init__(self, workdir, net, **kw):
        self.net = net
        super().__init__(workdir, **kw)

    def _make_members(self):
        super()._make_members()
        cls = type("NsZK", (NsZooKeeper,), {"net_ips": tuple(self.net.ips),
                                             "net_ns": tuple(self.net.ns)})
        for s in self.servers:
            s.__class__ = cls


class Canary(threading.Thread):
    """The harness's own acknowledged writes: a sequential node created every 0.5 s under
    /torture-canary, each with a token of its own, checked after the run. One missing (or
    holding another token) is a write ZooKeeper acknowledged and then lost (finding 5 in
    docs/reliability.md): what it costs the jobs is ZooKeeper's, not leasekeeper's."""

    def __init__(self, hosts):
        super().__init__(daemon=True)
        self.hosts, self.acked = hosts, []
        self.done = threading.Event()

    def run(self):
        from kazoo.client import KazooClient
        c = KazooClient(hosts=self.hosts, timeout=10, auth_data=[("digest", CREDS)])
        try:
            c.start(timeout=30)
            c.ensure_path("/torture-canary")
            n = 0
            while not self.done.wait(0.5):
                token = "%d-%d" % (os.getpid(), n)
                n += 1
                try:
                    self.acked.append((c.create("/torture-canary/c-", token.encode(),
                                                sequence=True), token))
                except Exception:
                    pass  # not acknowledged: nothing to check
        except Exception:
            pass
        finally:
            try:
                c.stop()
                c.close()
            except Exception:
                pass

    def lost(self, kz):
        """The acknowledged writes not found as written, read with kz."""
        from kazoo.exceptions import NoNodeError
        out = []
        for path, token in list(self.acked):
            try:
                if kz.get(path)[0].decode("utf-8", "replace") != token:
                    out.append("%s holds another write than %s" % (path, token))
            except NoNodeError:
                out.append("%s (%s) is gone" % (path, token))
        return out


def zk_losses(logs):
    """Wall seconds at which a server dropped transactions the new leader lacked, from the
    servers' logs: a follower truncating its log, or a leader that cannot tell it to (and
    sends a snapshot instead). What was acknowledged shortly before may be lost (finding 5
    in docs/reliability.md; ZooKeeper 3.8.0)."""
    pat = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .*(Truncating log to get in "
                     r"sync with the leader|Cannot send TRUNC to peer)")
    out = []
    for path in logs:
        for ln in read_text(path).splitlines():
            m = pat.match(ln)
            if m:  # log4j writes local time
                t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
                out.append(t + int(m.group(2)) / 1000.0)
    return sorted(out)

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300
"""Ghosts: ZooKeeper 3.8.0 lost acknowledged deletes of lock nodes in a leader election
(docs/reliability.md, finding 10), and the nodes came back, owned by their owners' live
sessions, at the head of the queue. Here the test plays ZooKeeper: once the worker has
deleted its lock (or lease) node, the test creates a node of exactly that name again, and
the worker, which knows the name as its own deleted one, must leave it out of the order,
delete it again, say so once, and keep running its ticks (without that, it waits behind
the node until the node's session ends)."""

import os
import time

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

# A tick every 2 s; its run lasts about 0.4 s, long enough to be seen holding.
PERIOD_S = 2.0
GHOST_LOG = r"came back: ZooKeeper lost the delete; deleting it again"


class GhostTest(lktest.TestCase):
    def start_worker(self, leases, **job):
        self.start_zookeeper()
        self.ticks = self.path("ticks")
        jobs = {"every": {"command": "sleep 0.4; echo x >> %s" % self.ticks,
                          "schedule": "@every 2s", "leases": leases}}
        jobs["every"].update(job)
        cfg = self.write_config(name="w1", jobs=jobs, worker={"allow_root_jobs": True},
                                safety={"safety_margin": "500ms", "kill_grace": "1s"})
        w = self.worker(cfg, name="w1")
        w.wait_log(r"registered as", timeout=60)
        return w

    def tick_count(self):
        try:
            with open(self.ticks) as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0

    def deleted_names(self, kz, folder, count, timeout):
        """The names of the worker's first `count` nodes in folder, each seen while it
        existed and then seen gone (the worker deleted it)."""
        seen, gone = [], []
        deadline = time.monotonic() + timeout
        while len(gone) < count:
            self.assertLess(time.monotonic(), deadline,
                            "saw %r appear and %r go in %s" % (seen, gone, folder))
            now = kz.get_children(folder) if kz.exists(folder) else []
            for name in now:
                if name not in seen:
                    seen.append(name)
            for name in seen:
                if name not in now and name not in gone:
                    gone.append(name)
            time.sleep(0.01)
        return gone[:count]

    def haunt(self, w, folder, count):
        """Bring back the worker's first `count` deleted nodes in folder; check the worker
        deletes them again, says so once each, and keeps ticking."""
        kz = self.kazoo()
        names = self.deleted_names(kz, folder, count, timeout=60)
        ghosts = ["%s/%s" % (folder, n) for n in names]
        for g in ghosts:
            kz.create(g, b"", ephemeral=True, makepath=True)
        ticks = self.tick_count()
        # Without the fix the next tick waits behind the ghosts for as long as the test's
        # session lives: three more ticks (6 s at the period) are given ten times that.
        self.wait_until(lambda: self.tick_count() >= ticks + 3, timeout=30 * PERIOD_S,
                        msg="three more ticks past the ghost(s) %r" % ghosts)
        self.wait_until(lambda: all(kz.exists(g) is None for g in ghosts), timeout=30,
                        msg="the ghost(s) %r were not deleted" % ghosts)
        text = w.log_text()
        for n in names:
            said = [ln for ln in text.splitlines() if n in ln and "came back" in ln]
            self.assertEqual(len(said), 1, "the ghost %s reported %d times, not once:\n%s"
                             % (n, len(said), "\n".join(said)))
        w.wait_log(GHOST_LOG, timeout=1)

    def test_mutex_ghost_is_deleted_again_and_ticks_go_on(self):
        w = self.start_worker(leases=1)
        self.haunt(w, "/leasekeeper/mutex/every", 1)

    def test_semaphore_ghost_leases_are_deleted_again_and_ticks_go_on(self):
        # Two leases: two ghosts of the worker's own leases would fill them both.
        w = self.start_worker(leases=2)
        self.haunt(w, "/leasekeeper/semaphore/every/leases", 2)

    def test_rwlock_writer_ghost_is_deleted_again_and_ticks_go_on(self):
        w = self.start_worker(leases=1, lock_mode="write")
        self.haunt(w, "/leasekeeper/rwlock/every", 1)


if __name__ == "__main__":
    lktest.main()

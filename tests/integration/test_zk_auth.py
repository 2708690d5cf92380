#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300 split
"""ZooKeeper credentials and ACLs (issue 10, finding 2): with auth_file every node
leasekeeper creates is closed to an unauthenticated client (delete, set and create under
each kind of node); `run` and `check` warn without credentials; the start-up ACL check
reports a lock folder's parent that anyone may write, and refuses to start with
require_acl; an auth_file anyone else can read is refused; status, set-leases and exec
take --auth-file."""

import json
import os
import subprocess

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
CREDS = "lk:s3cret"
NO_AUTH_WARNING = (r"no \[zookeeper\] auth or auth_file: any client of the ensemble can delete "
                   r"this worker's lock nodes and change its job records; see docs/security.md")


class ZkAuthTest(lktest.TestCase):
    def auth_file(self, mode=0o600, text=CREDS + "\n", name="zk.auth"):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def config(self, zookeeper=None, jobs=None, name="alpha"):
        zk = {"session_timeout": "4s"}
        zk.update(zookeeper or {})
        return self.write_config(name=name, zookeeper=zk, safety=SAFETY, jobs=jobs,
                                 worker={"allow_root_jobs": True})

    def lk(self, *args, timeout=60):
        return subprocess.run([lktest.leasekeeper_bin()] + [str(a) for a in args],
                              capture_output=True, text=True, timeout=timeout)

    def walk(self, kz, path):
        """Every node under path (included), read with credentials."""
        from kazoo.exceptions import NoNodeError
        out = [path]
        try:
            children = kz.get_children(path)
        except NoNodeError:  # gone meanwhile (a run's node under running/, a lock node)
            return []
        for child in children:
            out += self.walk(kz, path.rstrip("/") + "/" + child)
        return out

    def test_auth_file_closes_every_node_we_create(self):
        from kazoo.exceptions import NoAuthError, NoNodeError, NotEmptyError
        self.start_zookeeper()
        cfg = self.config(zookeeper={"auth_file": self.auth_file()}, jobs={
            "hold": {"command": "exec sleep 1000"},
            "pool": {"command": "exec sleep 1000", "leases": 2},
            "tick": {"command": "true", "schedule": "@every 2s", "start_deadline": "1500ms"}})
        w = self.worker(cfg)
        w.wait_log(r"registered as /leasekeeper/workers/alpha", timeout=30)
        friend = self.kazoo(auth_data=[("digest", CREDS)])
        root = "/leasekeeper"
        kinds = {
            "root": lambda p: p == root,
            "job record": lambda p: p == root + "/jobs/tick",
            "tick state": lambda p: p == root + "/jobs/tick/state",
            "runs": lambda p: p == root + "/jobs/tick/runs",
            "run record": lambda p: p.startswith(root + "/jobs/tick/runs/run-"),
            "worker": lambda p: p == root + "/workers/alpha",
            "mutex folder": lambda p: p == root + "/mutex/hold",
            "mutex lock node": lambda p: p.startswith(root + "/mutex/hold/_c_"),
            "semaphore folder": lambda p: p == root + "/semaphore/pool",
            "semaphore locks": lambda p: p == root + "/semaphore/pool/locks",
            "semaphore lease": lambda p: p.startswith(root + "/semaphore/pool/leases/_c_"),
        }

        def all_kinds():
            nodes = self.walk(friend, root)
            missing = [k for k, f in kinds.items() if not any(f(p) for p in nodes)]
            return nodes if not missing else None
        # (a semaphore's node in locks/ lives only while a contender acquires: its folder
        # stands for it)
        nodes = self.wait_until(all_kinds, timeout=30, msg="every kind of node")
        stranger = self.kazoo()
        checked = set()
        for p in nodes:
            try:
                with self.assertRaises(NoAuthError, msg="set " + p):
                    stranger.set(p, b"forged")
                with self.assertRaises(NoAuthError, msg="create under " + p):
                    stranger.create(p + "/forged", b"x")
                if p == root:
                    # deleting the root is up to the ACL of its parent, which is not ours;
                    # it is never empty, so it cannot go either
                    with self.assertRaises((NoAuthError, NotEmptyError), msg="delete " + p):
                        stranger.delete(p)
                else:
                    with self.assertRaises(NoAuthError, msg="delete " + p):
                        stranger.delete(p)
            except NoNodeError:
                # a run record trimmed or a lock node released meanwhile, by the worker
                self.assertIsNone(friend.exists(p), p)
                continue
            checked |= {k for k, f in kinds.items() if f(p)}
        self.assertEqual(checked, set(kinds))
        self.assertEqual(json.loads(friend.get(root + "/workers/alpha")[0])["node"], "alpha")
        # checked before the worker registered as ready
        self.assertRegex(w.log_text(), r"ACLs checked: no one else may create or delete in "
                                       r"the 21 folders of this worker's nodes\n.*registered as")
        self.assertNotIn("others may create or delete", w.log_text())
        self.assertNotRegex(w.log_text(), NO_AUTH_WARNING)
        self.assertEqual(w.stop(timeout=15), 0)

    def test_run_and_check_warn_without_auth(self):
        self.start_zookeeper()
        cfg = self.config()
        r = self.lk("check", "-c", cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration OK", r.stdout)
        self.assertRegex(r.stderr, r"^leasekeeper check: warning: " + NO_AUTH_WARNING + "\n$")
        w = self.worker(cfg)
        w.wait_log(NO_AUTH_WARNING, timeout=30)
        w.wait_log(r"registered as", timeout=30)
        # with credentials, neither warns
        cfg = self.config(zookeeper={"auth_file": self.auth_file()}, name="beta")
        r = self.lk("check", "-c", cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertIn("auth             digest as lk, from " + self.path("zk.auth"), r.stdout)
        self.assertNotIn("s3cret", r.stdout)

    def open_parent_config(self, **zk):
        self.start_zookeeper()
        self.kazoo().create("/shared", b"")  # world:anyone:cdrwa, as Curator users leave it
        zk["auth_file"] = self.auth_file()
        return self.config(zookeeper=zk, jobs={
            "hold": {"command": "exec sleep 1000", "lock_path": "/shared/hold"}})

    def test_open_lock_parent_warns(self):
        w = self.worker(self.open_parent_config())
        w.wait_log(r"others may create or delete in /shared \(world:anyone:cd\): they can "
                   r"delete lock nodes", timeout=30)
        w.wait_log(r"ACLs checked: of \d+ folders, 1 are open to others", timeout=10)
        friend = self.kazoo(auth_data=[("digest", CREDS)])
        self.wait_until(lambda: friend.exists("/shared/hold") and
                        friend.get_children("/shared/hold"), timeout=30,
                        msg="the job contends all the same")
        self.assertNotRegex(w.log_text(), r"others may create or delete in /leasekeeper")
        self.assertEqual(w.stop(timeout=15), 0)

    def test_open_roles_node_warns(self):
        """<root>/roles (who the workers and the reader are) is checked like a job record:
        one that others may write could be forged, so WRITE counts as open there."""
        from kazoo.security import CREATOR_ALL_ACL, make_acl
        self.start_zookeeper()
        friend = self.kazoo(auth_data=[("digest", CREDS)])
        friend.create("/leasekeeper", b"", acl=CREATOR_ALL_ACL)
        friend.create("/leasekeeper/roles", b"", acl=CREATOR_ALL_ACL + [
            make_acl("world", "anyone", read=True, write=True)])
        w = self.worker(self.config(zookeeper={"auth_file": self.auth_file()}))
        w.wait_log(r"others may create or delete in /leasekeeper/roles \(world:anyone:w\)",
                   timeout=30)
        w.wait_log(r"ACLs checked: of \d+ folders, 1 are open to others", timeout=10)

    def test_open_lock_parent_refused_with_require_acl(self):
        w = self.worker(self.open_parent_config(require_acl=True))
        self.assertEqual(w.wait(timeout=60), 78)
        self.assertRegex(w.log_text(), r"others may create or delete in /shared")
        self.assertRegex(w.log_text(), r"refusing to start: .*require_acl = true")
        # no job contended: the lock folder was never made
        self.assertIsNone(self.kazoo().exists("/shared/hold"))

    def test_require_acl_needs_credentials(self):
        cfg = self.write_config(name="alpha", hosts="127.0.0.1:2181",
                                zookeeper={"require_acl": True})
        r = self.lk("check", "-c", cfg)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"worker\.ini:\d+: require_acl = true needs credentials")

    def test_bad_auth_file_is_refused(self):
        def check(path, regex, **zk):
            zk.setdefault("auth_file", path)
            cfg = self.write_config(name="alpha", hosts="127.0.0.1:2181", zookeeper=zk)
            with open(cfg) as f:
                lines = f.read().split("\n")
            line = 1 + next(i for i, s in enumerate(lines) if s.startswith("auth_file"))
            r = self.lk("check", "-c", cfg)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertNotIn("configuration OK", r.stdout)
            self.assertRegex(r.stderr, r"%s:%d: auth_file: %s" % (cfg, line, regex))
            self.assertNotIn("s3cret", r.stderr)
            r = self.lk("run", "-c", cfg)
            self.assertEqual(r.returncode, 78, r.stderr)
        loose = self.auth_file(mode=0o644)
        check(loose, r"%s has mode 0644: the password would be readable by group or "
                     r"others; chmod 0600 %s" % (loose, loose))
        check(self.auth_file(mode=0o640, name="g.auth"), r".*has mode 0640")
        check(self.path(), r".* is not a regular file")
        check(self.path("missing.auth"), r"cannot open .*missing.auth: No such file")
        check(self.auth_file(text="nocolon\n", name="bad.auth"), r".*does not hold one line")
        check(self.auth_file(text="lk:a\nlk:b\n", name="two.auth"), r".*does not hold one line")
        other = self.auth_file(name="other.auth")
        os.chown(other, 65534, 65534)
        check(other, r".*is owned by uid 65534, not root")
        # review F4: a link is not followed, not even to a root-only file (whoever can write
        # its directory would have a line of any file sent to ZooKeeper as credentials)
        unrelated = self.auth_file(text="db.internal:password\n", name="unrelated")
        link = self.path("link.auth")
        os.symlink(unrelated, link)
        check(link, r"%s is a symbolic link, which is not followed: name the file itself"
                    % link)
        # nor is a file in a directory another user owns: nobody could swap it
        userdir = self.path("userdir")
        os.mkdir(userdir, 0o755)
        creds = os.path.join(userdir, "zk.auth")
        with open(os.open(creds, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(CREDS + "\n")
        os.chown(userdir, 65534, 65534)
        cfg = self.write_config(name="gamma", hosts="127.0.0.1:2181",
                                zookeeper={"auth_file": creds})
        r = self.lk("check", "-c", cfg)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertRegex(r.stderr, r"%s:\d+: the directory %s, which holds the auth_file, is "
                                   r"owned by a user other than root, and whoever can write it "
                                   r"can replace the ZooKeeper credentials: chown root %s\n"
                                   % (cfg, userdir, userdir))
        # both auth and auth_file
        cfg = self.write_config(name="beta", hosts="127.0.0.1:2181",
                                zookeeper={"auth": CREDS, "auth_file": self.auth_file()})
        r = self.lk("check", "-c", cfg)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"worker\.ini:\d+: auth and auth_file are both set")

    def test_admin_commands_take_auth_file(self):
        self.start_zookeeper()
        creds = self.auth_file()
        w = self.worker(self.config(zookeeper={"auth_file": creds},
                                    jobs={"hold": {"command": "exec sleep 1000"}}))
        w.wait_log(r"registered as", timeout=30)
        friend = self.kazoo(auth_data=[("digest", CREDS)])
        self.wait_until(lambda: friend.exists("/leasekeeper/jobs/hold"), timeout=30)
        hosts = self.zk.connect_string
        r = self.lk("status", "--zk", hosts, "--auth-file", creds, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual([x["znode"] for x in out["workers"]], ["alpha"])
        self.assertEqual([j["name"] for j in out["jobs"]], ["hold"])
        r = self.lk("set-leases", "--zk", hosts, "--auth-file", creds, "adhoc", "1", "--create")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(friend.get("/leasekeeper/jobs/adhoc")[0])["leases"], 1)
        r = self.lk("exec", "--zk", hosts, "--auth-file", creds, "--session-timeout", "4s",
                    "--safety-margin", "500ms", "--kill-grace", "1s", "adhoc", "--", "true")
        self.assertEqual(r.returncode, 0, r.stderr)
        # what exec made is closed too
        from kazoo.exceptions import NoAuthError
        with self.assertRaises(NoAuthError):
            self.kazoo().delete("/leasekeeper/mutex/adhoc")
        # without credentials status cannot read the cluster
        r = self.lk("status", "--zk", hosts, "--json")
        self.assertNotEqual(r.returncode, 0)
        # a readable credentials file is refused before any connection
        loose = self.auth_file(mode=0o644, name="loose.auth")
        for args in (["status", "--zk", hosts], ["set-leases", "--zk", hosts, "adhoc", "1"],
                     ["exec", "--zk", hosts, "adhoc", "--", "true"]):
            r = self.lk(args[0], "--auth-file", loose, *args[1:])
            self.assertEqual(r.returncode, 78, r.stderr)
            self.assertRegex(r.stderr, r"^leasekeeper %s: --auth-file: %s has mode 0644: .*"
                                       r"chmod 0600 %s\n$" % (args[0], loose, loose))


if __name__ == "__main__":
    lktest.main()

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=300
"""A run's output in its run record, and `leasekeeper logs` reading it from any host: the
tail of a failed run (bounded by record_output, whole lines, valid UTF-8, control bytes
escaped on the terminal) from a worker that did not run it, --run, --last, --json, and
record_output = 0."""

import json
import re
import subprocess

import _lktest_path  # noqa: F401 (puts tests/lib on sys.path)
import lktest

SAFETY = {"safety_margin": "500ms", "kill_grace": "1s"}
# 400 numbered lines (about 6 KiB), a line with an escape sequence, a byte that is not
# UTF-8 and a NUL, then the last line on stderr, and exit status 3.
FAILING = ("i=1; while [ $i -le 400 ]; do echo \"line $i of $LEASEKEEPER_NODE\"; i=$((i+1)); "
           "done; printf 'red \\033[31mX\\033[0m bad \\377 nul \\000 end\\n'; "
           "echo 'the very end' >&2; exit 3")


class LogsTest(lktest.TestCase):
    def logs(self, config, *args):
        return subprocess.run([lktest.leasekeeper_bin(), "logs", "-c", config] + list(args),
                              capture_output=True, timeout=60)

    def test_tail_of_a_failed_run_from_another_worker(self):
        self.start_zookeeper(tick_ms=200)
        # history 20: on a busy machine some ticks are recorded missed among the runs.
        jobs = {"boom": {"command": FAILING, "schedule": "@every 1s", "history": 20,
                         "record_output": "1K"},
                "quiet": {"command": "echo not kept", "schedule": "@every 1s", "history": 2,
                          "record_output": "0"}}
        configs, procs = {}, {}
        for name in ("alpha", "beta"):
            configs[name] = self.write_config(
                name=name, zookeeper={"session_timeout": "4s"}, safety=SAFETY,
                worker={"allow_root_jobs": True}, jobs=jobs)
            procs[name] = self.worker(configs[name], name=name)
            procs[name].wait_log(r"registered as", timeout=30)
        kz = self.kazoo()

        def ran():
            return [r for r in self.runs(kz, "boom") if r.get("run_id")]
        self.wait_until(lambda: len(ran()) >= 3, timeout=60, msg="3 runs of boom")
        self.wait_until(lambda: self.runs(kz, "quiet"), timeout=60, msg="a run of quiet")
        for p in procs.values():  # the records stay as they are while `logs` reads them
            p.stop(timeout=30)

        # The record itself: the last KiB at most, from a line's start, NUL and the byte
        # that is not UTF-8 as U+FFFD, the escape sequence as it was (JSON escapes it).
        rec = ran()[-1]
        self.assertEqual(rec["reason"], "failed")
        self.assertEqual(rec["status"], 3)
        out = rec["output"]
        self.assertLessEqual(len(out.encode()), 1024 + 4)  # two U+FFFD for two bytes
        self.assertTrue(out.startswith("line "), out[:40])
        self.assertTrue(out.endswith("red \x1b[31mX\x1b[0m bad \ufffd nul \ufffd end\n"
                                     "the very end\n"), out[-80:])
        self.assertIn("line 400 of %s\n" % rec["node"], out)
        self.assertNotIn("line 300 ", out)  # cut at about 1 KiB
        for q in self.runs(kz, "quiet"):
            self.assertNotIn("output", q)

        # From the worker that did not run it, and with no configuration at all.
        other = "beta" if rec["node"] == "alpha" else "alpha"
        r = self.logs(configs[other], "boom", "--run", rec["run_id"])
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout.decode()
        self.assertRegex(text, r"^=== run %s \(record \d+\): failed, exit status 3, node %s, "
                               r"tick " % (re.escape(rec["run_id"]), rec["node"]))
        self.assertIn("\nline 400 of %s\n" % rec["node"], text)
        self.assertIn("red \\x1b[31mX\\x1b[0m bad \\u{FFFD} nul \\u{FFFD} end\nthe very end\n",
                      text)
        self.assertNotIn(b"\x1b", r.stdout)  # never raw to the terminal
        self.assertEqual(text.count("=== run "), 1)

        r = subprocess.run([lktest.leasekeeper_bin(), "logs", "--zk", self.zk.connect_string,
                            "boom", "--last", "3", "--json"], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        self.assertEqual(len(got), 3)
        self.assertEqual([g["run"] for g in got], sorted(g["run"] for g in got))
        r = subprocess.run([lktest.leasekeeper_bin(), "logs", "--zk", self.zk.connect_string,
                            "boom", "--last", "20", "--json"], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        every = json.loads(r.stdout)
        self.assertEqual(every[-3:], got)
        r = self.logs(configs[other], "boom")  # the newest record, run or missed
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode().count("=== run "), 1)
        self.assertRegex(r.stdout.decode(), r"^=== run \S* ?\(record %d\): " % every[-1]["run"])
        for g in every:  # each run failed; a tick a busy machine missed is said missed
            if "run_id" in g:
                self.assertEqual((g["reason"], g["status"]), ("failed", 3))
                self.assertTrue(g["output"].endswith("end\nthe very end\n"))
            else:
                self.assertEqual(g["outcome"], "missed", g)
        got = [g for g in every if "run_id" in g]
        self.assertGreaterEqual(len(got), 3, every)

        # --run picks one by the number logs shows; a run past the history is an error.
        r = self.logs(configs[other], "boom", "--run", str(got[0]["run"]), "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([g["run"] for g in json.loads(r.stdout)], [got[0]["run"]])
        # ... or by the run's id, the one its log lines (run=) and its record carry.
        self.assertIn("run=%s " % got[1]["run_id"], procs[got[1]["node"]].log_text())
        r = self.logs(configs[other], "boom", "--run", got[1]["run_id"], "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([g["run"] for g in json.loads(r.stdout)], [got[1]["run"]])
        r = self.logs(configs[other], "boom", "--run", "nosuchnode-1-1")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"no run nosuchnode-1-1 of boom", r.stderr)
        r = self.logs(configs[other], "boom", "--run", "99999999")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"no run 99999999 of boom", r.stderr)
        r = self.logs(configs[other], "nosuchjob")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b'the cluster knows no job "nosuchjob" under /leasekeeper', r.stderr)
        r = self.logs(configs[other], "quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"(no output recorded)", r.stdout)
        for bad in (["boom", "--last", "0"], ["boom", "--run", "x y"], [],
                    ["boom", "--run", "1", "--last", "2"], ["a", "b"]):
            self.assertEqual(self.logs(configs[other], *bad).returncode, 64, bad)

    def test_record_output_is_bounded(self):
        cfg = self.write_config(hosts="127.0.0.1:1", worker={"allow_root_jobs": True},
                                jobs={"big": {"command": "true", "record_output": "17K"}})
        r = subprocess.run([lktest.leasekeeper_bin(), "check", "-c", cfg], capture_output=True,
                           timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # check: 1 for an error
        self.assertRegex(r.stderr.decode(), r"jobs\.ini:\d+: record_output \"17K\" is more "
                         r"than 16K: .*record_output = 16K, or 0")


if __name__ == "__main__":
    lktest.main()

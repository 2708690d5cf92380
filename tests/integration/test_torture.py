#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=420 split label=torture
"""scripts/torture in the suite (docs/reliability.md): one short seeded run against the
normal build must come out clean, and each sabotage of the build's leasekeeper-sabotage (a
target built with the rest, the faults chosen by LEASEKEEPER_SABOTAGE at run time) must be
reported by the checker: the checker can fail.

The short run: 3 servers, 3 workers, every fault class, 2 minutes of faults, seed 1400 (its
two minutes draw every one of the 17 classes; docs/reliability.md); w3's clock 31 s ahead
(the seed's skew, libfaketime). Three workers rather than five, and two minutes rather than
three, to keep the suite within its budget (docs/testing.md); the sabotage runs are shorter
still (15 to 40 s, from when each was first caught), with only the faults that expose them.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.environ.get("LEASEKEEPER_SOURCE_DIR",
                                               os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests", "lib"))
import lktest  # noqa: E402

# Record disagreements are reported, not failed on: the supervisor stamps a run's start and
# end as it sees them (issue 21), and the long runs judge the item (docs/reliability.md), but
# its 100 ms tolerance is a timing that a CI machine loaded past its cores can exceed on a
# correct record, and this test must hold on a busy machine.
SHORT = ["--minutes", "2", "--workers", "3", "--seed", "1400", "--settle", "15",
         "--allow", "record_disagreements"]
SABOTAGE = ["--workers", "3", "--skew", "0", "--settle", "10"]
# Minutes of each sabotage run, from when each was first caught (docs/reliability.md, "In
# the suite"): no-kill at 38.5 s (its stops come late in seed 4's schedule: kept at 40 s),
# no-claim-check at 1.2 s in 3 runs of 3 (15 s: over 10 times that), late-release at 7.3 to
# 11.3 s in 3 runs of 3 (30 s: 2.6 times the latest, with 6 or 7 overlaps by then).
MINUTES = {"no-kill": "0.67", "no-claim-check": "0.25", "late-release": "0.5"}


class TortureTest(lktest.TestCase):
    def torture(self, *args, timeout=400):
        """Run scripts/torture; return (exit status, {item: count}, output)."""
        env = dict(os.environ, LEASEKEEPER_SABOTAGE_BIN=os.path.join(
            lktest.build_dir(), "leasekeeper-sabotage"))
        argv = ["/usr/bin/python3", os.path.join(lktest.source_dir(), "scripts", "torture"),
                "--dir", self.path("torture")] + list(args)
        p = self.proc(argv, "torture", env=env)
        status = p.wait(timeout)
        out = p.log_text()
        counts = {m.group(1): int(m.group(2))
                  for m in re.finditer(r"^([a-z_]+) +(\d+)", out, re.M)}
        self.assertIn("overlaps", counts, out[-3000:])
        return status, counts, out

    def test_short_seeded_run_is_clean(self):
        status, counts, out = self.torture(*SHORT)
        print(out[out.find("overlaps"):])
        bad = {k: v for k, v in counts.items() if v
               and k in ("overlaps", "time_overlaps", "fence_regressions", "ticks_twice",
                         "ticks_lost", "false_reasons", "orphan_lock_nodes", "leftovers",
                         "worker_crashes", "sanitizer_reports", "hostile_accepted")}
        self.assertEqual(bad, {}, out[-6000:])
        self.assertEqual(status, 0, out[-3000:])
        self.assertGreater(counts["starts"], 100, "the jobs hardly ran")

    def test_sabotage_no_kill_is_caught(self):
        status, counts, out = self.torture(
            "--sabotage", "no-kill", "--minutes", MINUTES["no-kill"], "--seed", "4",
            "--faults", "stop", *SABOTAGE)
        self.assertEqual(status, 1, out[-3000:])
        self.assertGreater(counts["overlaps"], 0, out[-3000:])

    def test_sabotage_no_claim_check_is_caught(self):
        status, counts, out = self.torture(
            "--sabotage", "no-claim-check", "--minutes", MINUTES["no-claim-check"], "--seed", "3",
            "--faults", "none", *SABOTAGE)
        self.assertEqual(status, 1, out[-3000:])
        self.assertGreater(counts["ticks_twice"], 0, out[-3000:])

    def test_sabotage_late_release_is_caught(self):
        status, counts, out = self.torture(
            "--sabotage", "late-release", "--minutes", MINUTES["late-release"], "--seed", "2",
            "--faults", "none", *SABOTAGE)
        self.assertEqual(status, 1, out[-3000:])
        self.assertGreater(counts["overlaps"], 0, out[-3000:])


if __name__ == "__main__":
    lktest.main()

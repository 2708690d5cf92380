# SPDX-License-Identifier: Apache-2.0
"""lktest: the integration-test harness of leasekeeper (see docs/testing.md).

    import _lktest_path  # tests/integration/_lktest_path.py: puts tests/lib on sys.path
    import lktest

    class T(lktest.TestCase):
        def test_x(self):
            self.start_zookeeper()
            ...

    if __name__ == "__main__":
        lktest.main()
"""

from .case import (RecordFile, TestCase, cgroup_folder, cgroup_mount, main, read_text, wait_until,
                   write_config, write_ini)
from .paths import build_dir, leasekeeper_bin, source_dir, tool
from .peers import compile_curator_peer, curator_peer, curator_peer_argv
from .ports import free_port, release_port
from .procs import Proc, ProcExited, cleanup_all, pid_alive, tail
from .proxy import Proxy
from .record import (DeathWatcher, OverlapReport, Record, Recorder, check_overlaps, heartbeats,
                     kill_recorded, parse_records)
from .runrecords import RunRecord, iso_ms, job_runs, paper_overlaps, run_records
from .zk import Ensemble, ZooKeeper, ZooKeeperError, four_letter

__all__ = [
    "cgroup_folder", "cgroup_mount", "read_text", "TestCase", "main", "wait_until", "write_config", "write_ini", "RecordFile",
    "build_dir", "leasekeeper_bin", "source_dir", "tool",
    "compile_curator_peer", "curator_peer", "curator_peer_argv",
    "free_port", "release_port", "RunRecord", "iso_ms", "job_runs", "paper_overlaps", "run_records",
    "Proc", "ProcExited", "cleanup_all", "pid_alive", "tail",
    "Proxy",
    "DeathWatcher", "OverlapReport", "Record", "Recorder", "check_overlaps", "heartbeats", "kill_recorded",
    "parse_records",
    "ZooKeeper", "Ensemble", "ZooKeeperError", "four_letter",
]

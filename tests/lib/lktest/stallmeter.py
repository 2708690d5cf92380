# SPDX-License-Identifier: Apache-2.0
"""A meter of the host's stalls, run beside a torture run at the workers' priority: it asks
for 10 ms of sleep, over and over, and writes each wake-up later than STALL_MS past its
deadline as a line "stall FROM TO" (CLOCK_MONOTONIC ns: when it should have woken, when it
did). A process at the workers' priority that is not scheduled for that long saw what a
supervisor would see: a run's end stamped late because nobody could stamp it. The checker
reports a record disagreement that such a stall covers apart from the others
(docs/reliability.md, "Host stalls").

    python3 stallmeter.py OUT
"""

import os
import sys
import time

STEP_NS = 10 * 1000 * 1000
STALL_MS = 30


def main(out):
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    while True:
        due = time.monotonic_ns() + STEP_NS
        time.sleep(STEP_NS / 1e9)
        now = time.monotonic_ns()
        if now - due >= STALL_MS * 1000 * 1000:
            os.write(fd, b"stall %d %d\n" % (due, now))


def read(path, mono_to_wall_ns):
    """[[from, to]] wall seconds of the stalls a meter wrote to path."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "stall":
                    try:
                        a, b = int(parts[1]), int(parts[2])
                    except ValueError:
                        continue
                    out.append([(a + mono_to_wall_ns) / 1e9, (b + mono_to_wall_ns) / 1e9])
    except OSError:
        pass
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: stallmeter.py OUT")
    main(sys.argv[1])

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=60
"""scripts/spdx on a tree of its own (a copy of the script in a temporary directory, with a
file of each kind): it adds the line where it belongs (first in C files, after the #! line
of scripts and Python files, first in a Python module without one), leaves other files and
another license's line alone, changes nothing on a second run, keeps a file's mode, and
`--check` lists exactly the files without the line and exits 1, then 0 once they have it."""

import os
import shutil
import stat
import subprocess
import tempfile
import unittest

SRC = os.environ.get("LEASEKEEPER_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
C_LINE = "/* SPDX-License-Identifier: Apache-2.0 */\n"
HASH_LINE = "# SPDX-License-Identifier: Apache-2.0\n"

FILES = {
    "src/common/log.c": "/* Runs in: anywhere. */\nint x;\n",
    "src/config/include/config.h": "/* config.h */\n",
    "tests/unit/test_x.c": "int main(void) { return 0; }\n",
    "tests/unit/test_y.py": "#!/usr/bin/python3\n# ctest: timeout=60\n\"\"\"Doc.\"\"\"\n",
    "tests/lib/mod/__init__.py": "\"\"\"A module.\"\"\"\n",
    "tests/tools/helper": "#!/bin/sh\necho hi\n",
    "scripts/tool": "#!/bin/bash\nset -e\n",
    "scripts/notes.txt": "not code\n",
    "tests/fuzz/corpus/config/seed-1": "#!/bin/sh\n[job x]\n",
    "tests/fuzz/fuzz_x.c": "/* SPDX-License-Identifier: MIT */\nint y;\n",
    "docs/x.py": "print(1)\n",
}


class SpdxTest(unittest.TestCase):
    def setUp(self):
        self.top = tempfile.mkdtemp(prefix="spdx-test-")
        self.addCleanup(shutil.rmtree, self.top)
        os.makedirs(os.path.join(self.top, "scripts"))
        shutil.copy(os.path.join(SRC, "scripts", "spdx"), os.path.join(self.top, "scripts"))
        for rel, text in FILES.items():
            path = os.path.join(self.top, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        os.chmod(os.path.join(self.top, "scripts", "tool"), 0o755)

    def spdx(self, *args):
        return subprocess.run(["/usr/bin/python3", os.path.join(self.top, "scripts", "spdx")] +
                              list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=30)

    def read(self, rel):
        with open(os.path.join(self.top, rel)) as f:
            return f.read()

    def test_check_add_idempotent(self):
        missing = ["scripts/tool", "src/common/log.c", "src/config/include/config.h",
                   "tests/lib/mod/__init__.py", "tests/tools/helper", "tests/unit/test_x.c",
                   "tests/unit/test_y.py"]
        r = self.spdx("--check")
        self.assertEqual(r.returncode, 1, r.stdout)
        listed = sorted(line.split(":")[0] for line in r.stdout.splitlines()
                        if line.endswith("no SPDX-License-Identifier line"))
        self.assertEqual(listed, missing)
        self.assertEqual(self.read("src/common/log.c"), FILES["src/common/log.c"])  # unchanged

        r = self.spdx()
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(sorted(line.split(":")[0] for line in r.stdout.splitlines()), missing)
        self.assertEqual(self.read("src/common/log.c"), C_LINE + FILES["src/common/log.c"])
        self.assertEqual(self.read("tests/unit/test_x.c"), C_LINE + FILES["tests/unit/test_x.c"])
        self.assertEqual(self.read("tests/unit/test_y.py"),
                         "#!/usr/bin/python3\n" + HASH_LINE +
                         "# ctest: timeout=60\n\"\"\"Doc.\"\"\"\n")
        self.assertEqual(self.read("tests/lib/mod/__init__.py"),
                         HASH_LINE + FILES["tests/lib/mod/__init__.py"])
        self.assertEqual(self.read("scripts/tool"), "#!/bin/bash\n" + HASH_LINE + "set -e\n")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.top, "scripts", "tool")).st_mode),
                         0o755)
        # Left alone: not code, fuzz inputs, another license, outside src/ tests/ scripts/.
        for rel in ("scripts/notes.txt", "tests/fuzz/corpus/config/seed-1",
                    "tests/fuzz/fuzz_x.c", "docs/x.py"):
            self.assertEqual(self.read(rel), FILES[rel], rel)

        before = {rel: self.read(rel) for rel in FILES}
        r = self.spdx()
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        self.assertEqual({rel: self.read(rel) for rel in FILES}, before)
        r = self.spdx("--check")
        self.assertEqual((r.returncode, r.stdout), (0, ""))

    def test_bad_arguments(self):
        r = self.spdx("--fix")
        self.assertEqual(r.returncode, 64, r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)

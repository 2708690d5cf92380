# SPDX-License-Identifier: Apache-2.0
"""Puts tests/lib on sys.path so that `import lktest` finds the harness: under
$LEASEKEEPER_SOURCE_DIR when set (ctest sets it), else in the tree this file is in. Every
test file here imports it before lktest; Python puts a script's own directory first on
sys.path, so `python3 tests/integration/test_X.py [Class.method]` finds it from any cwd.
"""

import os
import sys

_LIB = os.path.join(os.environ.get("LEASEKEEPER_SOURCE_DIR",
                                   os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")),
                    "tests", "lib")
if _LIB not in sys.path:
    sys.path.insert(0, _LIB)

# SPDX-License-Identifier: Apache-2.0
"""Where things are: the leasekeeper binary, the build dir, the source tree, test tools."""

import os

__all__ = ["leasekeeper_bin", "build_dir", "source_dir", "tool"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def source_dir():
    """$LEASEKEEPER_SOURCE_DIR, else the tree this package lives in."""
    d = os.environ.get("LEASEKEEPER_SOURCE_DIR")
    if d:
        return os.path.abspath(d)
    return os.path.abspath(os.path.join(_HERE, "..", "..", ".."))


def build_dir(required=True):
    """$LEASEKEEPER_BUILD_DIR (set by ctest), else the directory of $LEASEKEEPER_BIN."""
    d = os.environ.get("LEASEKEEPER_BUILD_DIR")
    if not d and os.environ.get("LEASEKEEPER_BIN"):
        d = os.path.dirname(os.path.abspath(os.environ["LEASEKEEPER_BIN"]))
    if d:
        return os.path.abspath(d)
    if required:
        raise RuntimeError("LEASEKEEPER_BUILD_DIR is not set: run the test through ctest, or "
                           "export LEASEKEEPER_BUILD_DIR=<build dir> (see docs/testing.md)")
    return None


def leasekeeper_bin():
    """$LEASEKEEPER_BIN, else <build dir>/leasekeeper."""
    b = os.environ.get("LEASEKEEPER_BIN")
    if not b:
        b = os.path.join(build_dir(), "leasekeeper")
    if not os.access(b, os.X_OK):
        raise RuntimeError("leasekeeper binary not found or not executable: %s "
                           "(build it, or set LEASEKEEPER_BIN)" % b)
    return os.path.abspath(b)


def tool(name):
    """A helper program built from tests/tools/NAME.c, e.g. tool("lk-record")."""
    p = os.path.join(build_dir(), name)
    if not os.access(p, os.X_OK):
        raise RuntimeError("%s not found in the build dir (%s): build it first "
                           "(cmake --build <build dir> --target %s)" % (name, build_dir(), name))
    return p

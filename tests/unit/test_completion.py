#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=60
"""The bash completion, deploy/bash-completion/leasekeeper, driven in bash against the built
binary ($LEASEKEEPER_BUILD_DIR/leasekeeper): the first word completes to exactly the
commands `leasekeeper --help` lists (each of which `COMMAND --help` accepts), a command's
options to exactly the options its usage names (read here with a parser of this test's own),
a prefix to the matching ones only, a FILE after -c to paths, and the words after
`exec NAME --` to commands."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("LEASEKEEPER_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("LEASEKEEPER_BUILD_DIR", os.path.join(SRC, "build"))
BIN = os.path.join(BUILD, "leasekeeper")
SCRIPT = os.path.join(SRC, "deploy", "bash-completion", "leasekeeper")


def complete(*words):
    """What the completion offers for the command line `words` (the last one being typed)."""
    quoted = " ".join("'%s'" % w.replace("'", "'\\''") for w in (BIN,) + words)
    prog = ('source "$1" || exit 2\n'
            "COMP_WORDS=(%s)\n"
            "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
            'COMP_LINE="${COMP_WORDS[*]}"\n'
            "_leasekeeper || exit 3\n"
            'printf "%%s\\n" "${COMPREPLY[@]}"\n' % quoted)
    r = subprocess.run(["bash", "-c", prog, "bash", SCRIPT], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError("completion failed (%d): %s" % (r.returncode, r.stderr))
    return sorted(set(x for x in r.stdout.splitlines() if x))


def help_text(*args):
    r = subprocess.run([BIN] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30)
    return r.returncode, r.stdout


def commands():
    """The commands of `leasekeeper --help`: its indented lines' first words."""
    rc, text = help_text("--help")
    assert rc == 0, text
    return sorted(set(m.group(1) for m in re.finditer(r"(?m)^  ([a-z][a-z-]*)\s", text)))


def options(cmd):
    """The options a command's usage names: `leasekeeper CMD --help`, or, where that prints
    the general usage, the command's entry in it."""
    rc, text = help_text(cmd, "--help")
    assert rc == 0, (cmd, text)
    if not text.startswith("usage: leasekeeper %s" % cmd):
        entry, on = [], False
        for line in text.splitlines():
            if re.match(r"  %s\s" % re.escape(cmd), line):
                on = True
            elif not line.startswith("         "):
                on = False
            if on:
                entry.append(line)
        assert entry, (cmd, text)
        text = "\n".join(entry)
    return sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)", text)) | {"--help"})


class CompletionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BIN, os.X_OK):
            raise AssertionError("%s is not built" % BIN)
        cls.commands = commands()

    def test_commands(self):
        # The list this test reads is the real one, not an empty one.
        for known in ("run", "check", "status", "exec", "logs", "run-now", "web"):
            self.assertIn(known, self.commands)
        self.assertEqual(complete(""), self.commands)
        for cmd in self.commands:
            rc, text = help_text(cmd, "--help")
            self.assertEqual(rc, 0, "%s --help: %s" % (cmd, text))

    def test_command_prefix(self):
        self.assertEqual(complete("ru"), [c for c in self.commands if c.startswith("ru")])
        self.assertIn("run-now", complete("ru"))
        self.assertEqual(complete("-"), ["--help", "--version"])

    def test_options_of_every_command(self):
        for cmd in self.commands:
            if cmd == "version":
                continue
            want = options(cmd)
            self.assertIn("--help", want)
            self.assertEqual(complete(cmd, "-"), want, cmd)
        self.assertIn("--json", complete("status", "--"))
        self.assertIn("--leases", complete("exec", "--"))
        self.assertIn("-c", complete("run", "-"))

    def test_option_prefix_after_arguments(self):
        self.assertEqual(complete("exec", "-c", "/etc/x.ini", "--le"), ["--leases"])
        self.assertEqual(complete("logs", "--json", "nightly", "--la"), ["--last"])

    def test_files_after_c(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "worker.ini")
            open(path, "w").close()
            self.assertEqual(complete("check", "-c", os.path.join(d, "wor")), [path])
            self.assertEqual(complete("status", "--auth-file", os.path.join(d, "w")), [path])

    def test_command_after_exec_separator(self):
        self.assertIn("true", complete("exec", "NAME", "--", "tru"))
        # Before the --, options still complete.
        self.assertIn("--timeout", complete("exec", "NAME", "--ti"))


if __name__ == "__main__":
    unittest.main(verbosity=2)

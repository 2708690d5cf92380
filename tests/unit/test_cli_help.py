#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=60
"""Every command of `leasekeeper --help` answers its own `--help` with its usage, exit 0, and
that usage names every long option the command's getopt table takes (read from its source).
No ZooKeeper: ctest runs it as a unit test."""
import json
import os
import re
import subprocess
import sys
import unittest

BUILD = os.environ.get("LEASEKEEPER_BUILD_DIR", "build")
SRC = os.environ.get("LEASEKEEPER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("LEASEKEEPER_BIN", os.path.join(BUILD, "leasekeeper"))

# The source file holding each command's option table (the controls share control.c's).
SOURCES = {
    "run": "src/worker/runcmd.c", "check": "src/cli/check.c", "next": "src/cli/next.c",
    "status": "src/cli/status.c", "logs": "src/cli/logs.c", "exec": "src/cli/exec.c",
    "set-leases": "src/cli/setleases.c", "run-now": "src/cli/runnow.c",
    "stop": "src/cli/stop.c",
    "pause": "src/cli/control.c", "resume": "src/cli/control.c", "drain": "src/cli/control.c",
    "undrain": "src/cli/control.c", "forget": "src/cli/control.c", "web": "src/web/web.c",
    "init-auth": "src/cli/initauth.c",
}
# Options of control.c's shared table that only some controls take.
CONTROL_ONLY = {"stop-running": {"pause"}, "wait": {"drain"}, "deadline": {"drain"},
                "by": {"pause", "drain"},
                "force": {"forget", "drain"}}


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)


def commands():
    out = run("--help")
    assert out.returncode == 0, out.stderr
    return re.findall(r"^  ([a-z-]+)\b", out.stdout, re.M)


def long_options(path):
    text = open(os.path.join(SRC, path)).read()
    return set(re.findall(r'\{"([a-z-]+)", *(?:no|required|optional)_argument', text))


class HelpTest(unittest.TestCase):
    def test_the_table_lists_every_command(self):
        self.assertEqual(sorted(set(commands()) - {"version"}), sorted(SOURCES))

    def test_each_command_prints_its_own_usage_with_every_option(self):
        for cmd in commands():
            if cmd == "version":
                continue
            with self.subTest(cmd=cmd):
                out = run(cmd, "--help")
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertTrue(out.stdout.startswith("usage: leasekeeper %s " % cmd),
                                out.stdout[:200])
                for opt in long_options(SOURCES[cmd]):
                    if opt in CONTROL_ONLY and cmd not in CONTROL_ONLY[opt]:
                        continue
                    self.assertIn("--" + opt, out.stdout, "%s --help lacks --%s" % (cmd, opt))

    def test_the_man_page_and_help_name_the_same_options(self):
        """Each command's section of leasekeeper(1) names every long option of its --help,
        and the README's command list names every command."""
        man = open(os.path.join(SRC, "man", "leasekeeper.1")).read().replace("\\-", "-")
        sections = {}
        for m in re.finditer(r'^\.SS "leasekeeper ([a-z-]+)', man, re.M):
            end = man.find("\n.SS ", m.end())
            end2 = man.find("\n.SH ", m.end())
            end = min(e for e in (end, end2, len(man)) if e >= 0)
            sections[m.group(1)] = man[m.start():end]
        readme = open(os.path.join(SRC, "README.md")).read()
        for cmd in commands():
            if cmd == "version":
                continue
            with self.subTest(cmd=cmd):
                self.assertIn(cmd, sections, "leasekeeper(1) has no section for " + cmd)
                self.assertIn("leasekeeper " + cmd, readme)
                text = sections[cmd]
                if cmd not in ("run", "check", "next", "status"):
                    # Their common options are described once, under status.
                    text += sections.get("status", "")
                helped = set(re.findall(r"--([a-z][a-z-]+)", run(cmd, "--help").stdout))
                for opt in sorted(helped - {"help"}):
                    self.assertIn("--" + opt, text, "leasekeeper(1) %s lacks --%s" % (cmd, opt))

    def test_the_readme_and_man_page_take_no_option_help_lacks(self):
        """Every option the README's or leasekeeper(1)'s synopsis lines show for a command is
        one its --help names (the other way round is the test above)."""
        readme = open(os.path.join(SRC, "README.md")).read()
        man = open(os.path.join(SRC, "man", "leasekeeper.1")).read().replace("\\-", "-")
        lines = re.findall(r"^(?:\$ )?leasekeeper ([a-z-]+) (.*)$", readme, re.M)
        lines += re.findall(r'^\.SS "leasekeeper ([a-z-]+)(.*)"$', man, re.M)
        helps = {}
        checked = 0
        for cmd, rest in lines:
            if cmd not in SOURCES:
                continue
            if cmd not in helps:
                helps[cmd] = set(re.findall(r"--([a-z][a-z-]+)", run(cmd, "--help").stdout))
            for opt in re.findall(r"(?<![\w-])--([a-z][a-z-]+)", rest.split(" -- ")[0]):
                checked += 1
                self.assertIn(opt, helps[cmd], "leasekeeper %s %s: --%s is not in its --help"
                              % (cmd, rest[:60], opt))
        self.assertGreater(checked, 20, "the synopsis lines were not found")

    def test_every_command_line_in_the_docs_takes_only_options_help_lists(self):
        """Beyond the synopses: every `leasekeeper COMMAND ...` written anywhere in the README,
        docs/, deploy/README.md and both man pages (examples, prose, tables) uses only long
        options that COMMAND's --help names."""
        paths = ["README.md", os.path.join("deploy", "README.md"),
                 os.path.join("man", "leasekeeper.1"), os.path.join("man", "leasekeeper.ini.5")]
        docs = os.path.join(SRC, "docs")
        paths += [os.path.join("docs", f) for f in sorted(os.listdir(docs)) if f.endswith(".md")]
        known = set(commands()) - {"version"}
        helps, checked = {}, 0
        mention = re.compile(r"leasekeeper ([a-z-]+)((?:[ \t]+(?:\[[^\]\n]*\]|[^\s`|;,)\]]+))*)")
        for rel in paths:
            with open(os.path.join(SRC, rel)) as f:
                text = f.read()
            for esc in ("\\-", "\\fB", "\\fR", "\\fI"):
                text = text.replace(esc, "-" if esc == "\\-" else "")
            for m in mention.finditer(text):
                cmd = m.group(1)
                if cmd not in known:
                    continue
                if cmd not in helps:
                    helps[cmd] = set(re.findall(r"--([a-z][a-z-]+)", run(cmd, "--help").stdout))
                for opt in re.findall(r"(?<![\w-])--([a-z][a-z-]+)", m.group(2).split(" -- ")[0]):
                    checked += 1
                    self.assertIn(opt, helps[cmd], "%s: %s: --%s is not in its --help"
                                  % (rel, m.group(0)[:80], opt))
        self.assertGreater(checked, 100, "the command lines were not found")

    def test_a_bad_option_is_one_line_and_a_hint(self):
        """Every command answers an unknown option, and one missing its argument, with one
        line naming it and one line pointing at its --help, exit 64: not its whole usage."""
        for cmd in commands():
            if cmd == "version":
                continue
            for bad in (["--nosuchoption"], ["-c"]) if cmd != "init-auth" else (["--nosuchoption"],):
                with self.subTest(cmd=cmd, bad=bad):
                    out = run(cmd, *bad)
                    self.assertEqual(out.returncode, 64, out.stderr)
                    self.assertEqual(out.stdout, "")
                    lines = out.stderr.splitlines()
                    self.assertEqual(len(lines), 2, out.stderr)
                    self.assertTrue(lines[0].startswith("leasekeeper %s: " % cmd), lines[0])
                    self.assertIn("nosuchoption" if bad[0] != "-c" else "requires an argument",
                                  lines[0])
                    self.assertEqual(lines[1], "Try 'leasekeeper %s --help' for its usage." % cmd)

    def test_json_errors_are_one_json_object_on_stderr(self):
        """Every command whose --help offers --json writes its errors, with --json, as one JSON
        object on stderr ({"command", "exit_status", "error", "lines"}), with the exit status
        it has without --json: a bad option (64), and for the commands that read a
        configuration, one that cannot be opened (78; check reports it in its own JSON)."""
        jsons = [c for c in commands() if c != "version" and "--json" in run(c, "--help").stdout]
        self.assertGreaterEqual(len(jsons), 10, jsons)
        missing = os.path.join(BUILD, "no-such-dir", "worker.ini")
        for cmd in jsons:
            cases = [(["--json", "--nosuchoption"], 64, "unrecognized option")]
            if cmd not in ("check", "next"):
                cases.append((["--json", "-c", missing, "somejob"], 78, "cannot open"))
            for args, status, what in cases:
                if cmd == "status" and status == 78:
                    args = args[:-1]  # status takes no argument
                with self.subTest(cmd=cmd, args=args):
                    plain = run(cmd, *[a for a in args if a != "--json"])
                    out = run(cmd, *args)
                    self.assertEqual((plain.returncode, out.returncode), (status, status),
                                     out.stderr)
                    lines = out.stderr.splitlines()
                    self.assertEqual(len(lines), 1, out.stderr)
                    err = json.loads(lines[0])
                    self.assertEqual(err["command"], cmd)
                    self.assertEqual(err["exit_status"], status)
                    self.assertIn(what, err["error"])
                    self.assertEqual(err["lines"], plain.stderr.splitlines())
        # check reports a configuration it cannot open in its own JSON on stdout, exit 1.
        out = run("check", "--json", "-c", missing)
        self.assertEqual(out.returncode, 1, out.stderr)
        doc = json.loads(out.stdout)
        self.assertFalse(doc["ok"])
        self.assertIn("cannot open", doc["errors"][0])

    def test_an_unknown_command_is_one_line_and_a_hint(self):
        out = run("nosuchcommand")
        self.assertEqual(out.returncode, 64)
        self.assertLessEqual(len(out.stderr.splitlines()), 2, out.stderr)


if __name__ == "__main__":
    unittest.main()

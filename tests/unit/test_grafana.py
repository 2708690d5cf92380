#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# ctest: timeout=60
"""The Grafana dashboard, deploy/grafana/leasekeeper.json: every query (panel targets and
template variables) names only metrics docs/metrics.md lists (a histogram's _bucket, _sum and
_count series count as its own), every expression parses as PromQL (`promtool check rules`
on a rule file made of them, with Grafana's variables replaced), every panel reads the
dashboard's data source variable, panel ids are unique, and the job filter uses the label
job_name (Prometheus keeps `job` for the scrape job)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("LEASEKEEPER_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DASHBOARD = os.path.join(SRC, "deploy", "grafana", "leasekeeper.json")
METRICS_MD = os.path.join(SRC, "docs", "metrics.md")

# A name in PromQL that is a leasekeeper metric (labels, functions and keywords never start so).
METRIC = re.compile(r"\bleasekeeper_[a-z0-9_]+\b")
# docs/metrics.md's table rows: | `leasekeeper_name` | type | labels | meaning |
DOC_ROW = re.compile(r"^\| `(leasekeeper_[a-z0-9_]+)` \| (counter|gauge|histogram|summary) \|",
                     re.M)


def documented():
    """{metric name: type} from docs/metrics.md."""
    with open(METRICS_MD) as f:
        return dict(DOC_ROW.findall(f.read()))


def series_metric(name, docs):
    """The documented metric a series name belongs to, or None."""
    if name in docs:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and docs.get(base) in ("histogram", "summary"):
            return base
    return None


def panels(dash):
    """Every panel, rows' nested ones included."""
    for p in dash.get("panels", []):
        yield p
        for q in p.get("panels", []):
            yield q


def queries(dash):
    """(where, PromQL text) of every query the dashboard runs."""
    for p in panels(dash):
        for t in p.get("targets", []):
            yield ("panel %r target %s" % (p.get("title"), t.get("refId")), t["expr"])
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            yield ("variable %s" % v["name"], q["query"] if isinstance(q, dict) else q)


class GrafanaDashboardTest(unittest.TestCase):
    def setUp(self):
        with open(DASHBOARD) as f:
            self.dash = json.load(f)
        self.docs = documented()

    def test_docs_list_metrics(self):
        # The parser of the docs finds the table: a test against an empty list proves nothing.
        self.assertGreaterEqual(len(self.docs), 25)
        self.assertEqual(self.docs.get("leasekeeper_job_run_duration_seconds"), "histogram")

    def test_every_query_names_documented_metrics(self):
        seen = set()
        for where, expr in queries(self.dash):
            names = METRIC.findall(expr)
            self.assertTrue(names, "%s reads no leasekeeper metric: %s" % (where, expr))
            for name in names:
                metric = series_metric(name, self.docs)
                self.assertIsNotNone(metric, "%s: %s is not in docs/metrics.md" % (where, name))
                seen.add(metric)
        # It is a dashboard of the whole set, not of a few.
        self.assertGreaterEqual(len(seen), 25, sorted(set(self.docs) - seen))

    def test_the_check_catches_an_undocumented_name(self):
        self.assertIsNone(series_metric("leasekeeper_job_runs", self.docs))
        self.assertIsNone(series_metric("leasekeeper_job_runs_total_bucket", self.docs))
        self.assertEqual(series_metric("leasekeeper_job_run_duration_seconds_bucket", self.docs),
                         "leasekeeper_job_run_duration_seconds")

    def test_queries_parse(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool missing: scripts/bootstrap installs prometheus")
        rules = []
        for i, (where, expr) in enumerate(queries(self.dash)):
            if expr.startswith("label_values("):
                m = re.match(r"label_values\((leasekeeper_[a-z0-9_]+), *([a-z_]+)\)$", expr)
                self.assertIsNotNone(m, where)
                expr = "group by (%s) (%s)" % (m.group(2), m.group(1))
            expr = expr.replace("$__rate_interval", "5m").replace("$job_name", ".*")
            self.assertNotIn("$", expr, where)
            rules.append({"record": "leasekeeper_dashboard:q%d" % i, "expr": expr})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "dashboard-rules.yml")
            with open(path, "w") as f:
                # JSON is YAML.
                json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
            r = subprocess.run([promtool, "check", "rules", path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            self.assertEqual(r.returncode, 0, r.stdout)
            self.assertIn("SUCCESS: %d rules found" % len(rules), r.stdout)

    def test_panels(self):
        ids = [p["id"] for p in panels(self.dash)]
        self.assertEqual(len(ids), len(set(ids)), ids)
        variables = {v["name"]: v for v in self.dash["templating"]["list"]}
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        for p in panels(self.dash):
            if p.get("type") == "row":
                continue
            self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
            for t in p["targets"]:
                self.assertEqual(t["datasource"]["uid"], "${datasource}", p["title"])
                # Per-job queries filter on job_name, never on Prometheus' own job label.
                self.assertNotRegex(t["expr"], r"[{,]\s*job\s*[=!]~?", p["title"])
                self.assertNotRegex(t["expr"], r"by \((?:[^)]*, *)?job[,)]", p["title"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/env python3
"""test_monitoring.py - what operators watch: the metrics the service
exports, and deploy/'s Grafana dashboard and Prometheus alert rules over
them (TAP).

  - deploy/prometheus/*.yml pass `promtool check rules`, and
    deploy/prometheus/tests/*.test.yml pass `promtool test rules`: a service
    that only refuses (422, outcome refused) raises no alert, one that fails
    (5xx, outcome failed) raises the 5xx and failing-generations alerts;
  - the dashboard (deploy/grafana/text2sqld.json) is one Grafana dashboard:
    unique panel ids, every panel a query on the data-source variable;
  - against the real binary (SQLite, the model stub, the answer cache on):
    text2sqld_build_info{version,commit} is 1 with the binary's version;
    process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds,
    process_max_fds and process_start_time_seconds are present and plausible;
    text2sqld_generations_total counts ok, cached and failed outcomes, and a
    question the built-in refuses (no model configured) as outcome refused,
    never failed or unavailable, its request counted 4xx;
    the answer cache's lookups are text2sqld_answer_cache_lookups_total (a
    hit and a miss) and no longer move text2sqld_embed_cache_lookups_total;
    the scrape passes `promtool check metrics`;
  - every metric name the dashboard and the rules use is one that scrape
    exports (histograms by their _bucket series; `up` is Prometheus's own).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-monitoring-")
ROOT = t2s.SOURCE_ROOT
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "text2sqld.json")
RULES_DIR = os.path.join(ROOT, "deploy", "prometheus")
METRIC_RX = re.compile(r"\b((?:text2sqld|process)_[a-z0-9_]+)\b")
PROMETHEUS_OWN = {"up"}


def rule_files():
    return sorted(os.path.join(RULES_DIR, f) for f in os.listdir(RULES_DIR) if f.endswith((".yml", ".yaml")))


def test_rules():
    promtool = shutil.which("promtool")
    if not promtool:
        tap.skip("promtool_check_rules_accepts_the_alert_rules", "promtool is not installed (Debian's prometheus)")
        return
    r = subprocess.run([promtool, "check", "rules"] + rule_files(), capture_output=True, text=True, timeout=60)
    tap.ok(r.returncode == 0 and "SUCCESS" in r.stdout, "promtool_check_rules_accepts_the_alert_rules",
           diag=r.stdout + r.stderr)
    tests_dir = os.path.join(RULES_DIR, "tests")
    unit = sorted(os.path.join(tests_dir, f) for f in os.listdir(tests_dir) if f.endswith(".test.yml"))
    r = subprocess.run([promtool, "test", "rules"] + unit, capture_output=True, text=True, timeout=60, cwd=tests_dir)
    tap.ok(unit and r.returncode == 0 and "FAILED" not in r.stdout + r.stderr,
           "promtool_test_rules_refusals_raise_no_alert_failures_do", diag=r.stdout + r.stderr)


def dashboard_exprs():
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    panels = [p for p in dash.get("panels", []) if p.get("type") != "row"]
    ids = [p.get("id") for p in dash.get("panels", [])]
    tap.ok(len(ids) == len(set(ids)) and None not in ids, "dashboard_panel_ids_are_unique", diag=repr(ids))
    variables = {v.get("name") for v in dash.get("templating", {}).get("list", [])}
    bad = [p.get("title") for p in panels if not p.get("targets") or p.get("datasource", {}).get("uid") != "${datasource}"
           or not all(t.get("expr") for t in p["targets"])]
    tap.ok(panels and not bad and "datasource" in variables, "every_dashboard_panel_queries_the_data_source_variable",
           diag=repr(bad))
    return [t["expr"] for p in panels for t in p.get("targets", [])] + \
        [v.get("definition", "") for v in dash.get("templating", {}).get("list", [])]


def rule_exprs():
    exprs = []
    for path in rule_files():
        with open(path, encoding="utf-8") as f:
            exprs.append(f.read())
    return exprs


def exported(text):
    """{metric name: type} of an exposition."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def series(text, name, **labels):
    """The sum of the samples of name whose labels include labels."""
    total = 0.0
    for m in re.finditer(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M):
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


def check_names_exist(kind, exprs, types):
    missing = set()
    for e in exprs:
        for name in METRIC_RX.findall(e):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if name in types or (base != name and types.get(base) == "histogram"):
                continue
            missing.add(name)
    tap.ok(exprs and not missing, "%s_names_only_metrics_the_service_exports" % kind, diag=repr(sorted(missing)))
    others = {n for e in exprs for n in re.findall(r"\b([a-z_]+)\{", e)} - {n for e in exprs for n in METRIC_RX.findall(e)}
    tap.ok(others <= PROMETHEUS_OWN | {"by", "on", "without", "ignoring", "group_left", "group_right"},
           "%s_names_no_other_exporter_metric" % kind, diag=repr(sorted(others)))


def sql(text):
    return "```sql\n%s\n```" % text


def test_service():
    db = fixtures.write_sqlite(os.path.join(TMP, "concert.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                               fixtures.SMALL_CONCERT_ROWS)
    stub = fixtures.ModelStub()
    try:
        stub.rules([{"match": {"contains": "cannot be answered"}, "respond": {"content": "I will not write SQL."}}],
                   default_content=sql("SELECT count(*) FROM singer"))
        cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db}],
               "generate": {"cache_ttl_s": 300},
               "models": {"generate": {"base_url": stub.base_url, "model": "gen", "timeout_ms": 20000, "retries": 0}},
               "log": {"level": "warn", "access": False}}
        started = time.time()
        with fixtures.serving(tap, cfg, "monitoring_service_exits_0") as svc:
            q = {"database": "concert", "question": "How many singers are there?"}
            first = svc.request("POST", "/v1/query", json=q, timeout=60)
            before = svc.request("GET", "/metrics").text
            second = svc.request("POST", "/v1/query", json=q, timeout=60)
            failed = svc.request("POST", "/v1/generate", json={"database": "concert", "options": {"max_rounds": 0},
                                                               "question": "This one cannot be answered by singers?"},
                                 timeout=60)
            svc.request("POST", "/v1/execute", json={"database": "concert", "sql": "DELETE FROM singer"})
            # A link fallback (mode llm without models.link) and a feedback: their families appear on first use.
            svc.request("POST", "/v1/link", json={"database": "concert", "question": "Which singers?", "mode": "llm"})
            svc.request("POST", "/v1/feedback", json={"database": "concert", "question": "How many singers?",
                                                      "sql": "SELECT 1", "correct": False})
            text = svc.request("GET", "/metrics").text
            tap.ok(first.status == 200 and second.status == 200 and second.json.get("cached") is True and
                   failed.status >= 400, "monitoring_requests_answered",
                   diag="%d %d %d %s" % (first.status, second.status, failed.status, failed.text[:200]))
            info = re.search(r'^text2sqld_build_info\{version="([^"]*)",commit="([^"]*)"\} 1$', text, re.M)
            version = subprocess.run([t2s.server_binary(), "--version"], capture_output=True, text=True).stdout
            tap.ok(info and info.group(1) in version and re.match(r"^([0-9a-f]{7,40}|unknown)$", info.group(2)),
                   "build_info_names_version_and_commit", diag="%r; --version %r" % (info and info.groups(), version))
            rss = series(text, "process_resident_memory_bytes")
            tap.ok(1 << 20 < rss < 1 << 40, "process_resident_memory_bytes_is_plausible", diag=repr(rss))
            fds = series(text, "process_open_fds")
            tap.ok(3 <= fds <= series(text, "process_max_fds"), "process_open_fds_within_max", diag=repr(fds))
            start = series(text, "process_start_time_seconds")
            tap.ok(started - 5 <= start <= time.time() + 1, "process_start_time_is_when_the_service_started",
                   diag="%r vs %r" % (start, started))
            tap.ok(series(text, "process_cpu_seconds_total") > 0, "process_cpu_seconds_counted")
            for outcome, want in (("ok", 1), ("cached", 1)):
                tap.eq(series(text, "text2sqld_generations_total", outcome=outcome), float(want),
                       "generations_total_counts_%s" % outcome)
            bad = sum(series(text, "text2sqld_generations_total", outcome=o) for o in ("failed", "unanswerable"))
            tap.eq(bad, 1.0, "generations_total_counts_the_failed_generation")
            tap.ok(series(text, "text2sqld_answer_cache_lookups_total", layer="memory", result="hit") >= 1 and
                   series(text, "text2sqld_answer_cache_lookups_total", layer="memory", result="miss") >= 1,
                   "answer_cache_lookups_have_their_own_metric")
            tap.eq(series(text, "text2sqld_embed_cache_lookups_total"), series(before, "text2sqld_embed_cache_lookups_total"),
                   "answer_cache_hit_does_not_count_as_an_embedding_lookup")
            promtool = shutil.which("promtool")
            if promtool:
                r = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
                tap.ok(r.returncode == 0, "promtool_check_metrics_accepts_the_scrape",
                       diag=(r.stdout + r.stderr).decode("utf-8", "replace"))
            else:
                tap.skip("promtool_check_metrics_accepts_the_scrape", "promtool is not installed")
            types = exported(text)
            check_names_exist("dashboard", dashboard_exprs(), types)
            check_names_exist("alert_rules", rule_exprs(), types)
    finally:
        stub.close()


def test_refusing_service():
    db = os.path.join(TMP, "concert.sqlite")
    if not os.path.exists(db):
        db = fixtures.write_sqlite(db, fixtures.SMALL_CONCERT_SCHEMA, fixtures.SMALL_CONCERT_ROWS)
    cfg = {"databases": [{"name": "concert", "url": "sqlite://" + db}], "log": {"level": "warn", "access": False}}
    with fixtures.serving(tap, cfg, "refusing_service_exits_0") as svc:
        r = svc.request("POST", "/v1/query", json={"database": "concert",
                                                   "question": "Which singers sang the saddest songs?"}, timeout=60)
        # A request is counted when it completes, just after its client has the answer: wait for the count.
        counted = lambda t: series(t, "text2sqld_http_requests_total", route="/query", code="4xx") >= 1  # noqa: E731
        text = fixtures.wait_until(lambda: (lambda t: t if counted(t) else None)(svc.request("GET", "/metrics").text),
                                   timeout=5) or svc.request("GET", "/metrics").text
        tap.ok(fixtures.is_problem(r, 422, "builtin-refused"), "refusing_service_answers_422", diag=r.text[:300])
        tap.eq([series(text, "text2sqld_generations_total", outcome=o) for o in ("refused", "failed", "unavailable")],
               [1.0, 0.0, 0.0], "generations_total_counts_a_refusal_as_refused_not_failed")
        tap.eq([series(text, "text2sqld_http_requests_total", route="/query", code=c) for c in ("4xx", "5xx")],
               [1.0, 0.0], "a_refusal_is_counted_4xx_not_5xx")


if __name__ == "__main__":
    sys.exit(fixtures.run_guarded(tap, "monitoring_test", test_rules, test_service, test_refusing_service))

#!/usr/bin/env python3
"""test_health_metrics.py - /healthz, /readyz and /metrics of the real binary.

Readiness: ready with every database up; degraded (200, or 503 with
?strict=1) when a SQLite file is missing, listed as down with its error;
not_ready (503) when no database is reachable; Redis (from
T2S_TEST_REDIS_URL, skipped when unset) up, a closed-port Redis down; a model
server (tests/stub/model_stub.py) up, then down once the stub is killed, and
its API key sent. Metrics: the Prometheus text format (Content-Type, and
`promtool check metrics` when promtool is installed), exact request counting
per route/method/status class, the latency histogram's series, the in-flight
gauge, database pool gauges, introspection and query metrics, SQL
rejections, and the bounded `unmatched` route label for unknown paths.
With auth on (issue 19): a scrape without a key names no database
(auth.public_metrics "aggregate", the default: the same totals, summed), an
API key sees its own databases' series only, the metrics key sees all,
"none" answers 401 and "full" shows all.
"""

import hashlib
import os
import random
import re
import shutil
import string
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-health-test-")


def make_sqlite(path, table):
    return fixtures.write_sqlite(path, "CREATE TABLE %s (id INTEGER PRIMARY KEY, label TEXT)" % table,
                                 {table: [(i, "v%d" % i) for i in range(1, 6)]})


DB_A = make_sqlite(os.path.join(TMP, "alpha.sqlite"), "a_items")
DB_B = make_sqlite(os.path.join(TMP, "beta.sqlite"), "b_items")
MISSING = os.path.join(TMP, "missing", "ghost.sqlite")


def dbs(*pairs):
    return [{"name": n, "url": "sqlite://" + p} for n, p in pairs]


def closed_port():
    return t2s.free_port()


def readyz(svc, query=""):
    r = svc.request("GET", "/readyz" + query, timeout=30)
    return r, (r.json if isinstance(r.json, dict) else {})


# --------------------------------------------------------------------------- metrics parsing

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """[(name, {labels}, value)] of every sample line."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            out.append(("__unparsable__", {"line": line}, float("nan")))
            continue
        labels = dict(_LABEL.findall(m.group(3) or ""))
        try:
            value = float(m.group(4))
        except ValueError:
            value = float("nan")
        out.append((m.group(1), labels, value))
    return out


def sample(samples, name, **labels):
    """The value of the series name{labels} (exact label set match on the
    given labels, other labels ignored), summed when several match; None
    when none does."""
    vals = [v for n, l, v in samples if n == name and all(l.get(k) == str(x) for k, x in labels.items())]
    return sum(vals) if vals else None


def scrape(svc):
    r = svc.request("GET", "/metrics", timeout=30)
    return r, parse_metrics(r.text)


def wait_counter(svc, name, want, timeout=5, **labels):
    """Scrapes until name{labels} reaches want (request metrics are recorded
    when a request completes, just after its response); returns the last
    value seen."""
    deadline = time.monotonic() + timeout
    while True:
        _, s = scrape(svc)
        v = sample(s, name, **labels) or 0
        if v >= want or time.monotonic() > deadline:
            return v
        time.sleep(0.05)


# --------------------------------------------------------------------------- readiness

def test_readiness():
    with fixtures.serving(tap, {"databases": dbs(("alpha", DB_A), ("beta", DB_B))},
                          "ready_service_exits_0") as svc:
        r = svc.request("GET", "/healthz")
        tap.ok(r.status == 200 and r.json == {"status": "ok"}, "healthz_answers_200_ok", diag=repr(r))
        r, body = readyz(svc)
        checks = body.get("checks", {})
        tap.ok(r.status == 200 and body.get("status") == "ready", "readyz_ready_when_all_databases_up", diag=repr(r))
        tap.ok(checks.get("config", {}).get("status") == "up", "readyz_reports_config_up", diag=repr(r))
        tap.ok(all(checks.get("databases", {}).get(n, {}).get("status") == "up" for n in ("alpha", "beta")),
               "readyz_lists_each_database_up", diag=repr(r))
        tap.ok("redis" not in checks and checks.get("models") == {}, "readyz_has_no_redis_or_models_unconfigured",
               diag=repr(r))
        r, body = readyz(svc, "?strict=1")
        tap.ok(r.status == 200 and body.get("status") == "ready", "readyz_strict_ready_is_200", diag=repr(r))

    with fixtures.serving(tap, {"databases": dbs(("alpha", DB_A), ("ghost", MISSING))},
                          "degraded_service_exits_0") as svc:
        r, body = readyz(svc)
        ghost = body.get("checks", {}).get("databases", {}).get("ghost", {})
        alpha = body.get("checks", {}).get("databases", {}).get("alpha", {})
        tap.ok(r.status == 200 and body.get("status") == "degraded", "readyz_degraded_200_with_missing_sqlite_file",
               diag=repr(r))
        tap.ok(ghost.get("status") == "down" and isinstance(ghost.get("error"), str) and ghost["error"],
               "readyz_lists_missing_database_down_with_error", diag=repr(r))
        tap.ok(alpha.get("status") == "up", "readyz_lists_present_database_up_beside_missing_one", diag=repr(r))
        r, body = readyz(svc, "?strict=1")
        tap.ok(r.status == 503 and body.get("status") == "degraded", "readyz_strict_degraded_is_503", diag=repr(r))
        r, body = readyz(svc, "?strict=0")
        tap.eq(r.status, 200, "readyz_strict_0_degraded_is_200")
        r = svc.request("POST", "/execute", json={"database": "alpha", "sql": "SELECT count(*) FROM a_items"})
        tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[5]],
               "present_database_serves_while_another_is_missing", diag=repr(r))

    with fixtures.serving(tap, {"databases": dbs(("ghost", MISSING))}, "not_ready_service_exits_0") as svc:
        r, body = readyz(svc)
        tap.ok(r.status == 503 and body.get("status") == "not_ready", "readyz_not_ready_503_when_only_database_missing",
               diag=repr(r))
        r = svc.request("GET", "/healthz")
        tap.eq(r.status, 200, "healthz_200_even_when_not_ready")


def test_redis():
    url = os.environ.get("T2S_TEST_REDIS_URL")
    if url:
        with fixtures.serving(tap, {"databases": dbs(("alpha", DB_A)), "redis": {"url": url}},
                              "redis_up_service_exits_0") as svc:
            r, body = readyz(svc)
            tap.ok(r.status == 200 and body.get("status") == "ready" and
                   body.get("checks", {}).get("redis", {}).get("status") == "up",
                   "readyz_reports_reachable_redis_up", diag=repr(r))
    else:
        tap.skip("readyz_reports_reachable_redis_up", "T2S_TEST_REDIS_URL is not set")
    dead = "redis://127.0.0.1:%d/0" % closed_port()
    with fixtures.serving(tap, {"databases": dbs(("alpha", DB_A)), "redis": {"url": dead, "timeout_ms": 300}},
                          "redis_down_service_exits_0") as svc:
        r, body = readyz(svc)
        redis = body.get("checks", {}).get("redis", {})
        tap.ok(r.status == 200 and body.get("status") == "degraded" and redis.get("status") == "down" and
               redis.get("error"), "readyz_closed_port_redis_down_and_degraded", diag=repr(r))
        r, body = readyz(svc, "?strict=1")
        tap.eq(r.status, 503, "readyz_strict_with_redis_down_is_503")


def test_models():
    key = "stub-key-%d" % os.getpid()
    try:
        stub = fixtures.ModelStub("--api-key", key, "--require-api-key")
    except (RuntimeError, OSError) as e:
        tap.ok(False, "model_stub_starts", diag=str(e))
        return
    good_env = "T2S_TEST_MODEL_KEY_%d" % os.getpid()
    bad_env = "T2S_TEST_MODEL_BADKEY_%d" % os.getpid()
    cfg = {"databases": dbs(("alpha", DB_A)),
           "models": {"generate": {"base_url": stub.base_url, "model": "gen", "api_key_env": good_env},
                      "embed": {"base_url": stub.base_url, "model": "emb", "api_key_env": good_env}}}
    svc = t2s.Service(cfg, env={good_env: key})
    try:
        svc.start()
        r, body = readyz(svc)
        models = body.get("checks", {}).get("models", {})
        tap.ok(r.status == 200 and body.get("status") == "ready" and
               models.get("generate", {}).get("status") == "up" and models.get("embed", {}).get("status") == "up",
               "readyz_reports_configured_model_servers_up", diag=repr(r))
        stub.kill()
        r, body = readyz(svc)
        models = body.get("checks", {}).get("models", {})
        tap.ok(r.status == 200 and body.get("status") == "degraded" and
               models.get("generate", {}).get("status") == "down" and models.get("generate", {}).get("error"),
               "readyz_reports_model_server_down_after_stub_killed", diag=repr(r))
        r, body = readyz(svc, "?strict=1")
        tap.eq(r.status, 503, "readyz_strict_with_model_down_is_503")
    except RuntimeError as e:
        tap.ok(False, "readyz_reports_configured_model_servers_up", diag=str(e))
    finally:
        stub.kill()
        fixtures.stop_ok(tap, svc, "model_service_exits_0")
        svc.close()

    # A wrong API key: the stub answers 401, so the model is reported down.
    stub = fixtures.ModelStub("--api-key", key, "--require-api-key")
    cfg = {"databases": dbs(("alpha", DB_A)),
           "models": {"link": {"base_url": stub.base_url, "model": "lnk", "api_key_env": bad_env}}}
    try:
        with fixtures.serving(tap, cfg, "bad_key_model_service_exits_0", env={bad_env: "wrong-" + key}) as svc:
            r, body = readyz(svc)
            link = body.get("checks", {}).get("models", {}).get("link", {})
            tap.ok(r.status == 200 and link.get("status") == "down" and body.get("status") == "degraded",
                   "readyz_reports_model_down_when_server_rejects_api_key", diag=repr(r))
    finally:
        stub.kill()


# --------------------------------------------------------------------------- metrics

def test_metrics():
    with fixtures.serving(tap, {"databases": dbs(("alpha", DB_A), ("beta", DB_B))},
                          "metrics_service_exits_0") as svc:
        r, s = scrape(svc)
        ctype = r.headers.get("Content-Type") or ""
        tap.ok(r.status == 200 and ctype.startswith("text/plain") and "version=0.0.4" in ctype,
               "metrics_content_type_is_prometheus_text_0_0_4", diag=repr(ctype))
        tap.ok(not any(n == "__unparsable__" for n, _, _ in s), "metrics_every_sample_line_parses",
               diag=lambda: repr([l for n, l, _ in s if n == "__unparsable__"][:5]))

        name = "text2sqld_http_requests_total"
        lbl = {"route": "/execute", "method": "POST", "code": "2xx"}
        before = sample(s, name, **lbl) or 0
        n = 7
        for i in range(n):
            rr = svc.request("POST", "/execute", json={"database": "alpha", "sql": "SELECT %d" % i})
            if rr.status != 200:
                tap.diag("execute %d: %r" % (i, rr))
        after = wait_counter(svc, name, before + n, **lbl)
        time.sleep(0.2)
        _, s = scrape(svc)
        after = sample(s, name, **lbl) or 0
        tap.eq(after - before, n, "requests_total_for_execute_post_2xx_grows_by_request_count")

        h = "text2sqld_http_request_duration_seconds"
        buckets = [(l.get("le"), v) for nm, l, v in s if nm == h + "_bucket" and l.get("route") == "/execute"]
        count = sample(s, h + "_count", route="/execute")
        total = sample(s, h + "_sum", route="/execute")
        inf = dict(buckets).get("+Inf")
        tap.ok(len(buckets) >= 2 and count is not None and total is not None and inf == count and count >= n,
               "duration_histogram_has_bucket_sum_count_for_execute",
               diag="buckets %r count %r sum %r" % (buckets, count, total))
        vals = [v for _, v in buckets]
        tap.ok(vals == sorted(vals), "duration_histogram_buckets_are_cumulative", diag=repr(buckets))
        tap.ok(sample(s, "text2sqld_http_requests_in_flight") is not None, "in_flight_gauge_present")

        for db in ("alpha", "beta"):
            idle = sample(s, "text2sqld_db_pool_connections", database=db, state="idle")
            in_use = sample(s, "text2sqld_db_pool_connections", database=db, state="in_use")
            tap.ok(idle is not None and in_use is not None and idle >= 0 and in_use >= 0,
                   "pool_connections_gauges_idle_and_in_use_for_%s" % db, diag="idle %r in_use %r" % (idle, in_use))
            c = sample(s, "text2sqld_catalog_introspection_duration_seconds_count", database=db)
            tap.ok(c is not None and c >= 1, "introspection_duration_histogram_for_%s" % db, diag=repr(c))
            ok = sample(s, "text2sqld_catalog_introspections_total", database=db, result="ok")
            tap.ok(ok is not None and ok >= 1, "introspections_total_ok_for_%s" % db, diag=repr(ok))
        q = sample(s, "text2sqld_db_query_duration_seconds_count", database="alpha")
        tap.ok(q is not None and q >= n, "db_query_duration_histogram_counts_executions", diag=repr(q))

        rej_before = sample(s, "text2sqld_sql_rejections_total", database="alpha") or 0
        rr = svc.request("POST", "/execute", json={"database": "alpha", "sql": "DELETE FROM a_items"})
        tap.eq(rr.status, 403, "delete_statement_is_rejected_403")
        _, s = scrape(svc)
        rej_after = sample(s, "text2sqld_sql_rejections_total", database="alpha") or 0
        tap.eq(rej_after - rej_before, 1, "sql_rejections_total_grows_after_rejected_statement")
        rr = svc.request("POST", "/execute", json={"database": "alpha", "sql": "SELECT count(*) FROM a_items"})
        tap.ok(rr.status == 200 and (rr.json or {}).get("rows") == [[5]], "rejected_delete_left_rows_in_place",
               diag=repr(rr))

        # Unknown paths share one route label.
        _, s = scrape(svc)
        routes_before = {l.get("route") for nm, l, _ in s if nm == name}
        series_before = {(nm, tuple(sorted(l.items()))) for nm, l, _ in s}
        unmatched_before = sample(s, name, route="unmatched", method="GET", code="4xx") or 0
        rnd = random.Random(os.getpid())
        paths = ["/" + "".join(rnd.choice(string.ascii_lowercase) for _ in range(12)) + "/%d" % i for i in range(50)]
        for p in paths:
            svc.request("GET", p)
        wait_counter(svc, name, unmatched_before + 50, route="unmatched", method="GET", code="4xx")
        time.sleep(0.2)
        r, s = scrape(svc)
        routes_after = {l.get("route") for nm, l, _ in s if nm == name}
        tap.ok(routes_after - routes_before <= {"unmatched", "/metrics"}, "unknown_paths_add_no_route_labels",
               diag=repr(routes_after - routes_before))
        tap.ok(not any(p.split("/")[1] in r.text for p in paths), "unknown_paths_never_appear_in_metrics")
        tap.eq((sample(s, name, route="unmatched", method="GET", code="4xx") or 0) - unmatched_before, 50,
               "unknown_paths_counted_under_route_unmatched")
        new_series = {x for x in {(nm, tuple(sorted(l.items()))) for nm, l, _ in s} - series_before
                      if x[0].startswith("text2sqld_http_request")}
        new_routes = {dict(lbls).get("route") for _, lbls in new_series}
        tap.ok(new_routes <= {"unmatched", "/metrics"}, "unknown_paths_add_at_most_one_route_series",
               diag=repr(sorted(new_series)[:10]))

        # The scrape promtool checks holds the build's identity and the standard process metrics (issue 20).
        families = set(re.findall(r"^# TYPE (\S+) ", r.text, re.M))
        want = {"text2sqld_build_info", "process_cpu_seconds_total", "process_resident_memory_bytes",
                "process_open_fds", "process_max_fds", "process_start_time_seconds"}
        tap.ok(want <= families, "scrape_has_build_info_and_process_metrics", diag=repr(sorted(want - families)))
        promtool = shutil.which("promtool")
        if promtool:
            p = subprocess.run([promtool, "check", "metrics"], input=r.body, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            tap.ok(p.returncode == 0, "promtool_check_metrics_accepts_scrape",
                   diag=(p.stdout + p.stderr).decode("utf-8", "replace"))
        else:
            tap.skip("promtool_check_metrics_accepts_scrape", "promtool is not installed")


def promtool_check(text, name):
    promtool = shutil.which("promtool")
    if not promtool:
        tap.skip(name, "promtool is not installed")
        return
    p = subprocess.run([promtool, "check", "metrics"], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    tap.ok(p.returncode == 0, name, diag=(p.stdout + p.stderr).decode("utf-8", "replace"))


def named_databases(text):
    return set(re.findall(r'database="([^"]*)"', text))


def test_metrics_access():
    """/metrics names databases only to those who may know them (issue 19, hole 5)."""
    digest = lambda k: hashlib.sha256(k.encode()).hexdigest()  # noqa: E731
    keys = {"alpha-key-0123456789": ["alpha"], "all-key-0123456789": ["*"]}
    auth = {"api_keys": [{"name": k[:5], "key_sha256": digest(k), "databases": d} for k, d in keys.items()],
            "metrics_key_sha256": digest("metrics-key-0123456789")}
    cfg = {"databases": dbs(("alpha", DB_A), ("beta", DB_B)), "auth": auth}
    bearer = lambda k: {"Authorization": "Bearer " + k}  # noqa: E731
    with fixtures.serving(tap, cfg, "metrics_access_service_exits_0") as svc:
        n = 3
        for db in ("alpha", "beta"):
            for i in range(n):
                svc.request("POST", "/execute", json={"database": db, "sql": "SELECT %d" % i},
                            headers=bearer("all-key-0123456789"))
        # a request is counted when the server finishes with it, a moment after its client has the answer
        fixtures.wait_until(lambda: sample(parse_metrics(svc.request("GET", "/metrics").text),
                                           "text2sqld_http_requests_total", route="/execute", method="POST",
                                           code="2xx") == 2 * n, timeout=10)
        full = svc.request("GET", "/metrics", headers=bearer("metrics-key-0123456789"))
        tap.ok(full.status == 200 and named_databases(full.text) == {"alpha", "beta"},
               "metrics_key_sees_every_database", diag=repr(named_databases(full.text)))
        anon = svc.request("GET", "/metrics")
        tap.ok(anon.status == 200 and not named_databases(anon.text) and "alpha" not in anon.text and
               "beta" not in anon.text, "anonymous_scrape_names_no_database", diag=anon.text[:300])
        s = parse_metrics(anon.text)
        q = sample(s, "text2sqld_db_query_duration_seconds_count", engine="sqlite", result="ok")
        want = sample(parse_metrics(full.text), "text2sqld_db_query_duration_seconds_count", engine="sqlite",
                      result="ok")
        tap.ok(q is not None and q == want and q >= 2 * n, "anonymous_scrape_sums_series_over_databases",
               diag="%r vs %r" % (q, want))
        tap.ok(sample(s, "text2sqld_http_requests_total", route="/execute", method="POST", code="2xx") == 2 * n,
               "anonymous_scrape_keeps_series_without_database_labels")
        promtool_check(anon.text, "promtool_check_metrics_accepts_aggregated_scrape")
        own = svc.request("GET", "/metrics", headers=bearer("alpha-key-0123456789"))
        tap.ok(own.status == 200 and named_databases(own.text) == {"alpha"} and "beta" not in own.text,
               "api_key_sees_only_its_databases_series", diag=repr(named_databases(own.text)))
        bad = svc.request("GET", "/metrics", headers=bearer("wrong-key-0123456789"))
        tap.ok(bad.status == 200 and not named_databases(bad.text), "wrong_key_scrape_is_anonymous")
    for mode, want in (("none", 401), ("full", 200)):
        cfg["auth"] = dict(auth, public_metrics=mode)
        with fixtures.serving(tap, cfg, "metrics_public_%s_service_exits_0" % mode) as svc:
            r = svc.request("GET", "/metrics")
            if mode == "none":
                tap.ok(fixtures.is_problem(r, 401, "unauthorized"), "public_metrics_none_answers_401_problem",
                       diag=repr(r))
                r = svc.request("GET", "/metrics", headers=bearer("metrics-key-0123456789"))
                tap.eq(r.status, 200, "public_metrics_none_still_serves_the_metrics_key")
            else:
                tap.ok(r.status == 200 and named_databases(r.text) == {"alpha", "beta"},
                       "public_metrics_full_shows_every_database", diag=repr(named_databases(r.text)))


def main():
    return fixtures.run_with_binary(tap, "health_metrics_tests", test_readiness, test_redis, test_models,
                                    test_metrics, test_metrics_access)


if __name__ == "__main__":
    sys.exit(main())

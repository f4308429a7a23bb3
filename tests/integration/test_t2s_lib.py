#!/usr/bin/env python3
"""test_t2s_lib.py - TAP self-test of the integration-test helpers.

Checks tests/lib/t2s.py (TAP writer, JSON Schema validator, OpenAPI response
lookup, Service and run_config_only against a stand-in server written by this
test, SQLite checksum, psql and pg_checksum, dataset lookup) and
tests/lib/load_sqlite_into_pg.py (edge-case types and values, keys, foreign
keys, reader role). Parts that need the PostgreSQL server started by
tests/lib/servers.sh (T2S_TEST_PG_PORT) or the Spider data (T2S_DATASETS) are
skipped when those are absent. Needs no text2sqld binary.
"""

import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(HERE, "..", "lib")
sys.path.insert(0, LIB)
import t2s  # noqa: E402

tap = t2s.Tap()


# --------------------------------------------------------------------------- Tap

def test_tap():
    buf = io.StringIO()
    t = t2s.Tap(out=buf)
    t.ok(True, "first")
    t.ok(False, "second # hash", diag="line a\nline b")
    t.eq(3, 4, "third")
    t.skip("fourth", "no db")
    rc = t.done()
    lines = buf.getvalue().splitlines()
    tap.eq(lines[0], "ok 1 - first", "tap_ok_line_format")
    tap.eq(lines[1], "not ok 2 - second no. hash", "tap_not_ok_line_escapes_hash")
    tap.eq(lines[2:4], ["# line a", "# line b"], "tap_diag_lines_follow_failure")
    tap.eq(lines[4], "not ok 3 - third", "tap_eq_failure_line")
    tap.ok(lines[5].startswith("# got:  3") and lines[6].startswith("# want: 4"),
           "tap_eq_shows_got_and_want", diag=repr(lines[5:7]))
    tap.eq(lines[7], "ok 4 - fourth # SKIP no db", "tap_skip_line_format")
    tap.eq(lines[-1], "1..4", "tap_plan_printed_last")
    tap.eq(rc, 1, "tap_done_returns_1_on_failure")
    buf2 = io.StringIO()
    t2 = t2s.Tap(out=buf2)
    t2.ok(True, "a")
    t2.skip("b", "c")
    tap.eq(t2.done(), 0, "tap_done_returns_0_when_all_pass")


# --------------------------------------------------------------------------- validator

DOC = {
    "openapi": "3.1.0",
    "paths": {
        "/databases": {"get": {"responses": {
            "200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "array", "items": {"$ref": "#/components/schemas/DbSummary"}}}}},
            "default": {"$ref": "#/components/responses/Problem"}}}},
        "/databases/{name}": {"get": {"responses": {
            "200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Database"}}}},
            "4XX": {"$ref": "#/components/responses/Problem"}}}},
        "/databases/special": {"get": {"responses": {
            "200": {"description": "ok", "content": {"text/plain": {}}}}}},
        "/execute": {"post": {"responses": {
            "200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Result"}}}}}}},
    },
    "components": {
        "responses": {"Problem": {"description": "error", "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}},
        "schemas": {
            "Problem": {"type": "object", "required": ["type", "title", "status"],
                        "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                                       "status": {"type": "integer", "minimum": 100, "maximum": 599},
                                       "detail": {"type": "string"}}},
            "DbSummary": {"type": "object", "required": ["name", "dialect"],
                          "additionalProperties": False,
                          "properties": {"name": {"type": "string", "minLength": 1},
                                         "dialect": {"enum": ["sqlite", "postgresql"]}}},
            "Column": {"type": "object", "required": ["name", "type"],
                       "properties": {"name": {"type": "string"}, "type": {"type": "string"},
                                      "nullable": {"type": "boolean"}},
                       "additionalProperties": {"type": ["string", "boolean", "null"]}},
            "Database": {"allOf": [
                {"type": "object", "properties": {
                    "name": {"$ref": "#/components/schemas/DbSummary/properties/name"}}},
                {"type": "object", "required": ["tables"], "properties": {
                    "tables": {"type": "array", "minItems": 1, "items": {
                        "type": "object", "required": ["name", "columns"], "properties": {
                            "name": {"type": "string"},
                            "row_count": {"type": ["integer", "null"]},
                            "columns": {"type": "array",
                                        "items": {"$ref": "#/components/schemas/Column"}}}}}}}]},
            "Cell": {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "null"},
                               {"type": "boolean"}]},
            "Result": {"type": "object", "required": ["columns", "rows", "row_count", "truncated"],
                       "properties": {
                           "columns": {"type": "array", "items": {"type": "string"}},
                           "rows": {"type": "array", "items": {
                               "type": "array", "items": {"$ref": "#/components/schemas/Cell"}}},
                           "row_count": {"type": "integer", "minimum": 0},
                           "truncated": {"type": "boolean"},
                           "kind": {"const": "result"},
                           "id": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-f0-9]+$"}]}}},
        },
    },
}


def invalid(instance, schema, name, expect_in=None):
    errs = t2s.validate(instance, schema, DOC)
    ok = bool(errs) and (expect_in is None or any(expect_in in e for e in errs))
    tap.ok(ok, name, diag="errors: %r" % errs)


def valid(instance, schema, name):
    errs = t2s.validate(instance, schema, DOC)
    tap.ok(not errs, name, diag="\n".join(errs))


def test_validator():
    ref = lambda n: {"$ref": "#/components/schemas/" + n}  # noqa: E731
    good = {"columns": ["a", "b"], "rows": [[1, "x"], [2.5, None], [True, "y"]],
            "row_count": 3, "truncated": False, "kind": "result", "id": "ab12"}
    valid(good, ref("Result"), "validator_accepts_valid_result")
    invalid(dict(good, truncated="no"), ref("Result"), "validator_rejects_wrong_type", "truncated")
    bad = dict(good)
    del bad["rows"]
    invalid(bad, ref("Result"), "validator_reports_missing_required", "rows")
    invalid(dict(good, row_count=-1), ref("Result"), "validator_enforces_minimum")
    invalid(dict(good, row_count=True), ref("Result"), "validator_bool_is_not_integer")
    valid(dict(good, row_count=3.0), ref("Result"), "validator_integral_float_is_integer")
    invalid(dict(good, row_count=3.5), ref("Result"), "validator_fraction_is_not_integer")
    invalid(dict(good, rows=[[{"x": 1}]]), ref("Result"), "validator_oneof_none_matches", "oneOf")
    invalid(dict(good, kind="other"), ref("Result"), "validator_enforces_const")
    invalid(dict(good, id="XYZ"), ref("Result"), "validator_anyof_with_pattern")
    valid(dict(good, id=7), ref("Result"), "validator_anyof_second_branch")
    invalid({"oneOf": 1}, {"oneOf": [{"type": "object"}, {"required": ["oneOf"]}]},
            "validator_oneof_rejects_two_matches", "valid under each of")
    valid([{"name": "a", "dialect": "sqlite"}], {"type": "array", "items": ref("DbSummary")},
          "validator_array_of_refs")
    invalid([{"name": "a", "dialect": "mysql"}], {"type": "array", "items": ref("DbSummary")},
            "validator_enforces_enum", "mysql")
    invalid({"name": "a", "dialect": "sqlite", "x": 1}, ref("DbSummary"),
            "validator_additional_properties_false", "'x'")
    invalid({"name": "", "dialect": "sqlite"}, ref("DbSummary"), "validator_min_length")
    db = {"name": "d", "tables": [{"name": "t", "row_count": None,
                                   "columns": [{"name": "c", "type": "text", "comment": None}]}]}
    valid(db, ref("Database"), "validator_allof_nested_refs_and_null_type")
    db_bad = json.loads(json.dumps(db))
    db_bad["tables"][0]["columns"][0]["comment"] = 5
    invalid(db_bad, ref("Database"), "validator_additional_properties_schema",
            "$.tables[0].columns[0].comment")
    invalid({"name": "d", "tables": []}, ref("Database"), "validator_min_items")
    invalid({}, {"$ref": "#/components/schemas/Nope"}, "validator_unresolvable_ref", "Nope")
    valid(None, {"type": "string", "nullable": True}, "validator_openapi30_nullable")
    invalid(1, {"not": {"type": "integer"}}, "validator_not")
    invalid([1, 1], {"uniqueItems": True}, "validator_unique_items")
    valid("anything", {}, "validator_empty_schema_accepts_anything")
    invalid("x", False, "validator_false_schema_rejects")


def test_openapi_lookup():
    s = t2s.openapi_response_schema(DOC, "/databases/concert_singer", "GET", 200, "application/json")
    tap.eq(s, {"$ref": "#/components/schemas/Database"}, "openapi_template_path_matched")
    s = t2s.openapi_response_schema(DOC, "/databases/special?x=1", "get", "200", "text/plain; charset=utf-8")
    tap.eq(s, {}, "openapi_literal_path_wins_and_schema_less_media_is_empty")
    s = t2s.openapi_response_schema(DOC, "/databases/x", "GET", 404, "application/problem+json")
    tap.eq(s, {"$ref": "#/components/schemas/Problem"}, "openapi_status_range_and_response_ref")
    s = t2s.openapi_response_schema(DOC, "/databases", "GET", 503,
                                    "application/problem+json; charset=utf-8")
    tap.eq(s, {"$ref": "#/components/schemas/Problem"}, "openapi_default_response")
    for args, what in (((DOC, "/nothing", "GET", 200), "unknown path"),
                       ((DOC, "/databases", "POST", 200), "unknown method"),
                       ((DOC, "/databases/x", "GET", 500), "undocumented status"),
                       ((DOC, "/databases/x", "GET", 200, "text/html"), "undocumented content type"),
                       ((DOC, "/databases/a/b", "GET", 200), "extra segment")):
        try:
            t2s.openapi_response_schema(*args)
            tap.ok(False, "openapi_lookup_raises_for_" + what.replace(" ", "_"))
        except LookupError:
            tap.ok(True, "openapi_lookup_raises_for_" + what.replace(" ", "_"))
    resp = t2s.Response(200, "OK", t2s.Headers([("content-type", "application/json")]),
                        json.dumps({"columns": [], "rows": [], "row_count": 0, "truncated": False}).encode())
    buf = io.StringIO()
    inner = t2s.Tap(out=buf)
    inner.ok(True, "x")
    tap.ok(t2s.check_response(inner, DOC, resp, "POST", "/execute", "r"), "check_response_passes_valid_body")
    resp_bad = t2s.Response(200, "OK", t2s.Headers([("Content-Type", "application/json")]), b'{"rows": 1}')
    tap.ok(not t2s.check_response(inner, DOC, resp_bad, "POST", "/execute", "r"),
           "check_response_fails_invalid_body")
    resp_extra = t2s.Response(200, "OK", t2s.Headers([("Content-Type", "application/json")]),
                              json.dumps({"columns": [], "rows": [], "row_count": 0, "truncated": False,
                                          "surprise": 1}).encode())
    tap.ok(not t2s.check_response(inner, DOC, resp_extra, "POST", "/execute", "r"),
           "check_response_fails_undocumented_field_of_open_schema")


def test_undocumented_fields():
    root = {"components": {"schemas": {
        "Base": {"type": "object", "properties": {"a": {"type": "integer"}, "inner": {"$ref": "#/components/schemas/In"}}},
        "In": {"type": "object", "properties": {"x": {"type": "string"}}},
        "Map": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/In"}},
    }}}
    ref = lambda n: {"$ref": "#/components/schemas/" + n}  # noqa: E731
    tap.eq(t2s.undocumented_fields({"a": 1, "inner": {"x": "y"}}, ref("Base"), root), [],
           "undocumented_fields_none_when_all_documented")
    tap.eq(t2s.undocumented_fields({"a": 1, "b": 2, "inner": {"x": "y", "z": 0}}, ref("Base"), root),
           ["$.b", "$.inner.z"], "undocumented_fields_finds_top_level_and_nested_members")
    tap.eq(t2s.undocumented_fields({"a": 1, "c": 3}, {"allOf": [ref("Base"), {"properties": {"c": {}}}]}, root),
           [], "undocumented_fields_unites_allof_parts")
    tap.eq(t2s.undocumented_fields({"k1": {"x": "1"}, "k2": {"w": 1}}, ref("Map"), root), ["$.k2.w"],
           "undocumented_fields_follows_map_values")
    tap.eq(t2s.undocumented_fields([{"a": 1, "q": 1}], {"type": "array", "items": ref("Base")}, root), ["$[0].q"],
           "undocumented_fields_follows_array_items")
    tap.eq(t2s.undocumented_fields({"n": {"q": 1}}, {"properties": {"n": {"oneOf": [
        {"type": "null"}, ref("In")]}}}, root), ["$.n.q"], "undocumented_fields_follows_matching_oneof_branch")


# --------------------------------------------------------------------------- Service

FAKE_SERVER = r'''
import json, signal, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
cfg = json.load(open(sys.argv[sys.argv.index("--config") + 1]))
unknown = [k for k in cfg if k not in ("listen", "mode", "limits")]
if unknown:
    print("config: unknown key %s" % unknown[0], file=sys.stderr)
    sys.exit(2)
mode = cfg.get("mode", "serve")
if mode == "crash":
    print("fatal: cannot open database", file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    time.sleep(60)
if mode == "ubsan":
    print("../common/x.c:12:5: runtime error: signed integer overflow", file=sys.stderr)
    sys.exit(1)
if mode == "tsan":  # reports, then keeps serving as a build without halt_on_error does
    print("==================\nWARNING: ThreadSanitizer: data race (pid=1)\n"
          "  Write of size 8 at 0x7b04 by thread T3:\n    #0 register_metrics ../pipeline/x.c:18\n\n"
          "SUMMARY: ThreadSanitizer: data race ../pipeline/x.c:18 in register_metrics\n"
          "==================", file=sys.stderr, flush=True)
if mode == "ignore_term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        sys.stderr.write("req %s %s\n" % (self.command, self.path))
    def send(self, code, ctype, body, extra=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "rid-1")
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/healthz":
            self.send(200, "application/json", b'{"status":"ok"}')
        elif self.path == "/fail":
            self.send(500, "application/problem+json", b'{"type":"about:blank","title":"x","status":500}')
        elif self.path == "/text":
            self.send(404, "text/plain", b"not json")
        else:
            self.send(200, "application/json", json.dumps({"env": __import__("os").environ.get("T2S_X")}).encode())
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        self.send(200, "application/json", json.dumps({"got": json.loads(body), "ctype": self.headers.get("Content-Type")}).encode())
print("listening on %d" % cfg["listen"]["port"], flush=True)
ThreadingHTTPServer((cfg["listen"]["host"], cfg["listen"]["port"]), H).serve_forever()
'''


def test_service(tmp):
    fake = os.path.join(tmp, "fake-text2sqld")
    with open(fake, "w") as f:
        f.write("#!%s\n%s" % (sys.executable, FAKE_SERVER))
    os.chmod(fake, 0o755)

    port = t2s.free_port()
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        tap.ok(True, "free_port_is_bindable")
    except OSError as e:
        tap.ok(False, "free_port_is_bindable", diag=str(e))
    finally:
        s.close()

    with t2s.Service({}, env={"T2S_X": "hello"}, binary=fake) as svc:
        tap.ok(1024 <= svc.port <= 65535 and svc.config["listen"]["host"] == "127.0.0.1",
               "service_fills_listen_when_absent", diag=repr(svc.config))
        r = svc.request("GET", "/other")
        tap.eq((r.status, r.json), (200, {"env": "hello"}), "service_passes_extra_env")
        r = svc.request("GET", "/fail")
        tap.eq(r.status, 500, "service_request_does_not_raise_on_5xx")
        tap.eq(r.headers.get("content-type"), "application/problem+json", "service_headers_case_insensitive")
        tap.eq(r.json["status"], 500, "service_response_json_parsed")
        r = svc.request("GET", "/text")
        tap.ok(r.status == 404 and r.json is None and r.text == "not json",
               "service_non_json_body_gives_json_none", diag=repr(r))
        r = svc.request("POST", "/x", json={"a": [1, "é"]})
        tap.eq(r.json, {"got": {"a": [1, "é"]}, "ctype": "application/json"},
               "service_posts_json_body")
        r = svc.request("POST", "/x", body='{"b": 2}', headers={"Content-Type": "application/x"})
        tap.eq(r.json, {"got": {"b": 2}, "ctype": "application/x"}, "service_posts_raw_body")
        code = svc.stop()
        tap.eq(code, 0, "service_stop_returns_exit_code")
        tap.ok("listening on %d" % svc.port in svc.log_text() and "req GET /fail" in svc.log_text(),
               "service_log_captures_stdout_and_stderr", diag=svc.log_text())
        d = svc.dir
    tap.ok(not os.path.exists(d), "service_context_exit_removes_temp_dir")
    tap.ok("req GET /fail" in svc.log_text(), "service_log_readable_after_close")

    svc = t2s.Service({"listen": {"port": t2s.free_port()}, "mode": "ignore_term"}, binary=fake).start()
    t0 = time.monotonic()
    code = svc.stop(timeout=1)
    tap.ok(code == -signal.SIGKILL and time.monotonic() - t0 < 10,
           "service_stop_kills_after_timeout", diag="code %r" % code)
    svc.close()

    svc = t2s.Service({"mode": "crash"}, binary=fake)
    try:
        svc.start()
        tap.ok(False, "service_start_reports_early_exit_with_log")
    except RuntimeError as e:
        tap.ok("exited with 3" in str(e) and "cannot open database" in str(e),
               "service_start_reports_early_exit_with_log", diag=str(e))
    svc.close()

    code, out = t2s.run_config_only({"listen": {"port": 1}, "bogus": True}, binary=fake)
    tap.ok(code == 2 and "unknown key bogus" in out, "run_config_only_returns_code_and_output",
           diag="%r %r" % (code, out))
    code, out = t2s.run_config_only('{"mode": "crash"', binary=fake)
    tap.ok(code not in (0, None), "run_config_only_accepts_raw_text", diag="%r %r" % (code, out))
    code, out = t2s.run_config_only({"listen": {"host": "127.0.0.1", "port": 1}, "mode": "hang"},
                                    timeout=1, binary=fake)
    tap.eq(code, None, "run_config_only_timeout_gives_none")
    test_sanitizer_reports(fake)


def test_sanitizer_reports(fake):
    """take_sanitizer_reports() and the check the test's own Tap adds."""
    tap.eq(t2s.take_sanitizer_reports(), [], "sanitizer_reports_empty_after_clean_runs")
    tap.eq(t2s.take_sanitizer_reports(), None, "sanitizer_reports_none_when_nothing_ran_since")

    svc = t2s.Service({"mode": "tsan"}, binary=fake).start()
    reports = t2s.take_sanitizer_reports()
    tap.ok(not svc.alive(), "sanitizer_reports_stop_services_still_running")
    tap.ok(len(reports) == 1 and "1 sanitizer report(s)" in reports[0]
           and "WARNING: ThreadSanitizer: data race" in reports[0]
           and "SUMMARY: ThreadSanitizer: data race ../pipeline/x.c:18 in register_metrics" in reports[0]
           and svc.config_path in reports[0],
           "sanitizer_reports_name_the_service_and_the_race", diag=repr(reports))
    svc.close()

    code, _ = t2s.run_config_only({"mode": "ubsan"}, binary=fake)
    reports = t2s.take_sanitizer_reports()
    tap.ok(code == 1 and len(reports) == 1 and "runtime error: signed integer overflow" in reports[0],
           "sanitizer_reports_include_run_config_only_output", diag=repr(reports))

    with t2s.Service({"mode": "tsan"}, binary=fake):
        pass
    buf = io.StringIO()
    t = t2s.Tap(out=buf)
    t.checks_binaries = True  # as the test's own Tap, which writes to stdout
    t.ok(True, "a")
    rc = t.done()
    lines = buf.getvalue().splitlines()
    tap.ok(rc == 1 and lines[1] == "not ok 2 - text2sqld_printed_no_sanitizer_report"
           and any("SUMMARY: ThreadSanitizer" in x for x in lines) and lines[-1] == "1..2",
           "tap_done_fails_on_a_sanitizer_report_of_a_service", diag=repr(lines))
    buf = io.StringIO()
    t = t2s.Tap(out=buf)
    t.checks_binaries = True
    t.ok(True, "a")
    t2s.run_config_only({"listen": {"port": 1}, "bogus": True}, binary=fake)
    rc = t.done()
    tap.eq((rc, buf.getvalue().splitlines()[1:]), (0, ["ok 2 - text2sqld_printed_no_sanitizer_report", "1..2"]),
           "tap_done_passes_the_check_after_clean_runs")


# --------------------------------------------------------------------------- SQLite checksum

def test_sqlite_checksum(tmp):
    p = os.path.join(tmp, "c.sqlite")
    con = sqlite3.connect(p)
    con.executescript("CREATE TABLE t (a INTEGER, b TEXT, c BLOB);"
                      "INSERT INTO t VALUES (1, 'x', x'00'), (2, NULL, NULL);")
    con.commit()
    con.close()
    before = open(p, "rb").read()
    c1 = t2s.sqlite_checksum(p)
    tap.eq(t2s.sqlite_checksum(p), c1, "sqlite_checksum_is_stable")
    tap.ok(open(p, "rb").read() == before, "sqlite_checksum_leaves_file_unchanged")
    con = sqlite3.connect(p)
    con.execute("UPDATE t SET b = '1' WHERE a = 2")
    con.commit()
    c2 = t2s.sqlite_checksum(p)
    con.execute("UPDATE t SET b = 1 WHERE a = 2")  # TEXT affinity: stored as '1' again
    con.commit()
    tap.eq(t2s.sqlite_checksum(p), c2, "sqlite_checksum_same_for_same_content")
    con.execute("UPDATE t SET c = '1' WHERE a = 2")  # text vs blob must differ
    con.commit()
    c3 = t2s.sqlite_checksum(p)
    con.execute("UPDATE t SET c = x'31' WHERE a = 2")
    con.commit()
    c4 = t2s.sqlite_checksum(p)
    con.execute("CREATE INDEX i ON t (a)")
    con.commit()
    c5 = t2s.sqlite_checksum(p)
    con.close()
    tap.ok(len({c1, c2, c3, c4, c5}) == 5, "sqlite_checksum_detects_data_type_and_schema_changes",
           diag=repr([c1, c2, c3, c4, c5]))


# --------------------------------------------------------------------------- datasets

def test_datasets():
    old = os.environ.get("T2S_DATASETS")
    os.environ["T2S_DATASETS"] = "/nonexistent/t2s-datasets"
    try:
        tap.eq((t2s.datasets_dir(), t2s.spider_db_path("concert_singer"), t2s.spider_tables_json()),
               (None, None, None), "datasets_absent_gives_none")
    finally:
        if old is None:
            del os.environ["T2S_DATASETS"]
        else:
            os.environ["T2S_DATASETS"] = old
    if t2s.spider_dir() is None:
        tap.skip("spider_db_path_finds_dev_database", "Spider data not found (T2S_DATASETS)")
        tap.skip("spider_tables_json_lists_schemas", "Spider data not found (T2S_DATASETS)")
        return
    p = t2s.spider_db_path("concert_singer")
    tap.ok(p is not None and p.endswith("concert_singer.sqlite"), "spider_db_path_finds_dev_database")
    tables = t2s.spider_tables_json()
    tap.ok(isinstance(tables, list) and any(d.get("db_id") == "concert_singer" for d in tables),
           "spider_tables_json_lists_schemas")
    tap.eq(t2s.spider_db_path("no_such_db"), None, "spider_db_path_unknown_gives_none")


# --------------------------------------------------------------------------- PostgreSQL

LOADER = os.path.join(LIB, "load_sqlite_into_pg.py")


def run_loader(path, db, *extra):
    proc = subprocess.run([sys.executable, LOADER, path, "--host", t2s.pg_host(),
                           "--port", t2s.pg_port(), "--dbname", db] + list(extra),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rep = None
    if proc.returncode == 0:
        try:
            rep = json.loads(proc.stdout)
        except ValueError:
            pass
    return proc.returncode, rep, proc.stderr


EDGE_ROWS = [
    (1, "", 5, 1.5, 2.25, b"\x00\xff", 2 ** 62, 1),
    (2, None, "text", float("inf"), 3, None, -2 ** 63, 2.5),
    (3, 'line1\n\\.\nline3\t"q", x\r\n', None, -1e-300, None, b"", 7, "x"),
    (4, "üñí €", 1.1, 1e300, 5, b"abc", None, None),
]


def make_edge_db(path):
    con = sqlite3.connect(path)
    con.executescript('''
CREATE TABLE "Mixed Case" ("Id" INTEGER PRIMARY KEY, "Name ""q""" TEXT, val, r REAL,
                           d DECIMAL(10,2), b BLOB, big INT, mix INT);
CREATE TABLE parent (a INT, b TEXT, PRIMARY KEY (a, b));
CREATE TABLE child (x INT, y TEXT, z INT REFERENCES "MIXED CASE",
                    FOREIGN KEY (x, y) REFERENCES Parent(A, B));
CREATE TABLE badchild (p INT REFERENCES parent(a), q INT REFERENCES nothere(id),
                       s TEXT REFERENCES "Mixed Case"("Id"), o INT REFERENCES "Mixed Case");
CREATE TABLE nullpk (k TEXT PRIMARY KEY, v INT);
CREATE TABLE u (k INT, code TEXT UNIQUE);
CREATE TABLE uref (c TEXT REFERENCES u(code));
CREATE TABLE empty (i INTEGER, f FLOAT, d DATE, n NUMERIC, x);
''')
    con.executemany('INSERT INTO "Mixed Case" VALUES (?,?,?,?,?,?,?,?)', EDGE_ROWS)
    con.executemany("INSERT INTO parent VALUES (?,?)", [(1, "a"), (2, "b")])
    con.executemany("INSERT INTO child VALUES (?,?,?)", [(1, "a", 1), (2, "b", None), (None, "zz", 4)])
    con.execute("INSERT INTO badchild VALUES (1, 1, '1', 99)")
    con.executemany("INSERT INTO nullpk VALUES (?,?)", [(None, 1), (None, 2), ("a", 3)])
    con.executemany("INSERT INTO u VALUES (?,?)", [(1, "c1"), (2, "c2")])
    con.executemany("INSERT INTO uref VALUES (?)", [("c1",), (None,)])
    con.commit()
    con.close()


def same_value(src, got):
    if src is None:
        return got is None
    if isinstance(src, bytes):
        return got == "\\x" + src.hex()
    if isinstance(src, float):
        return got is not None and float(got) == src
    if isinstance(src, int) and got is not None and "." in got:
        return float(got) == src
    return got == str(src)


def test_postgres(tmp):
    if not os.environ.get("T2S_TEST_PG_PORT"):
        tap.skip("postgres_helpers", "no PostgreSQL (T2S_TEST_PG_PORT unset; see tests/lib/servers.sh)")
        return
    rows = t2s.psql("SELECT 1, NULL, ''; SELECT 'a' || chr(10) || 'b', 'c' UNION ALL SELECT 'd', 'e';"
                    "SELECT 1 WHERE false; SELECT 'z'")
    tap.eq(rows, [["1", None, ""], ["a\nb", "c"], ["d", "e"], ["z"]],
           "psql_rows_nulls_newlines_and_several_statements")
    try:
        t2s.psql("SELECT * FROM no_such_table")
        tap.ok(False, "psql_raises_on_error")
    except t2s.PsqlError as e:
        tap.ok("no_such_table" in str(e), "psql_raises_on_error", diag=str(e))

    edge = os.path.join(tmp, "edge.sqlite")
    make_edge_db(edge)
    db = "t2s_lib_edge Db"
    code, rep, err = run_loader(edge, db, "--schema", "S1", "--reader-role", "t2s_lib_reader")
    if not tap.ok(code == 0 and rep is not None, "loader_loads_edge_case_database", diag=err):
        return
    types = rep["column_types"]
    tap.eq(types["Mixed Case"], {"Id": "bigint", 'Name "q"': "text", "val": "text",
                                 "r": "double precision", "d": "double precision", "b": "bytea",
                                 "big": "bigint", "mix": "text"},
           "loader_types_follow_declared_type_and_data")
    tap.eq(types["empty"], {"i": "bigint", "f": "double precision", "d": "text",
                            "n": "double precision", "x": "text"}, "loader_types_of_empty_columns")
    tap.eq(rep["table_rows"], {"Mixed Case": 4, "parent": 2, "child": 3, "badchild": 1, "nullpk": 3,
                               "u": 2, "uref": 2, "empty": 0}, "loader_reports_row_counts")
    got = t2s.psql('SELECT "Id", "Name ""q""", val, r, d, b, big, mix FROM "S1"."Mixed Case" '
                   'ORDER BY 1', db)
    mism = [(s, g) for srow, grow in zip(EDGE_ROWS, got) for s, g in zip(srow, grow)
            if not same_value(s, g)]
    tap.ok(len(got) == 4 and not mism, "loader_values_round_trip_exactly", diag=repr(mism or got))
    added = {(f["table"], tuple(f["columns"])) for f in rep["foreign_keys_added"]}
    tap.eq(added, {("child", ("x", "y")), ("child", ("z",)), ("uref", ("c",))},
           "loader_adds_valid_foreign_keys_resolving_case")
    skipped = {(f["table"], tuple(f["columns"])): f["reason"] for f in rep["foreign_keys_skipped"]}
    tap.eq(sorted(skipped), [("badchild", ("o",)), ("badchild", ("p",)), ("badchild", ("q",)),
                             ("badchild", ("s",))], "loader_skips_invalid_foreign_keys")
    tap.ok("violates foreign key" in skipped.get(("badchild", ("o",)), "") and
           "incompatible types" in skipped.get(("badchild", ("s",)), "") and
           "not a primary key or unique" in skipped.get(("badchild", ("p",)), ""),
           "loader_gives_skip_reasons", diag=repr(skipped))
    tap.eq([p["table"] for p in rep["primary_keys_skipped"]], ["nullpk"],
           "loader_skips_primary_key_over_nulls")
    fks = t2s.psql("SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND "
                   "connamespace = '\"S1\"'::regnamespace", db)
    tap.eq(fks, [["3"]], "loader_foreign_keys_exist_in_postgres")
    rows = t2s.psql('SELECT count(*) FROM "S1".parent', db, user="t2s_lib_reader")
    tap.eq(rows, [["2"]], "reader_role_can_select")
    for sql, what in (('DELETE FROM "S1".u', "write"), ('CREATE TABLE "S1".x (a int)', "create"),
                      ("CREATE TEMP TABLE x (a int)", "create_temp")):
        try:
            t2s.psql(sql, db, user="t2s_lib_reader")
            tap.ok(False, "reader_role_cannot_" + what)
        except t2s.PsqlError as e:
            tap.ok("permission denied" in str(e), "reader_role_cannot_" + what, diag=str(e))

    c1 = t2s.pg_checksum(db)
    tap.eq(t2s.pg_checksum(db), c1, "pg_checksum_is_stable")
    t2s.psql('UPDATE "S1".u SET k = 3 WHERE k = 2', db)
    tap.ok(t2s.pg_checksum(db) != c1, "pg_checksum_detects_update")
    code, rep2, err = run_loader(edge, db, "--schema", "S1", "--reader-role", "t2s_lib_reader")
    tap.ok(code == 0 and t2s.pg_checksum(db) == c1, "loader_reload_replaces_database", diag=err)
    t2s.psql('DROP DATABASE "%s" WITH (FORCE)' % db)

    spider = t2s.spider_db_path("car_1")
    if spider is None:
        tap.skip("loader_loads_spider_car_1", "Spider data not found (T2S_DATASETS)")
        return
    code, rep, err = run_loader(spider, "t2s_lib_car_1")
    if tap.ok(code == 0 and rep is not None, "loader_loads_spider_car_1", diag=err):
        con = sqlite3.connect("file:%s?mode=ro" % spider, uri=True)
        want = {t: con.execute('SELECT count(*) FROM "%s"' % t).fetchone()[0]
                for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        con.close()
        got = {t: int(t2s.psql('SELECT count(*) FROM "%s"' % t, "t2s_lib_car_1")[0][0]) for t in want}
        tap.eq(got, want, "loader_spider_row_counts_match_sqlite")
        t2s.psql('DROP DATABASE "t2s_lib_car_1" WITH (FORCE)')


def main():
    test_tap()
    test_validator()
    test_openapi_lookup()
    test_undocumented_fields()
    with tempfile.TemporaryDirectory(prefix="t2s-libtest-") as tmp:
        test_service(tmp)
        test_sqlite_checksum(tmp)
        test_datasets()
        test_postgres(tmp)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

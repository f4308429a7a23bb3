#!/usr/bin/env python3
"""test_browser.py - what a web app calling text2sqld from a browser relies on.

  - CORS (config `cors`): off by default (no CORS header, OPTIONS is 405);
    with an allow-list, a listed Origin gets Access-Control-Allow-Origin
    (that origin, Vary: Origin), exposed X-Request-Id and Location, and
    credentials only when asked; a preflight is answered 204 without an API
    key, with the path's methods, the request headers the API reads and
    Max-Age; an unlisted origin gets no CORS header (and a 403 preflight); an
    unknown path 404, a method the path lacks 405; ["*"] answers "*" and is
    refused together with allow_credentials; malformed origins are refused
    at start with the key's path;
  - integers beyond 2^53-1: JSON numbers as stored by default, decimal
    strings with big_integers "string" (per request on /execute and in
    /query's options, or execution.big_integers in the config);
  - /execute's column_types (declared types, null for expressions);
  - 201 Created with a Location that GET answers (stored examples);
  - W3C traceparent: a valid one appears with its trace_id in every log line
    of the request; an invalid one is ignored.
"""

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-browser-test-")
CLEAN_ENV = {"TEXT2SQLD_LISTEN_HOST": None, "TEXT2SQLD_LISTEN_PORT": None, "TEXT2SQLD_REDIS_URL": None}
APP = "https://app.example.com"
OTHER = "https://evil.example.net"
BIG = 9007199254740993  # 2^53 + 1: JavaScript's JSON.parse reads 9007199254740992
KEY = "browser-test-key-%d" % os.getpid()

DB = fixtures.write_sqlite(os.path.join(TMP, "big.sqlite"), """
    CREATE TABLE account (id INTEGER PRIMARY KEY, external_id BIGINT, name VARCHAR(40), balance NUMERIC);
    INSERT INTO account VALUES (1, 9007199254740993, 'Ann', 10.5), (2, -9223372036854775808, 'Bob', 3),
                               (3, 9007199254740991, 'Cy', NULL);
""")


def config(**extra):
    cfg = {"databases": [{"name": "bank", "url": "sqlite://" + DB}],
           "state": {"url": "sqlite://" + os.path.join(TMP, "state-%d.sqlite" % len(os.listdir(TMP)))},
           "auth": {"allow_anonymous_writes": True}}  # test_created_location adds an example
    cfg.update(extra)
    return cfg


def preflight(svc, path, method, origin=APP, headers="content-type, authorization"):
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        h["Access-Control-Request-Headers"] = headers
    return svc.request("OPTIONS", path, headers=h)


def test_cors_off():
    with t2s.Service(config(), env=CLEAN_ENV) as svc:
        r = svc.request("GET", "/databases", headers={"Origin": APP})
        tap.ok(r.status == 200 and not any(k.lower().startswith("access-control-") for k, _ in r.headers.items())
               and "Vary" not in r.headers, "cors_off_sends_no_cors_headers", diag=repr(r.headers))
        r = preflight(svc, "/execute", "POST")
        tap.ok(r.status == 405 and "Access-Control-Allow-Origin" not in r.headers, "cors_off_options_is_405",
               diag="%d %r" % (r.status, r.headers))


def test_cors_allow_list():
    cfg = config(cors={"allowed_origins": [APP, "http://localhost:5173"], "max_age_s": 120},
                 auth={"api_keys": [{"name": "web", "key_sha256": hashlib.sha256(KEY.encode()).hexdigest(),
                                     "databases": ["*"]}]})
    with t2s.Service(cfg, env=CLEAN_ENV) as svc:
        r = preflight(svc, "/execute", "POST")
        tap.eq(r.status, 204, "preflight_from_listed_origin_answers_204_without_a_key")
        tap.eq(r.headers.get("Access-Control-Allow-Origin"), APP, "preflight_allows_the_origin_itself")
        tap.eq(r.headers.get("Access-Control-Allow-Methods"), "POST", "preflight_lists_the_paths_methods")
        allowed = [h.strip().lower() for h in (r.headers.get("Access-Control-Allow-Headers") or "").split(",")]
        tap.ok({"authorization", "content-type", "x-request-id", "traceparent"} <= set(allowed),
               "preflight_allows_authorization_content_type_request_id_traceparent", diag=repr(allowed))
        tap.eq(r.headers.get("Access-Control-Max-Age"), "120", "preflight_max_age_is_cors_max_age_s")
        tap.ok("Origin" in (r.headers.get("Vary") or ""), "preflight_varies_on_origin")
        tap.ok("Access-Control-Allow-Credentials" not in r.headers, "no_credentials_unless_configured")
        r = preflight(svc, "/databases/bank/examples/1", "DELETE")
        methods = sorted(m.strip() for m in (r.headers.get("Access-Control-Allow-Methods") or "").split(","))
        tap.ok(r.status == 204 and methods == ["DELETE", "GET", "HEAD"], "preflight_lists_every_method_of_the_path",
               diag="%d %r" % (r.status, methods))
        r = preflight(svc, "/execute", "PUT")
        tap.ok(r.status == 405 and fixtures.is_problem(r, 405, "method-not-allowed"),
               "preflight_for_a_method_the_path_lacks_is_405", diag=r.text[:300])
        r = preflight(svc, "/nowhere", "GET")
        tap.ok(fixtures.is_problem(r, 404, "not-found"), "preflight_on_unknown_path_is_404", diag=r.text[:300])
        r = preflight(svc, "/execute", "POST", origin=OTHER)
        tap.ok(fixtures.is_problem(r, 403, "cors-origin-denied") and "Access-Control-Allow-Origin" not in r.headers,
               "preflight_from_unlisted_origin_is_403_without_cors_headers", diag="%d %r" % (r.status, r.headers))

        body = {"database": "bank", "sql": "SELECT name FROM account ORDER BY id"}
        r = svc.request("POST", "/execute", json=body, headers={"Origin": APP, "Authorization": "Bearer " + KEY})
        tap.ok(r.status == 200 and r.headers.get("Access-Control-Allow-Origin") == APP,
               "request_from_listed_origin_carries_allow_origin", diag="%d %r" % (r.status, r.headers))
        exposed = [h.strip() for h in (r.headers.get("Access-Control-Expose-Headers") or "").split(",")]
        tap.ok({"X-Request-Id", "Location"} <= set(exposed), "request_id_and_location_are_exposed", diag=repr(exposed))
        r = svc.request("POST", "/execute", json=body, headers={"Origin": APP})
        tap.ok(r.status == 401 and r.headers.get("Access-Control-Allow-Origin") == APP,
               "a_401_to_a_listed_origin_is_readable_by_the_page", diag="%d %r" % (r.status, r.headers))
        r = svc.request("POST", "/execute", json=body, headers={"Origin": OTHER, "Authorization": "Bearer " + KEY})
        tap.ok(r.status == 200 and "Access-Control-Allow-Origin" not in r.headers and "Origin" in (r.headers.get("Vary") or ""),
               "request_from_unlisted_origin_gets_no_allow_origin", diag=repr(r.headers))
        r = svc.request("GET", "/healthz", headers={"Origin": "http://localhost:5173"})
        tap.eq(r.headers.get("Access-Control-Allow-Origin"), "http://localhost:5173", "second_listed_origin_is_allowed")


def test_cors_credentials_and_any():
    with t2s.Service(config(cors={"allowed_origins": [APP], "allow_credentials": True}), env=CLEAN_ENV) as svc:
        r = svc.request("GET", "/healthz", headers={"Origin": APP})
        tap.ok(r.headers.get("Access-Control-Allow-Origin") == APP and
               r.headers.get("Access-Control-Allow-Credentials") == "true",
               "credentials_are_allowed_for_a_listed_origin_when_configured", diag=repr(r.headers))
    with t2s.Service(config(cors={"allowed_origins": ["*"]}), env=CLEAN_ENV) as svc:
        r = svc.request("GET", "/healthz", headers={"Origin": OTHER})
        tap.ok(r.headers.get("Access-Control-Allow-Origin") == "*" and "Access-Control-Allow-Credentials" not in r.headers,
               "star_list_answers_star_without_credentials", diag=repr(r.headers))
        r = preflight(svc, "/query", "POST", origin=OTHER)
        tap.eq((r.status, r.headers.get("Access-Control-Allow-Origin")), (204, "*"), "star_list_answers_preflights")
    for cors, key, name in (
            ({"allowed_origins": ["*"], "allow_credentials": True}, "cors.allowed_origins[0]",
             "config_refuses_star_with_credentials"),
            ({"allowed_origins": ["https://app.example.com/"]}, "cors.allowed_origins[0]",
             "config_refuses_origin_with_a_path"),
            ({"allowed_origins": [APP, "*"]}, "cors.allowed_origins[1]", "config_refuses_star_among_origins"),
            ({"allowed_origins": ["app.example.com"]}, "cors.allowed_origins[0]", "config_refuses_origin_without_scheme"),
            ({"allowed_origins": [APP], "max_age_s": -1}, "cors.max_age_s", "config_refuses_negative_max_age"),
            ({"allowed": [APP]}, "cors.allowed", "config_refuses_unknown_cors_key")):
        code, out = t2s.run_config_only(config(cors=cors), ["--check-config"], env=CLEAN_ENV)
        tap.ok(code == 2 and key in out, name, diag="%r %s" % (code, out[-300:]))
    code, out = t2s.run_config_only(config(cors={"allowed_origins": []}), ["--check-config"], env=CLEAN_ENV)
    tap.eq(code, 0, "config_accepts_empty_origin_list_as_off")


def test_big_integers_and_types():
    sql = "SELECT id, external_id, name, balance, external_id + 0 AS expr FROM account ORDER BY id"
    with t2s.Service(config(), env=CLEAN_ENV) as svc:
        r = svc.request("POST", "/execute", json={"database": "bank", "sql": sql})
        tap.ok(r.status == 200 and '9007199254740993' in r.text and '"9007199254740993"' not in r.text,
               "big_integers_are_numbers_by_default", diag=r.text[:400])
        tap.eq((r.json or {}).get("rows", [[None, None]])[0][1], BIG, "default_number_is_exact_in_the_json_text")
        tap.eq((r.json or {}).get("column_types"), ["INTEGER", "BIGINT", "VARCHAR(40)", "NUMERIC", None],
               "execute_returns_declared_column_types")
        r = svc.request("POST", "/execute", json={"database": "bank", "sql": sql, "big_integers": "string"})
        rows = (r.json or {}).get("rows") or []
        tap.eq([row[1] for row in rows], ["9007199254740993", "-9223372036854775808", 9007199254740991],
               "big_integers_string_sends_only_unsafe_integers_as_strings")
        tap.eq([row[4] for row in rows], ["9007199254740993", "-9223372036854775808", 9007199254740991],
               "big_integers_string_applies_to_expressions_too")
        tap.eq([row[0] for row in rows], [1, 2, 3], "small_integers_stay_numbers")
        r = svc.request("POST", "/execute", json={"database": "bank", "sql": sql, "big_integers": "text"})
        tap.ok(fixtures.is_problem(r, 400, "invalid-request") and "big_integers" in (r.json or {}).get("detail", ""),
               "big_integers_other_value_is_400_naming_the_field", diag=r.text[:300])
        r = svc.request("POST", "/execute", json={"database": "bank", "sql": sql, "big_integers": None})
        tap.eq(((r.json or {}).get("rows") or [[0, 0]])[0][1], BIG, "big_integers_null_means_the_default")
    with t2s.Service(config(execution={"big_integers": "string"}), env=CLEAN_ENV) as svc:
        r = svc.request("POST", "/execute", json={"database": "bank", "sql": sql})
        tap.eq(((r.json or {}).get("rows") or [[0, 0]])[0][1], "9007199254740993",
               "config_execution_big_integers_string_is_the_default")
        r = svc.request("POST", "/execute", json={"database": "bank", "sql": sql, "big_integers": "number"})
        tap.eq(((r.json or {}).get("rows") or [[0, 0]])[0][1], BIG, "request_overrides_config_big_integers")
    code, out = t2s.run_config_only(config(execution={"big_integers": "bigint"}), ["--check-config"], env=CLEAN_ENV)
    tap.ok(code == 2 and "execution.big_integers" in out, "config_refuses_unknown_big_integers_value", diag=out[-300:])


def test_query_big_integers():
    stub = fixtures.ModelStub()
    try:
        stub.rules([{"match": {"path": "/v1/chat/completions"},
                     "respond": {"content": "```sql\nSELECT external_id FROM account WHERE id = 1\n```"}}])
        cfg = config(models={"generate": {"base_url": stub.base_url, "model": "gen", "retries": 0}},
                     generate={"cache_ttl_s": 0})
        with t2s.Service(cfg, env=CLEAN_ENV) as svc:
            q = {"database": "bank", "question": "What is the external id of account 1?"}
            r = svc.request("POST", "/query", json=q, timeout=60)
            tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[BIG]], "query_rows_big_integer_number_by_default",
                   diag=r.text[:500])
            r = svc.request("POST", "/query", json=dict(q, options={"big_integers": "string"}), timeout=60)
            tap.ok(r.status == 200 and (r.json or {}).get("rows") == [["9007199254740993"]] and
                   (r.json or {}).get("column_types") == ["BIGINT"], "query_options_big_integers_string",
                   diag=r.text[:500])
    finally:
        stub.close()


def test_created_location():
    with t2s.Service(config(), env=CLEAN_ENV) as svc:
        r = svc.request("POST", "/databases/bank/examples",
                        json={"question": "Who has the largest balance?",
                              "sql": "SELECT name FROM account ORDER BY balance DESC LIMIT 1"})
        loc = r.headers.get("Location") or ""
        tap.ok(r.status == 201 and loc == "/databases/bank/examples/%s" % (r.json or {}).get("id"),
               "example_created_answers_201_with_location", diag="%d %r" % (r.status, loc))
        g = svc.request("GET", loc)
        tap.ok(g.status == 200 and g.json == r.json, "location_of_created_example_answers_it", diag=g.text[:300])
        g = svc.request("GET", "/databases/bank/examples/999999")
        tap.ok(fixtures.is_problem(g, 404, "not-found"), "get_unknown_example_is_404", diag=g.text[:300])
        g = svc.request("GET", "/databases/bank/examples/x1")
        tap.ok(fixtures.is_problem(g, 404, "not-found"), "get_non_numeric_example_id_is_404", diag=g.text[:300])


def test_traceparent():
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    bad = ["00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # forbidden version
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # all-zero parent
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"]  # version 00 with more fields
    with t2s.Service(config(), env=CLEAN_ENV) as svc:
        r = svc.request("POST", "/execute", json={"database": "bank", "sql": "SELECT 1"},
                        headers={"traceparent": tp, "X-Request-Id": "trace-ok-1"})
        tap.eq(r.status, 200, "request_with_traceparent_is_served")
        for i, b in enumerate(bad):
            svc.request("GET", "/healthz", headers={"traceparent": b, "X-Request-Id": "trace-bad-%d" % i})
        r = svc.request("GET", "/healthz", headers={"traceparent": "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra",
                                                 "X-Request-Id": "trace-future"})
        svc.stop()
        lines = []
        for line in svc.log_text().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
        ok_lines = [entry for entry in lines if entry.get("request_id") == "trace-ok-1"]
        tap.ok(ok_lines and all(entry.get("traceparent") == tp and entry.get("trace_id") == tp[3:35]
                                for entry in ok_lines), "valid_traceparent_is_in_every_log_line_of_the_request",
               diag=repr(ok_lines))
        bad_lines = [entry for entry in lines if str(entry.get("request_id", "")).startswith("trace-bad-")]
        tap.ok(len(bad_lines) == len(bad) and not any("traceparent" in entry for entry in bad_lines),
               "invalid_traceparents_are_ignored", diag=repr(bad_lines))
        fut = [entry for entry in lines if entry.get("request_id") == "trace-future"]
        tap.ok(fut and fut[0].get("traceparent") == "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
               "later_traceparent_version_keeps_its_first_four_fields", diag=repr(fut))
        other = [entry for entry in lines if entry.get("request_id") not in (None, "trace-ok-1", "trace-future")
                 and entry.get("trace_id") == tp[3:35]]
        tap.ok(not other, "traceparent_does_not_leak_into_other_requests_lines", diag=repr(other[:3]))


def main():
    return fixtures.run_with_binary(tap, "browser_checks", test_cors_off, test_cors_allow_list,
                                    test_cors_credentials_and_any, test_big_integers_and_types,
                                    test_query_big_integers, test_created_location, test_traceparent)


if __name__ == "__main__":
    sys.exit(main())

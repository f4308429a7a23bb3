#!/usr/bin/env python3
"""test_auth.py - API-key authentication and per-database authorisation of
the real text2sqld binary.

With auth.api_keys configured: a request without a key, with a wrong key or
with another scheme gets a 401 problem with WWW-Authenticate: Bearer; the
"Bearer" scheme is case-insensitive; a key limited to database A gets 403
problems for database B (execute, schema, refresh) and sees only A in GET
/databases; a ["*"] key reaches every database; /healthz, /readyz and
/metrics need no key; and no key ever appears in the service's log (run at
log level debug). Uses two small SQLite files written by this test.
"""

import json
import hashlib
import os
import re
import secrets
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-auth-test-")

KEY_A = "t2s-key-alpha-%d-%s" % (os.getpid(), secrets.token_hex(12))
KEY_ALL = "t2s-key-all-%d-%s" % (os.getpid(), secrets.token_hex(12))
WRONG = "t2s-key-wrong-%d-%s" % (os.getpid(), secrets.token_hex(12))


def sha256_hex(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def make_sqlite(path, table, n):
    return fixtures.write_sqlite(path, "CREATE TABLE %s (id INTEGER PRIMARY KEY, label TEXT)" % table,
                                 {table: [(i, "%s %d" % (table, i)) for i in range(1, n + 1)]})


DB_A = make_sqlite(os.path.join(TMP, "alpha.sqlite"), "alpha_rows", 3)
DB_B = make_sqlite(os.path.join(TMP, "beta.sqlite"), "beta_rows", 4)

CONFIG = {
    "databases": [{"name": "alpha", "url": "sqlite://" + DB_A}, {"name": "beta", "url": "sqlite://" + DB_B}],
    "auth": {"api_keys": [
        {"name": "alpha-app", "key_sha256": sha256_hex(KEY_A), "databases": ["alpha"]},
        {"name": "admin", "key_sha256": sha256_hex(KEY_ALL).upper(), "databases": ["*"]},
    ]},
    "log": {"level": "debug", "access": True},
}


def bearer(key, scheme="Bearer"):
    return {"Authorization": "%s %s" % (scheme, key)}


def check_problem(r, status, slug, name):
    """One check: r is a complete RFC 9457 problem with this status and type slug."""
    return fixtures.check_problem(tap, r, status, slug, name)


def check_unauthorized(r, name):
    check_problem(r, 401, "unauthorized", name)
    www = r.headers.get("WWW-Authenticate") or ""
    tap.ok(www.split(" ")[0].lower() == "bearer", name + "_with_www_authenticate_bearer", diag=repr(r.headers))


def execute(svc, db, headers, sql=None):
    table = {"alpha": "alpha_rows", "beta": "beta_rows"}.get(db, "x")
    return svc.request("POST", "/execute", json={"database": db, "sql": sql or "SELECT count(*) FROM " + table},
                       headers=headers)


def db_names(r):
    return sorted(d.get("name") for d in ((r.json or {}).get("databases") or []))


def run_checks(svc):
    # Missing or bad credentials.
    check_unauthorized(execute(svc, "alpha", None), "execute_without_key_gives_401")
    check_unauthorized(svc.request("GET", "/databases"), "databases_without_key_gives_401")
    check_unauthorized(svc.request("GET", "/databases/alpha"), "database_schema_without_key_gives_401")
    check_unauthorized(svc.request("POST", "/databases/alpha/refresh"), "refresh_without_key_gives_401")
    check_unauthorized(execute(svc, "alpha", bearer(WRONG)), "execute_with_wrong_key_gives_401")
    check_unauthorized(execute(svc, "alpha", bearer(KEY_A, "Basic")), "execute_with_basic_scheme_gives_401")
    check_unauthorized(execute(svc, "alpha", {"Authorization": "Bearer"}), "execute_with_empty_bearer_gives_401")
    check_unauthorized(execute(svc, "alpha", {"Authorization": KEY_A}), "execute_with_bare_key_gives_401")
    check_unauthorized(execute(svc, "alpha", bearer(KEY_A + "x")), "execute_with_key_plus_suffix_gives_401")
    check_unauthorized(execute(svc, "alpha", bearer(sha256_hex(KEY_A))), "execute_with_key_hash_as_key_gives_401")

    # Scheme name is case-insensitive.
    for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
        r = execute(svc, "alpha", bearer(KEY_A, scheme))
        tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[3]],
               "bearer_scheme_%s_accepted" % scheme, diag=repr(r))

    # Key limited to alpha.
    r = execute(svc, "beta", bearer(KEY_A))
    check_problem(r, 404, "not-found", "alpha_key_execute_on_beta_gives_404")
    missing = execute(svc, "gamma", bearer(KEY_A))
    check_problem(missing, 404, "not-found", "alpha_key_execute_on_missing_database_gives_404")
    tap.eq((r.json or {}).get("detail", "").replace("beta", "X"), (missing.json or {}).get("detail", "").replace("gamma", "X"),
           "hidden_and_missing_database_get_the_same_detail")
    r = svc.request("GET", "/databases", headers=bearer(KEY_A))
    tap.ok(r.status == 200 and db_names(r) == ["alpha"], "alpha_key_lists_only_alpha", diag=repr(r))
    r = svc.request("GET", "/databases/beta", headers=bearer(KEY_A))
    check_problem(r, 404, "not-found", "alpha_key_get_beta_schema_gives_404")
    r = svc.request("GET", "/databases/alpha", headers=bearer(KEY_A))
    tap.ok(r.status == 200 and any(t.get("name") == "alpha_rows" for t in (r.json or {}).get("tables", [])),
           "alpha_key_gets_alpha_schema", diag=repr(r))
    r = svc.request("POST", "/databases/beta/refresh", headers=bearer(KEY_A))
    check_problem(r, 404, "not-found", "alpha_key_refresh_beta_gives_404")
    r = svc.request("POST", "/databases/alpha/refresh", headers=bearer(KEY_A))
    tap.eq(r.status, 200, "alpha_key_refreshes_alpha")

    # Wildcard key.
    r = execute(svc, "alpha", bearer(KEY_ALL))
    tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[3]], "wildcard_key_executes_on_alpha", diag=repr(r))
    r = execute(svc, "beta", bearer(KEY_ALL))
    tap.ok(r.status == 200 and (r.json or {}).get("rows") == [[4]], "wildcard_key_executes_on_beta", diag=repr(r))
    r = svc.request("GET", "/databases", headers=bearer(KEY_ALL))
    tap.ok(r.status == 200 and db_names(r) == ["alpha", "beta"], "wildcard_key_lists_all_databases", diag=repr(r))
    r = svc.request("GET", "/databases/beta", headers=bearer(KEY_ALL))
    tap.eq(r.status, 200, "wildcard_key_gets_beta_schema")

    # Public endpoints.
    r = svc.request("GET", "/healthz")
    tap.eq(r.status, 200, "healthz_needs_no_key")
    r = svc.request("GET", "/readyz")
    tap.ok(r.status == 200 and (r.json or {}).get("status") == "ready", "readyz_needs_no_key", diag=repr(r))
    tap.eq(sorted((r.json or {}).keys()), ["status"], "readyz_without_key_says_status_only")
    r = svc.request("GET", "/readyz", headers=bearer(KEY_A))
    tap.ok(r.status == 200 and sorted(((r.json or {}).get("checks") or {}).get("databases", {})) == ["alpha"],
           "readyz_with_key_details_only_its_databases", diag=repr(r))
    r = svc.request("GET", "/readyz", headers=bearer(KEY_ALL))
    tap.ok(sorted(((r.json or {}).get("checks") or {}).get("databases", {})) == ["alpha", "beta"],
           "readyz_with_wildcard_key_details_every_database", diag=repr(r))
    r = svc.request("GET", "/metrics")
    tap.ok(r.status == 200 and "text2sqld_http_requests_total" in r.text, "metrics_needs_no_key", diag=repr(r))
    tap.ok(KEY_A not in r.text and KEY_ALL not in r.text and "alpha-app" not in r.text,
           "metrics_do_not_expose_keys_or_key_names")
    r = svc.request("GET", "/healthz", headers=bearer(WRONG))
    tap.eq(r.status, 200, "healthz_ignores_wrong_key")


def test_service():
    svc = t2s.Service(CONFIG)
    try:
        svc.start()
        run_checks(svc)
    except RuntimeError as e:
        tap.ok(False, "auth_service_starts", diag=str(e))
    finally:
        code = svc.stop()
        svc.close()
    tap.eq(code, 0, "auth_service_exits_0_on_sigterm")
    log = svc.log_text()
    tap.ok(log.count('"msg":"request"') >= 20, "access_log_was_written", diag=log[-2000:])
    leaked = [name for name, k in (("alpha key", KEY_A), ("wildcard key", KEY_ALL), ("wrong key", WRONG))
              if k in log]
    tap.ok(not leaked, "api_keys_never_appear_in_log", diag="found: %s" % leaked)


def test_public_readiness_details():
    cfg = json.loads(json.dumps(CONFIG))
    cfg["auth"]["public_readiness_details"] = True
    with fixtures.serving(tap, cfg, "public_details_service_exits_0") as svc:
        r = svc.request("GET", "/readyz")
        tap.ok(sorted(((r.json or {}).get("checks") or {}).get("databases", {})) == ["alpha", "beta"],
               "readyz_without_key_details_every_database_when_configured_public", diag=repr(r))


def test_rate_limit():
    """Per-key token bucket: the default of limits applies, a key may set its own; 429 with an integer Retry-After."""
    cfg = json.loads(json.dumps(CONFIG))
    cfg["limits"] = {"key_rate_per_s": 1000, "key_burst": 1000}
    cfg["auth"]["api_keys"][0].update({"rate_per_s": 0.5, "burst": 2})
    with fixtures.serving(tap, cfg, "rate_limited_service_exits_0") as svc:
        got = [execute(svc, "alpha", bearer(KEY_A)) for _ in range(3)]
        tap.ok([r.status for r in got[:2]] == [200, 200], "key_within_its_burst_is_served", diag=repr(got))
        r = got[2]
        check_problem(r, 429, "rate-limited", "key_over_its_rate_gets_429_problem")
        retry = r.headers.get("Retry-After") or ""
        tap.ok(retry.isdigit() and 1 <= int(retry) <= 2, "rate_limited_answer_has_integer_retry_after",
               diag=repr(r.headers))
        r = execute(svc, "alpha", bearer(KEY_ALL))
        tap.eq(r.status, 200, "other_key_is_not_limited_by_the_first")
        r = svc.request("GET", "/healthz", headers=bearer(KEY_A))
        tap.eq(r.status, 200, "public_endpoints_are_not_rate_limited")
        time.sleep(int(retry or "2") + 0.1)
        r = execute(svc, "alpha", bearer(KEY_A))
        tap.eq(r.status, 200, "key_is_served_again_after_retry_after")
        text = svc.request("GET", "/metrics").text
        tap.ok(re.search(r"^text2sqld_http_rate_limited_total [1-9]", text, re.M) and
               'text2sqld_limit{limit="key_rate_per_s"} 1000' in text,
               "rate_limit_and_its_refusals_are_in_metrics", diag=text[-1500:])


def main():
    return fixtures.run_with_binary(tap, "auth_tests", test_service, test_public_readiness_details, test_rate_limit)


if __name__ == "__main__":
    sys.exit(main())

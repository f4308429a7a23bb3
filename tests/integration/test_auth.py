#!/usr/bin/env python3
"""test_auth.py - API-key authentication and per-database authorisation of
the real text2sqld binary.

With auth.api_keys configured: a request without a key, with a wrong key or
with another scheme gets a 401 problem with WWW-Authenticate: Bearer; the
"Bearer" scheme is case-insensitive; a key limited to database A gets 403
problems for database B (execute, schema, refresh) and sees only A in GET
/databases; a ["*"] key reaches every database; /healthz, /readyz and
/metrics need no key; and no key ever appears in the service's log (run at
log level debug).  Scopes: a key holds "query" unless its scopes say more; a
query key is served on every query route and gets 403 forbidden naming
"admin" on every administering one (the same for a foreign or missing
database), an admin key on both; a database the key may not use answers 404
like a missing one on every route.  Without keys, administering is refused
unless auth.allow_anonymous_writes.  A key whose digest is a dictionary
word's (tests/corpus/weak_keys.txt) is refused at start naming its path,
unless auth.development.  Uses two small SQLite files written by this test.
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
        {"name": "admin", "key_sha256": sha256_hex(KEY_ALL).upper(), "databases": ["*"], "scopes": ["query", "admin"]},
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
    check_problem(r, 403, "forbidden", "alpha_query_key_refresh_beta_gives_403_as_for_any_database")
    r = svc.request("POST", "/databases/alpha/refresh", headers=bearer(KEY_A))
    check_problem(r, 403, "forbidden", "alpha_query_key_may_not_refresh_alpha")

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


# --------------------------------------------------------------------------- scopes

KEY_ADM_A = "t2s-key-admin-alpha-%d-%s" % (os.getpid(), secrets.token_hex(12))
KEY_ONLY_ADM = "t2s-key-only-admin-%d-%s" % (os.getpid(), secrets.token_hex(12))
GEN_SQL = "SELECT count(*) FROM alpha_rows"


def scope_config(stub):
    return {
        "databases": CONFIG["databases"],
        "state": {"url": "sqlite://" + os.path.join(TMP, "scopes-state.sqlite")},
        "models": {"generate": {"base_url": stub.base_url, "model": "gen", "retries": 0}},
        "generate": {"cache_ttl_s": 0},
        "auth": {"api_keys": [
            {"name": "alpha-reader", "key_sha256": sha256_hex(KEY_A), "databases": ["alpha"]},
            {"name": "alpha-admin", "key_sha256": sha256_hex(KEY_ADM_A), "databases": ["alpha"],
             "scopes": ["query", "admin"]},
            {"name": "alpha-curator", "key_sha256": sha256_hex(KEY_ONLY_ADM), "databases": ["alpha"],
             "scopes": ["admin"]},
        ]},
        "log": {"level": "warn", "access": False},
    }


def query_routes(db, ids):
    """(name, method, path, body) of every route of the scope query, on database db."""
    return [
        ("databases_get", "GET", "/databases/%s" % db, None),
        ("execute", "POST", "/execute", {"database": db, "sql": "SELECT 1"}),
        ("link", "POST", "/link", {"database": db, "question": "which rows"}),
        ("evidence", "POST", "/evidence", {"database": db, "question": "which rows"}),
        ("describe", "POST", "/describe", {"database": db}),
        ("generate", "POST", "/generate", {"database": db, "question": "how many rows"}),
        ("query", "POST", "/query", {"database": db, "question": "how many rows"}),
        ("descriptions_get", "GET", "/databases/%s/descriptions" % db, None),
        ("examples_list", "GET", "/databases/%s/examples" % db, None),
        ("example_get", "GET", "/databases/%s/examples/%s" % (db, ids["example"]), None),
        ("feedback_wrong", "POST", "/feedback", {"database": db, "question": "q", "sql": "SELECT 1", "correct": False}),
    ]


def admin_routes(db, ids):
    """(name, method, path, body) of every request of the scope admin, on database db."""
    return [
        ("descriptions_put", "PUT", "/databases/%s/descriptions" % db,
         {"descriptions": [{"table": "alpha_rows", "text": "rows of alpha"}]}),
        ("examples_add", "POST", "/databases/%s/examples" % db, {"question": "how many?", "sql": GEN_SQL}),
        ("examples_delete", "DELETE", "/databases/%s/examples/%s" % (db, ids["spare"]), None),
        ("refresh", "POST", "/databases/%s/refresh" % db, None),
        ("feedback_list", "GET", "/feedback?database=%s" % db, None),
        ("feedback_correct", "POST", "/feedback", {"database": db, "question": "q", "sql": GEN_SQL, "correct": True}),
    ]


def on_database(path, body, db):
    """path and body of a request on database alpha, moved to database db."""
    return json.loads(re.sub(r"\balpha\b", db, json.dumps([path, body])))


def same_problem(a, b, names):
    """The two problems say the same once database names are blanked (no existence oracle)."""
    def norm(r):
        j = dict(r.json or {})
        j.pop("request_id", None)
        text = json.dumps(j, sort_keys=True)
        for n in names:
            text = text.replace(n, "X")
        return (r.status, text)
    return norm(a) == norm(b)


def check_scopes(svc):
    adm = bearer(KEY_ADM_A)
    r = svc.request("POST", "/databases/alpha/examples", json={"question": "kept", "sql": GEN_SQL}, headers=adm)
    ids = {"example": (r.json or {}).get("id")}
    fb = svc.request("POST", "/feedback", json={"database": "alpha", "question": "q", "sql": "SELECT 1",
                                                 "correct": False}, headers=bearer(KEY_A))
    r = svc.request("GET", "/feedback/%s" % (fb.json or {}).get("id"), headers=bearer(KEY_A))
    tap.eq(r.status, 200, "query_key_reads_a_feedback_entry")

    for who, key in (("query_key", KEY_A), ("admin_key", KEY_ADM_A)):
        for name, method, path, body in query_routes("alpha", ids):
            r = svc.request(method, path, json=body, headers=bearer(key), timeout=60)
            tap.ok(r.status in (200, 201), "%s_%s_on_its_database_is_served" % (who, name), diag=repr(r))
    for name, method, path, body in query_routes("alpha", ids):
        r = svc.request(method, path, json=body, headers=bearer(KEY_ONLY_ADM), timeout=60)
        tap.ok(fixtures.is_problem(r, 403, "forbidden") and (r.json or {}).get("required_scope") == "query",
               "admin_only_key_%s_gets_403_naming_query" % name, diag=repr(r))

    for name, method, path, body in admin_routes("alpha", {"spare": 999999}):
        per_db = {}
        for db in ("alpha", "beta", "gamma"):
            path_db, body_db = on_database(path, body, db)
            per_db[db] = svc.request(method, path_db, json=body_db, headers=bearer(KEY_A), timeout=60)
        r = per_db["alpha"]
        tap.ok(fixtures.is_problem(r, 403, "forbidden") and (r.json or {}).get("required_scope") == "admin" and
               "admin" in (r.json or {}).get("detail", ""), "query_key_%s_gets_403_naming_admin" % name, diag=repr(r))
        tap.ok(same_problem(per_db["beta"], per_db["gamma"], ("beta", "gamma")),
               "query_key_%s_foreign_and_missing_database_answer_alike" % name,
               diag=repr((per_db["beta"], per_db["gamma"])))

    for name, method, path, body in admin_routes("alpha", {"spare": None}):
        if name == "examples_delete":
            r = svc.request("POST", "/databases/alpha/examples", json={"question": "spare", "sql": "SELECT 2"}, headers=adm)
            path = "/databases/alpha/examples/%s" % (r.json or {}).get("id")
        r = svc.request(method, path, json=body, headers=adm, timeout=60)
        tap.ok(r.status in (200, 201), "admin_key_%s_on_its_database_is_served" % name, diag=repr(r))

    # A database the key may not use: 404 on every route, exactly as a missing one, for either scope.
    for key_name, key in (("query_key", KEY_A), ("admin_key", KEY_ADM_A)):
        for name, method, path, body in query_routes("alpha", ids) + admin_routes("alpha", {"spare": 1}):
            if key is KEY_A and (name, method) in [(n, m) for n, m, _p, _b in admin_routes("x", {"spare": 1})
                                                   if n != "feedback_correct"]:
                continue  # the scope answers first, the same for every database (checked above)
            got = []
            for db in ("beta", "gamma"):
                path_db, body_db = on_database(path, body, db)
                got.append(svc.request(method, path_db, json=body_db, headers=bearer(key), timeout=60))
            tap.ok(fixtures.is_problem(got[0], 404, "not-found") and same_problem(got[0], got[1], ("beta", "gamma")),
                   "%s_%s_on_a_foreign_database_is_404_like_a_missing_one" % (key_name, name), diag=repr(got))


def test_scopes():
    stub = fixtures.ModelStub()
    stub.rules([{"match": {"path": "/v1/chat/completions"}, "respond": {"content": "```sql\n%s\n```" % GEN_SQL}}])
    try:
        with fixtures.serving(tap, scope_config(stub), "scopes_service_exits_0") as svc:
            check_scopes(svc)
    finally:
        stub.close()


def test_anonymous_writes():
    """Without keys, administering is refused (403) unless the config opts in."""
    base = {"databases": CONFIG["databases"], "log": {"level": "warn", "access": False},
            "state": {"url": "sqlite://" + os.path.join(TMP, "anon-state.sqlite")}}
    put = {"descriptions": [{"table": "alpha_rows", "text": "rows of alpha"}]}
    with fixtures.serving(tap, base, "anonymous_service_exits_0") as svc:
        for name, method, path, body in admin_routes("alpha", {"spare": 1}):
            r = svc.request(method, path, json=body)
            tap.ok(fixtures.is_problem(r, 403, "forbidden") and (r.json or {}).get("required_scope") == "admin" and
                   "allow_anonymous_writes" in (r.json or {}).get("detail", ""),
                   "anonymous_%s_is_refused_without_opt_in" % name, diag=repr(r))
        r = execute(svc, "alpha", None)
        tap.eq(r.status, 200, "anonymous_query_is_served_without_keys")
        r = svc.request("GET", "/databases/alpha/descriptions")
        tap.ok(r.status == 200 and not (r.json or {}).get("overrides"), "refused_anonymous_write_changed_nothing",
               diag=repr(r))
    cfg = dict(base, auth={"allow_anonymous_writes": True})
    with fixtures.serving(tap, cfg, "anonymous_writes_service_exits_0") as svc:
        r = svc.request("PUT", "/databases/alpha/descriptions", json=put)
        tap.eq(r.status, 200, "anonymous_write_is_served_with_opt_in")
        r = svc.request("POST", "/databases/alpha/refresh")
        tap.eq(r.status, 200, "anonymous_refresh_is_served_with_opt_in")
    cfg = json.loads(json.dumps(CONFIG))
    cfg["auth"]["allow_anonymous_writes"] = True
    code, out = t2s.run_config_only(cfg, ["--check-config"])
    tap.ok(code == 2 and "auth.allow_anonymous_writes" in out, "anonymous_writes_with_api_keys_is_refused", diag=out[-300:])
    cfg = json.loads(json.dumps(CONFIG))
    cfg["auth"]["api_keys"][0]["scopes"] = ["query", "write"]
    code, out = t2s.run_config_only(cfg, ["--check-config"])
    tap.ok(code == 2 and "auth.api_keys[0].scopes[1]" in out, "unknown_scope_is_refused_by_path", diag=out[-300:])


# --------------------------------------------------------------------------- weak keys

def weak_keys():
    with open(os.path.join(t2s.SOURCE_ROOT, "tests", "corpus", "weak_keys.txt"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def test_weak_keys():
    """A key whose digest is a dictionary word's is refused at start by path, unless auth.development."""
    for word in weak_keys():
        cfg = json.loads(json.dumps(CONFIG))
        cfg["auth"]["api_keys"][1]["key_sha256"] = sha256_hex(word)
        code, out = t2s.run_config_only(cfg, ["--check-config"])
        tap.ok(code == 2 and "auth.api_keys[1].key_sha256" in out and "'%s'" % word not in out,
               "weak_key_%s_is_refused_naming_its_path" % re.sub(r"\W", "_", word), diag=out[-300:])
    cfg = json.loads(json.dumps(CONFIG))
    cfg["auth"]["api_keys"][1]["key_sha256"] = sha256_hex("test2")
    code, out = t2s.run_config_only(cfg)
    tap.ok(code == 2 and "auth.api_keys[1].key_sha256" in out and "openssl rand" in out,
           "service_with_weak_key_exits_2_at_start", diag=out[-300:])
    cfg["auth"]["development"] = True
    with fixtures.serving(tap, cfg, "development_service_exits_0") as svc:
        r = execute(svc, "beta", bearer("test2"))
        tap.eq(r.status, 200, "weak_key_is_accepted_with_development")
        tap.ok("auth.development" in svc.log_text(), "development_mode_is_warned_at_start", diag=svc.log_tail())


def main():
    return fixtures.run_with_binary(tap, "auth_tests", test_service, test_public_readiness_details, test_rate_limit,
                                    test_scopes, test_anonymous_writes, test_weak_keys)


if __name__ == "__main__":
    sys.exit(main())

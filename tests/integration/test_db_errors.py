#!/usr/bin/env python3
"""test_db_errors.py - a database the service cannot connect to never shows
a query key where it lives (issue 30, hole 5), against the real binary.

A PostgreSQL database is configured at a loopback port where nothing
listens, as a role whose name is distinctive; a SQLite database beside it
serves.  Covers:
  - /execute and /query on it answer 503 with a stable detail that names no
    host, port or role (the driver's "connection refused ... port N" does
    not reach the client);
  - GET /databases and /databases/{name} show the same stable error;
  - /readyz: a query key sees the stable error and no "detail"; an admin
    key sees the driver's reason (the port) as the database's "detail";
  - the log has the driver's reason ("database connect failed" with the
    database's name and the port).
The service is stopped with SIGTERM and must exit 0.
"""

import hashlib
import json
import os
import secrets
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402

tap = t2s.Tap()
TMP = fixtures.scratch_dir("t2s-db-errors-")
KEY_Q = "t2s-dberr-q-%d-%s" % (os.getpid(), secrets.token_hex(12))
KEY_ADMIN = "t2s-dberr-a-%d-%s" % (os.getpid(), secrets.token_hex(12))
DB = fixtures.write_sqlite(os.path.join(TMP, "alpha.sqlite"), fixtures.SMALL_CONCERT_SCHEMA,
                           fixtures.SMALL_CONCERT_ROWS)
DEAD_PORT = t2s.free_port()
ROLE = "zz_secret_role_%d" % os.getpid()
STABLE = "cannot connect to the database"


def config():
    return {"databases": [{"name": "alpha", "url": "sqlite://" + DB},
                          {"name": "gone", "url": "postgresql://%s@127.0.0.1:%d/shop" % (ROLE, DEAD_PORT)}],
            "state": {"url": "sqlite://" + os.path.join(TMP, "state.sqlite")},
            "auth": {"api_keys": [
                {"name": "reader", "key_sha256": hashlib.sha256(KEY_Q.encode()).hexdigest(), "databases": ["*"]},
                {"name": "operator", "key_sha256": hashlib.sha256(KEY_ADMIN.encode()).hexdigest(),
                 "databases": ["*"], "scopes": ["query", "admin"]}]},
            "log": {"level": "info", "access": False}}


def bearer(key):
    return {"Authorization": "Bearer " + key}


def leaks(text):
    """The parts of a connection's address found in text."""
    return [w for w in (str(DEAD_PORT), ROLE, "127.0.0.1", "Connection refused", "connection refused") if w in text]


def run():
    with fixtures.serving(tap, config(), "db_errors_service_exits_0") as svc:
        r = svc.request("POST", "/execute", json={"database": "gone", "sql": "SELECT 1"}, headers=bearer(KEY_Q))
        fixtures.check_problem(tap, r, 503, "unavailable", "execute_on_unreachable_database_is_503")
        tap.ok(STABLE in ((r.json or {}).get("detail") or ""), "execute_detail_is_the_stable_message", diag=r.text)
        tap.eq(leaks(r.text), [], "execute_problem_names_no_host_port_or_role")
        r = svc.request("POST", "/query", json={"database": "gone", "question": "How many singers?"},
                        headers=bearer(KEY_Q))
        tap.ok(r.status >= 500, "query_on_unreachable_database_fails", diag=r.text[:300])
        tap.eq(leaks(r.text), [], "query_problem_names_no_host_port_or_role")
        for path in ("/databases", "/databases/gone"):
            r = svc.request("GET", path, headers=bearer(KEY_Q))
            tap.eq(leaks(r.text), [], "%s_names_no_host_port_or_role" % path.strip("/").replace("/", "_"))
        r = svc.request("GET", "/readyz", headers=bearer(KEY_Q))
        gone = (((r.json or {}).get("checks") or {}).get("databases") or {}).get("gone") or {}
        tap.ok(gone.get("status") == "down" and STABLE in (gone.get("error") or "") and "detail" not in gone,
               "readyz_for_a_query_key_shows_the_stable_error_only", diag=r.text[:500])
        tap.eq(leaks(r.text), [], "readyz_for_a_query_key_names_no_host_port_or_role")
        r = svc.request("GET", "/readyz", headers=bearer(KEY_ADMIN))
        gone = (((r.json or {}).get("checks") or {}).get("databases") or {}).get("gone") or {}
        tap.ok(str(DEAD_PORT) in (gone.get("detail") or ""), "readyz_for_an_admin_key_shows_the_drivers_reason",
               diag=r.text[:500])
        r = svc.request("GET", "/readyz")
        tap.eq(leaks(r.text), [], "readyz_without_a_key_names_no_host_port_or_role")
        notes = [json.loads(line) for line in svc.log_text().splitlines()
                 if line.startswith("{") and "database connect failed" in line]
        tap.ok(any(n.get("database") == "gone" and str(DEAD_PORT) in (n.get("detail") or "") for n in notes),
               "log_has_the_drivers_reason_with_the_database_name", diag=repr(notes[:2]))


def main():
    return fixtures.run_guarded(tap, "db_errors_tests", run)


if __name__ == "__main__":
    sys.exit(main())

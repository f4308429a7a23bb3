#!/usr/bin/env python3
"""test_role_check.py - the PostgreSQL role a database is read through is
checked at start and on every refresh (TAP; issue 10, item 2).

With the real PostgreSQL of tests/lib/servers.sh (skipped without it), one
database is registered five times, each through another login role:
  reader      SELECT only                       -> serves;
  writer      may INSERT into public.t          -> not ready, "INSERT on table public.t";
  superuser   a superuser                       -> not ready, "superuser";
  files       member of pg_read_server_files    -> not ready, "pg_read_server_files";
  allowed     a superuser, allow_privileged_role -> serves.
A database that is not ready is down in /readyz (the service is degraded)
with the privilege in its error, and /execute on it is a 503 problem naming
the privilege while the data stays unchanged.  Revoking the privilege and
refreshing makes it serve; granting it again and refreshing withdraws the
published schema and it is not ready again.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import execute, is_problem  # noqa: E402
from t2s import pg_url  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
DB = "t2s_role_%d" % PID
WRITER = "t2s_writer_%d" % PID
SUPER = "t2s_super_%d" % PID
FILES = "t2s_files_%d" % PID

SETUP_SQL = """
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t VALUES (1, 'one'), (2, 'two');
GRANT CONNECT ON DATABASE {DB} TO t2s_reader, %(w)s, %(s)s, %(f)s;
GRANT SELECT ON t TO t2s_reader, %(w)s, %(f)s;
GRANT INSERT ON t TO %(w)s;
""" % {"w": WRITER, "s": SUPER, "f": FILES}


def db_check(svc, name):
    r = svc.request("GET", "/readyz")
    return r, ((r.json or {}).get("checks", {}).get("databases", {}).get(name) or {})


def check_start(svc):
    before = t2s.pg_checksum(DB)
    r = execute(svc, "reader", "SELECT count(*) FROM t")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "read_only_role_serves", diag=r.text[:300])
    cases = [("writer", "INSERT on table public.t"), ("superuser", "is a superuser"),
             ("files", "pg_read_server_files")]
    for name, words in cases:
        r = execute(svc, name, "SELECT count(*) FROM t")
        detail = (r.json or {}).get("detail", "")
        tap.ok(is_problem(r, 503, "unavailable") and words in detail and "allow_privileged_role" in detail,
               "%s_role_makes_execute_503_naming_the_privilege" % name, diag=r.text[:300])
        ready, check = db_check(svc, name)
        tap.ok(check.get("status") == "down" and words in check.get("error", ""),
               "%s_role_database_down_in_readyz_with_the_privilege" % name, diag=ready.text[:600])
        r = svc.request("GET", "/databases/%s" % name)
        tap.eq(r.status, 503, "%s_role_database_schema_not_served" % name)
    r = execute(svc, "allowed", "SELECT count(*) FROM t")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "superuser_with_allow_privileged_role_serves", diag=r.text[:300])
    ready, check = db_check(svc, "allowed")
    tap.eq(check.get("status"), "up", "allowed_privileged_database_up_in_readyz")
    tap.ok(ready.status == 200 and (ready.json or {}).get("status") == "degraded",
           "readyz_degraded_while_some_databases_are_not_ready", diag=ready.text[:600])
    tap.eq(t2s.pg_checksum(DB), before, "data_unchanged")


def check_refresh(svc):
    t2s.psql("REVOKE INSERT ON t FROM %s;" % WRITER, DB)
    r = svc.request("POST", "/databases/writer/refresh")
    tap.eq(r.status, 200, "refresh_after_revoke_answers_200")
    r = execute(svc, "writer", "SELECT count(*) FROM t")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "writer_serves_after_revoke_and_refresh", diag=r.text[:300])
    _, check = db_check(svc, "writer")
    tap.eq(check.get("status"), "up", "writer_up_in_readyz_after_revoke_and_refresh")

    t2s.psql("GRANT UPDATE ON t TO %s;" % WRITER, DB)
    r = svc.request("POST", "/databases/writer/refresh")
    tap.ok(is_problem(r, 503, "unavailable") and "UPDATE on table public.t" in (r.json or {}).get("detail", ""),
           "refresh_after_grant_update_is_503_naming_it", diag=r.text[:300])
    r = execute(svc, "writer", "SELECT count(*) FROM t")
    tap.ok(is_problem(r, 503, "unavailable"), "published_schema_withdrawn_after_grant_and_refresh", diag=r.text[:300])
    r = svc.request("GET", "/databases/writer")
    tap.eq(r.status, 503, "writer_schema_not_served_after_grant_and_refresh")
    _, check = db_check(svc, "writer")
    tap.ok(check.get("status") == "down" and "UPDATE" in check.get("error", ""),
           "writer_down_in_readyz_after_grant_and_refresh", diag=str(check))


def check_config():
    code, out = t2s.run_config_only({"databases": [{"name": "s", "url": "sqlite:///tmp/x.sqlite",
                                                    "allow_privileged_role": True}]}, ["--check-config"])
    tap.ok(code not in (0, None) and "allow_privileged_role" in out, "allow_privileged_role_refused_for_sqlite",
           diag=out[-300:])
    code, out = t2s.run_config_only({"databases": [{"name": "p", "url": "postgresql://x@127.0.0.1/x",
                                                    "allow_privileged_role": "yes"}]}, ["--check-config"])
    tap.ok(code not in (0, None) and "databases[0].allow_privileged_role" in out,
           "allow_privileged_role_must_be_a_boolean", diag=out[-300:])


def main():
    check_config()
    if not fixtures.have_pg():
        tap.skip("role_check", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        return tap.done()
    svc = None
    pg = fixtures.PgDatabases(tap)
    try:
        pg.create_role(WRITER)
        pg.create_role(SUPER, "LOGIN SUPERUSER")
        pg.create_role(FILES, setup_sql="GRANT pg_read_server_files TO %s;" % FILES)
        pg.create(DB, SETUP_SQL)
        dbs = [{"name": "reader", "url": pg_url(DB)},
               {"name": "writer", "url": pg_url(DB, WRITER)},
               {"name": "superuser", "url": pg_url(DB, SUPER)},
               {"name": "files", "url": pg_url(DB, FILES)},
               {"name": "allowed", "url": pg_url(DB, SUPER), "allow_privileged_role": True}]
        svc = t2s.Service({"databases": dbs, "log": {"level": "warn", "access": False}, "auth": {"allow_anonymous_writes": True}})
        svc.start(timeout=60)
        check_start(svc)
        check_refresh(svc)
        fixtures.stop_ok(tap, svc, "service_exits_0_on_sigterm")
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap, svc)
    finally:
        if svc is not None:
            svc.close()
        pg.drop_all()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

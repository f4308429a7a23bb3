#!/usr/bin/env python3
"""test_pool.py - the per-database connection pool on PostgreSQL (TAP).

With the real text2sqld binary ($T2S_BIN) and the real PostgreSQL server of
tests/lib/servers.sh (everything is skipped when T2S_TEST_PG_PORT is unset);
the service connects as the read-only role t2s_reader, admin checks go
through `postgres` via psql.  The database is created by this test.

  - A pooled connection is not poisoned.  With pool_size 1 (so every request
    uses the same pooled connection): set_config and advisory-lock calls are
    refused; then a SECURITY INVOKER function poison() (created by the admin,
    declared STABLE, so the guard admits it; EXECUTE granted to t2s_reader) that calls set_config('search_path', ...),
    set_config('statement_timeout', '0') and pg_advisory_lock(4242) runs
    through /execute (the parse-tree guard cannot see inside functions), and
    afterwards no t2s_reader backend holds an advisory lock (pg_locks, as the
    admin), the admin can take lock 4242, and the next /execute sees the
    search_path the executor sets (the database's schemas: public) and the
    service's own statement_timeout.
  - Exhaustion: catalog.pool_size 1 and pool_wait_ms 200 while a slow query
    holds the only connection: a concurrent /execute gets a 503 unavailable
    problem; the gauge text2sqld_db_pool_connections shows in_use 1 during
    the slow query and 0 after; once it finishes, queries work again.
  - A backend killed by the admin (pg_terminate_backend) between requests:
    the next /execute may fail once with 503, the one after succeeds (broken
    connections are discarded, not reused), several times in a row.
"""

import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import is_problem  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
DB = "t2s_pool_%d" % PID


def execute(svc, sql, timeout=60):
    return fixtures.execute(svc, "pool1", sql, timeout=timeout)


def admin(sql, dbname=DB):
    return t2s.psql(sql, dbname)


def reader_advisory_locks():
    return int(admin("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                     "WHERE l.locktype = 'advisory' AND a.usename = 't2s_reader' AND a.datname = '%s';"
                     % DB, "postgres")[0][0])


def reader_backends():
    return [int(r[0]) for r in admin("SELECT pid FROM pg_stat_activity WHERE usename = 't2s_reader' "
                                     "AND datname = '%s';" % DB, "postgres")]


def pool_gauge(svc, database, state):
    r = svc.request("GET", "/metrics")
    m = re.search(r'^text2sqld_db_pool_connections\{database="%s",state="%s"\} (\S+)$'
                  % (re.escape(database), state), r.text, re.M)
    return float(m.group(1)) if m else None


SETUP_SQL = """
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 10) g;
CREATE FUNCTION poison() RETURNS int LANGUAGE plpgsql STABLE SECURITY INVOKER AS $$
BEGIN
  PERFORM set_config('search_path', 'pg_temp', false);
  PERFORM set_config('statement_timeout', '0', false);
  PERFORM pg_advisory_lock(4242);
  RETURN 1;
END $$;
REVOKE TEMPORARY ON DATABASE {DB} FROM PUBLIC;
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT SELECT ON t TO t2s_reader;
GRANT EXECUTE ON FUNCTION poison() TO t2s_reader;
"""


def check_poisoning(svc):
    state_sql = ("SELECT current_setting('search_path'), current_setting('statement_timeout'), "
                 "pg_backend_pid(), current_user")
    base = execute(svc, state_sql)
    if not tap.eq(base.status, 200, "baseline_session_state_readable"):
        tap.diag(base.text[:300])
        return
    search_path, timeout, pid, user = base.json["rows"][0]
    tap.eq(user, "t2s_reader", "service_connects_as_the_reader_role")
    tap.eq(search_path, "public", "baseline_search_path_is_the_databases_schemas")

    for name, sql in [("set_config", "SELECT set_config('search_path', 'pg_temp', false)"),
                      ("advisory_lock", "SELECT pg_advisory_lock(4242)"),
                      ("advisory_xact_lock", "SELECT pg_advisory_xact_lock(4242)"),
                      ("try_advisory_lock_shared", "SELECT pg_try_advisory_lock_shared(4242)")]:
        r = execute(svc, sql)
        tap.ok(is_problem(r, 403, "sql-rejected"), "pool_size_1_refuses_%s" % name, diag=r.text[:300])
    tap.eq(reader_advisory_locks(), 0, "no_advisory_lock_after_refused_attempts")

    r = execute(svc, "SELECT poison()")
    tap.ok(r.status == 200 and r.json["rows"] == [[1]],
           "function_calling_set_config_and_advisory_lock_runs_guard_cannot_see_inside", diag=r.text[:300])
    held = reader_advisory_locks()
    deadline = time.monotonic() + 5
    while held and time.monotonic() < deadline:  # a lock left behind would stay forever
        time.sleep(0.1)
        held = reader_advisory_locks()
    tap.eq(held, 0, "no_advisory_lock_held_by_any_reader_backend_after_poison")
    got = admin("SELECT pg_try_advisory_lock(4242), pg_advisory_unlock(4242);")
    tap.eq(got[0][0], "t", "admin_can_take_lock_4242_after_poison")

    after = execute(svc, state_sql)
    if tap.eq(after.status, 200, "next_execute_after_poison_succeeds"):
        sp2, to2, pid2, _ = after.json["rows"][0]
        tap.eq(sp2, search_path, "search_path_back_to_default_after_poison")
        tap.eq(to2, timeout, "statement_timeout_back_to_the_service_value_after_poison")
        tap.diag("poisoned connection %s (backend %s before, %s after)" % (
            "reused after reset" if pid2 == pid else "replaced", pid, pid2))
    r = execute(svc, "SELECT count(*) FROM t")
    tap.ok(r.status == 200 and r.json["rows"] == [[10]], "unqualified_table_resolves_after_poison",
           diag=r.text[:300])
    # Twice more, to be sure the reset happens on every return to the pool.
    for i in range(2):
        execute(svc, "SELECT poison()")
    tap.eq(reader_advisory_locks(), 0, "no_advisory_lock_after_repeated_poison")
    r = execute(svc, "SELECT current_setting('search_path')")
    tap.ok(r.status == 200 and r.json["rows"] == [[search_path]], "search_path_default_after_repeated_poison",
           diag=r.text[:300])


# A statement that runs for a few seconds without pg_sleep (refused: VOLATILE).
SLOW_SQL = "SELECT count(*) * 0, 'slow' FROM generate_series(1, 20000000) g"


def check_exhaustion(svc):
    tap.eq(pool_gauge(svc, "pool1", "in_use"), 0.0, "pool_gauge_in_use_0_when_idle")
    slow = {}

    def run_slow():
        slow["resp"] = execute(svc, SLOW_SQL, timeout=120)

    th = threading.Thread(target=run_slow)
    th.start()
    try:
        # Wait until the slow statement is running in PostgreSQL.
        deadline = time.monotonic() + 30
        running = False
        while time.monotonic() < deadline and not running:
            running = admin("SELECT count(*) FROM pg_stat_activity WHERE usename = 't2s_reader' AND "
                            "datname = '%s' AND state = 'active';" % DB, "postgres")[0][0] != "0"
            if not running:
                time.sleep(0.05)
        if not tap.ok(running, "slow_query_started"):
            return
        tap.eq(pool_gauge(svc, "pool1", "in_use"), 1.0, "pool_gauge_in_use_1_during_slow_query")
        start = time.monotonic()
        r = execute(svc, "SELECT 1")
        waited = time.monotonic() - start
        tap.ok(is_problem(r, 503, "unavailable"), "concurrent_execute_on_exhausted_pool_is_503_unavailable",
               diag=r.text[:300])
        tap.ok(waited < 0.2 + 1.5, "exhausted_pool_503_comes_within_pool_wait_ms", diag="%.2f s" % waited)
        tap.ok((r.headers.get("Retry-After") or "").isdigit(), "exhausted_pool_503_carries_retry_after",
               diag=repr(r.headers))
        tap.ok("connection" in (r.json or {}).get("detail", "").lower() or
               "pool" in (r.json or {}).get("detail", "").lower(),
               "exhausted_pool_detail_says_no_connection_was_free", diag=r.text[:300])
        tap.ok(slow.get("resp") is None, "exhausted_pool_answers_while_the_slow_query_still_runs")
        r2 = svc.request("GET", "/healthz")
        tap.eq(r2.status, 200, "service_answers_healthz_while_pool_is_exhausted")
    finally:
        th.join(60)
    resp = slow.get("resp")
    tap.ok(resp is not None and resp.status == 200 and resp.json["rows"] == [[0, "slow"]],
           "slow_query_itself_completes", diag=resp.text[:300] if resp else "no response")
    r = execute(svc, "SELECT 2")
    tap.ok(r.status == 200 and r.json["rows"] == [[2]], "queries_work_after_the_slow_query_finished",
           diag=r.text[:300])
    tap.eq(pool_gauge(svc, "pool1", "in_use"), 0.0, "pool_gauge_in_use_back_to_0")
    tap.eq(pool_gauge(svc, "pool1", "idle"), 1.0, "pool_gauge_idle_1_after_use")


def check_killed_backend(svc):
    for round_no in range(1, 4):
        r = execute(svc, "SELECT pg_backend_pid()")
        if not tap.eq(r.status, 200, "round_%d_connection_in_pool" % round_no):
            continue
        victim = r.json["rows"][0][0]
        killed = admin("SELECT pg_terminate_backend(%d);" % victim, "postgres")[0][0]
        deadline = time.monotonic() + 10
        while victim in reader_backends() and time.monotonic() < deadline:
            time.sleep(0.05)
        tap.ok(killed == "t" and victim not in reader_backends(), "round_%d_admin_killed_the_pooled_backend" % round_no)
        first = execute(svc, "SELECT count(*) FROM t")
        tap.ok(first.status == 200 or is_problem(first, 503, "unavailable"),
               "round_%d_first_execute_after_kill_is_200_or_503" % round_no, diag=first.text[:300])
        second = execute(svc, "SELECT count(*), pg_backend_pid() FROM t")
        tap.ok(second.status == 200 and second.json["rows"][0][0] == 10,
               "round_%d_next_execute_after_kill_succeeds" % round_no, diag=second.text[:300])
        if second.status == 200:
            tap.ok(second.json["rows"][0][1] != victim, "round_%d_new_backend_replaces_the_killed_one" % round_no)
        tap.diag("round %d: first request after the kill answered %d" % (round_no, first.status))
    tap.ok(svc.request("GET", "/databases/pool1").status == 200, "catalog_still_serves_the_database_after_kills")


def main():
    if not fixtures.have_pg():
        tap.skip("pool", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        return tap.done()
    svc = None
    pg = fixtures.PgDatabases(tap)
    try:
        pg.create(DB, SETUP_SQL)
        svc = t2s.Service({"databases": [{"name": "pool1", "url": t2s.pg_url(DB)}],
                           "catalog": {"pool_size": 1, "pool_wait_ms": 200},
                           # The slow statement takes seconds, many more on a loaded machine: no 504 cuts it.
                           "execution": {"timeout_ms": 120000},
                           "log": {"level": "warn", "access": False}})
        svc.start(timeout=60)
        check_poisoning(svc)
        check_exhaustion(svc)
        check_killed_backend(svc)
        fixtures.stop_ok(tap, svc, "service_exits_0_on_sigterm")
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap, svc)
    finally:
        if svc:
            svc.close()
        pg.drop_all()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())

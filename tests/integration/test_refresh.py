#!/usr/bin/env python3
"""test_refresh.py - POST /databases/{name}/refresh against real databases (TAP).

With the real text2sqld binary ($T2S_BIN):
  - SQLite (always: a fixture written here; also a copy of Spider's
    concert_singer when ../shared/datasets is present): a refresh with no
    change answers changed false and the same hash; after a separate
    writable sqlite3 connection adds a table and a column, a refresh answers
    changed true with a new hash (previous_schema_hash = the old one), GET
    /databases/{name} and GET /databases show the new table and column, and
    /execute reads the new table; dropping it again restores the old hash.
  - PostgreSQL (skipped when T2S_TEST_PG_PORT is unset; database created by
    this test): a table created by the admin and granted to t2s_reader
    appears after a refresh, a table without the grant does not (and does
    not change the hash), a COMMENT ON change changes the hash, and a dropped
    table disappears with the hash back to its earlier value.
  - Refresh of an unknown database is a 404 problem; of an unreachable one
    (missing SQLite file, PostgreSQL on a closed port) a 503 problem; a
    missing file that appears later becomes "up" after a refresh.
  - Refreshes while queries run do not break them: /execute loops in
    threads (SQLite and PostgreSQL) during 5 refreshes that each follow a
    schema change; every query and every refresh succeeds.
"""

import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("T2S_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                                "tests", "lib"))
import t2s  # noqa: E402
import fixtures  # noqa: E402
from fixtures import have_pg, is_problem, write_sqlite  # noqa: E402
from t2s import qi  # noqa: E402

tap = t2s.Tap()
PID = os.getpid()
PGDB = "t2s_refresh_%d" % PID


def refresh(svc, name, timeout=60):
    return svc.request("POST", "/databases/%s/refresh" % name, timeout=timeout)


def model(svc, name):
    r = svc.request("GET", "/databases/%s" % name)
    return r.json if r.status == 200 else None


def listed(svc, name):
    for d in svc.request("GET", "/databases").json["databases"]:
        if d["name"] == name:
            return d
    return None


def table(m, name):
    for t in (m or {}).get("tables", []):
        if t["name"] == name:
            return t
    return None


def make_fixture(path):
    return write_sqlite(path, """
CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO person VALUES (1, 'Ada'), (2, 'Linus'), (3, 'Grace');
""")


# --------------------------------------------------------------------------- SQLite

def check_sqlite(svc, name, path, existing_table):
    prefix = "sqlite_%s" % name
    m0 = model(svc, name)
    if not tap.ok(m0 is not None, "%s_model_available" % prefix):
        return
    h0 = m0["schema_hash"]
    r = refresh(svc, name)
    ok = r.status == 200
    tap.ok(ok, "%s_refresh_without_change_answers_200" % prefix, diag=r.text[:300])
    if ok:
        b = r.json
        tap.eq((b.get("name"), b.get("changed"), b.get("schema_hash"), b.get("previous_schema_hash")),
               (name, False, h0, h0), "%s_refresh_without_change_reports_changed_false_same_hash" % prefix)
        tap.eq(b.get("tables"), len(m0["tables"]), "%s_refresh_reports_table_count" % prefix)
        tap.ok(isinstance(b.get("introspection_ms"), (int, float)) and b["introspection_ms"] >= 0,
               "%s_refresh_reports_introspection_ms" % prefix)

    write_sqlite(path, """
CREATE TABLE "Added_Table" (id INTEGER PRIMARY KEY, "Label" TEXT NOT NULL, ref INTEGER REFERENCES %s);
INSERT INTO "Added_Table" VALUES (1, 'first', NULL), (2, 'second', NULL);
ALTER TABLE %s ADD COLUMN "Extra_Col" TEXT;
""" % (qi(existing_table), qi(existing_table)))
    r = refresh(svc, name)
    ok = r.status == 200
    tap.ok(ok, "%s_refresh_after_change_answers_200" % prefix, diag=r.text[:300])
    h1 = r.json.get("schema_hash") if ok else None
    if ok:
        tap.ok(r.json.get("changed") is True and h1 != h0 and r.json.get("previous_schema_hash") == h0,
               "%s_refresh_after_change_reports_changed_true_new_hash" % prefix, diag=r.text[:300])
        tap.eq(r.json.get("tables"), len(m0["tables"]) + 1, "%s_refresh_counts_the_new_table" % prefix)
    m1 = model(svc, name)
    t = table(m1, "Added_Table")
    tap.ok(t is not None and [c["name"] for c in t["columns"]] == ["id", "Label", "ref"],
           "%s_new_table_and_columns_visible_with_their_case" % prefix, diag=repr(t)[:300])
    if t:
        tap.eq((t["row_count"], t["primary_key"]), (2, ["id"]), "%s_new_table_row_count_and_key" % prefix)
        tap.eq([fk["references"]["table"] for fk in t["foreign_keys"]], [existing_table],
               "%s_new_table_foreign_key_visible" % prefix)
    e = table(m1, existing_table)
    tap.ok(e is not None and e["columns"][-1]["name"] == "Extra_Col",
           "%s_new_column_visible_on_existing_table" % prefix, diag=repr(e)[:300])
    tap.eq((m1 or {}).get("schema_hash"), h1, "%s_get_shows_the_refreshed_hash" % prefix)
    d = listed(svc, name) or {}
    tap.eq((d.get("schema_hash"), d.get("tables"), d.get("status")), (h1, len(m0["tables"]) + 1, "up"),
           "%s_list_shows_the_refreshed_hash_and_count" % prefix)
    r = svc.request("POST", "/execute", json={"database": name,
                                              "sql": 'SELECT "Label" FROM "Added_Table" ORDER BY id'})
    tap.ok(r.status == 200 and r.json["rows"] == [["first"], ["second"]],
           "%s_execute_reads_the_new_table" % prefix, diag=r.text[:300])
    r = svc.request("POST", "/execute", json={"database": name,
                                              "sql": 'SELECT count("Extra_Col") FROM %s' % qi(existing_table)})
    tap.ok(r.status == 200 and r.json["rows"] == [[0]], "%s_execute_reads_the_new_column" % prefix,
           diag=r.text[:300])
    r = refresh(svc, name)
    tap.ok(r.status == 200 and r.json.get("changed") is False and r.json.get("schema_hash") == h1,
           "%s_second_refresh_reports_no_change" % prefix, diag=r.text[:300])

    write_sqlite(path, 'DROP TABLE "Added_Table";')
    r = refresh(svc, name)
    tap.ok(r.status == 200 and r.json.get("changed") is True and r.json.get("schema_hash") not in (h1, None),
           "%s_refresh_after_drop_reports_change" % prefix, diag=r.text[:300])
    tap.ok(table(model(svc, name), "Added_Table") is None, "%s_dropped_table_hidden_after_refresh" % prefix)
    r = svc.request("POST", "/execute", json={"database": name, "sql": 'SELECT * FROM "Added_Table"'})
    tap.ok(is_problem(r, 400, "sql-invalid"), "%s_execute_on_dropped_table_is_sql_invalid" % prefix,
           diag=r.text[:300])


# --------------------------------------------------------------------------- PostgreSQL

def admin(sql):
    return t2s.psql(sql, PGDB)


PG_SETUP_SQL = """
CREATE TABLE base (id int PRIMARY KEY, v text);
INSERT INTO base SELECT g, 'v' || g FROM generate_series(1, 20) g;
REVOKE TEMPORARY ON DATABASE {DB} FROM PUBLIC;
GRANT CONNECT ON DATABASE {DB} TO t2s_reader;
GRANT SELECT ON base TO t2s_reader;
"""


def check_pg(svc):
    m0 = model(svc, "pgr")
    if not tap.ok(m0 is not None, "pg_model_available"):
        return
    h0 = m0["schema_hash"]
    r = refresh(svc, "pgr")
    tap.ok(r.status == 200 and r.json.get("changed") is False and r.json.get("schema_hash") == h0,
           "pg_refresh_without_change_reports_changed_false", diag=r.text[:300])

    admin('CREATE TABLE "Fresh_Tbl" (id int PRIMARY KEY, base_id int REFERENCES base(id), "Note" text);'
          "INSERT INTO \"Fresh_Tbl\" VALUES (1, 1, 'n1'), (2, 2, 'n2');"
          'GRANT SELECT ON "Fresh_Tbl" TO t2s_reader;')
    r = refresh(svc, "pgr")
    ok = r.status == 200
    tap.ok(ok and r.json.get("changed") is True and r.json.get("schema_hash") != h0 and
           r.json.get("previous_schema_hash") == h0, "pg_refresh_after_create_reports_change", diag=r.text[:300])
    h1 = r.json.get("schema_hash") if ok else None
    t = table(model(svc, "pgr"), "Fresh_Tbl")
    tap.ok(t is not None and [c["name"] for c in t["columns"]] == ["id", "base_id", "Note"],
           "pg_created_table_visible_after_refresh", diag=repr(t)[:300])
    if t:
        tap.eq([(fk["columns"], fk["references"]["table"]) for fk in t["foreign_keys"]], [(["base_id"], "base")],
               "pg_created_table_foreign_key_visible")
    r = svc.request("POST", "/execute", json={"database": "pgr", "sql": 'SELECT "Note" FROM "Fresh_Tbl" ORDER BY id'})
    tap.ok(r.status == 200 and r.json["rows"] == [["n1"], ["n2"]], "pg_execute_reads_the_created_table",
           diag=r.text[:300])

    admin("CREATE TABLE not_granted (x int);")
    r = refresh(svc, "pgr")
    tap.ok(r.status == 200 and r.json.get("changed") is False and r.json.get("schema_hash") == h1,
           "pg_table_without_grant_does_not_change_the_model", diag=r.text[:300])
    tap.ok(table(model(svc, "pgr"), "not_granted") is None, "pg_table_without_grant_stays_hidden")

    admin("COMMENT ON TABLE base IS 'the base table';")
    r = refresh(svc, "pgr")
    ok = r.status == 200
    tap.ok(ok and r.json.get("changed") is True, "pg_comment_change_changes_the_hash", diag=r.text[:300])
    tap.eq((table(model(svc, "pgr"), "base") or {}).get("comment"), "the base table",
           "pg_new_comment_visible_after_refresh")
    admin("COMMENT ON TABLE base IS NULL;")
    r = refresh(svc, "pgr")
    tap.ok(r.status == 200 and r.json.get("schema_hash") == h1, "pg_removing_the_comment_restores_the_hash",
           diag=r.text[:300])

    admin('DROP TABLE "Fresh_Tbl";')
    r = refresh(svc, "pgr")
    tap.ok(r.status == 200 and r.json.get("changed") is True and r.json.get("schema_hash") == h0,
           "pg_refresh_after_drop_restores_the_original_hash", diag=r.text[:300])
    tap.ok(table(model(svc, "pgr"), "Fresh_Tbl") is None, "pg_dropped_table_hidden_after_refresh")


# --------------------------------------------------------------------------- errors, concurrency

def check_errors(svc, missing_path):
    r = refresh(svc, "no_such_db_%d" % PID)
    tap.ok(is_problem(r, 404, "not-found"), "refresh_unknown_database_is_404_problem", diag=r.text[:300])
    r = refresh(svc, "gone")
    tap.ok(is_problem(r, 503, "unavailable"), "refresh_missing_sqlite_file_is_503_problem", diag=r.text[:300])
    tap.eq((listed(svc, "gone") or {}).get("status"), "down", "missing_sqlite_file_listed_down")
    if have_pg():
        r = refresh(svc, "pgdown")
        tap.ok(is_problem(r, 503, "unavailable"), "refresh_postgres_on_closed_port_is_503_problem",
               diag=r.text[:300])
    r = svc.request("GET", "/databases/%s/refresh" % "gone")
    tap.ok(r.status in (404, 405), "get_on_refresh_route_is_not_allowed", diag=r.text[:300])
    # The file appears: a refresh brings the database up.
    make_fixture(missing_path)
    r = refresh(svc, "gone")
    tap.ok(r.status == 200 and r.json.get("tables") == 1, "refresh_after_the_file_appears_answers_200",
           diag=r.text[:300])
    d = listed(svc, "gone") or {}
    tap.ok(d.get("status") == "up" and "error" not in d, "database_up_after_successful_refresh", diag=repr(d))
    r = svc.request("POST", "/execute", json={"database": "gone", "sql": "SELECT count(*) FROM person"})
    tap.ok(r.status == 200 and r.json["rows"] == [[3]], "execute_works_on_the_recovered_database",
           diag=r.text[:300])


def check_concurrent(svc, fixture_path):
    stop = threading.Event()
    results = {"sqlite": [], "pg": []}

    # Each worker holds its lock around a request; the main thread takes all
    # of them while it changes the schema, so a writer's own file lock (a
    # separate matter, see test_execute.py) never meets a query, and
    # the refreshes themselves always run while queries are in flight.
    locks = {"sqlite": threading.Lock(), "pg": threading.Lock()}

    def loop(kind, database, sql, want):
        while not stop.is_set():
            with locks[kind]:
                try:
                    r = svc.request("POST", "/execute", json={"database": database, "sql": sql}, timeout=60)
                    ok = r.status == 200 and r.json["rows"] == want
                    results[kind].append(None if ok else "%d %s" % (r.status, r.text[:200]))
                except OSError as e:
                    results[kind].append("transport error: %s" % e)

    threads = [threading.Thread(target=loop, args=("sqlite", "fix", "SELECT count(*) FROM person", [[3]]))]
    if have_pg():
        threads.append(threading.Thread(target=loop, args=("pg", "pgr", "SELECT count(*) FROM base", [[20]])))
    for th in threads:
        th.start()
    refreshes = []
    try:
        for i in range(5):
            with locks["sqlite"], locks["pg"]:
                write_sqlite(fixture_path, "CREATE TABLE concurrent_%d (x INTEGER);" % i)
                if have_pg():
                    admin("CREATE TABLE concurrent_%d (x int); GRANT SELECT ON concurrent_%d TO t2s_reader;"
                          % (i, i))
            time.sleep(0.05)  # let the workers run again before refreshing
            for name in ["fix"] + (["pgr"] if have_pg() else []):
                r = refresh(svc, name)
                refreshes.append((name, r.status, r.json.get("changed") if r.json else None))
            time.sleep(0.1)
    finally:
        stop.set()
        for th in threads:
            th.join(60)
    tap.ok(all(s == 200 and c is True for _, s, c in refreshes),
           "five_refreshes_with_changes_during_queries_all_succeed", diag=repr(refreshes))
    for kind, res in results.items():
        if kind == "pg" and not have_pg():
            continue
        errors = [x for x in res if x]
        tap.ok(len(res) > 0 and not errors, "%s_queries_during_refreshes_all_succeed" % kind,
               diag="%d of %d failed: %s" % (len(errors), len(res), errors[:5]))
        tap.diag("%s: %d queries ran during the refreshes" % (kind, len(res)))
    m = model(svc, "fix")
    tap.ok(all(table(m, "concurrent_%d" % i) for i in range(5)), "all_tables_added_during_the_loop_visible")


# --------------------------------------------------------------------------- main

def main():
    tmp = fixtures.scratch_dir("t2s-refresh-")
    svc = None
    pg = have_pg()
    pgdbs = fixtures.PgDatabases(tap)
    try:
        fixture = make_fixture(os.path.join(tmp, "fixture.sqlite"))
        missing = os.path.join(tmp, "appears_later.sqlite")
        dbs = [{"name": "fix", "url": "sqlite://" + fixture},
               {"name": "gone", "url": "sqlite://" + missing}]
        spider_src = t2s.spider_db_path("concert_singer")
        spider_copy = None
        if spider_src:
            spider_copy = os.path.join(tmp, "concert_singer.sqlite")
            shutil.copyfile(spider_src, spider_copy)
            dbs.append({"name": "cs_copy", "url": "sqlite://" + spider_copy})
        if pg:
            dbs.append({"name": "pgr", "url": pgdbs.create(PGDB, PG_SETUP_SQL)})
            dbs.append({"name": "pgdown", "url": "postgresql://t2s_reader@127.0.0.1:%d/x" % t2s.free_port()})
        svc = t2s.Service({"databases": dbs, "catalog": {"connect_timeout_s": 3},
                           "auth": {"allow_anonymous_writes": True}, "log": {"level": "warn", "access": False}})
        svc.start(timeout=60)

        check_sqlite(svc, "fix", fixture, "person")
        if spider_copy:
            check_sqlite(svc, "cs_copy", spider_copy, "singer")
        else:
            tap.skip("sqlite_spider_copy_refresh", "no Spider data (../shared/datasets)")
        if pg:
            check_pg(svc)
        else:
            tap.skip("pg_refresh", "no PostgreSQL (T2S_TEST_PG_PORT unset)")
        check_errors(svc, missing)
        check_concurrent(svc, fixture)
        fixtures.stop_ok(tap, svc, "service_exits_0_on_sigterm")
    except Exception:  # noqa: BLE001 - report and fail, then clean up
        fixtures.report_exception(tap, svc)
    finally:
        if svc:
            svc.close()
        pgdbs.drop_all()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
